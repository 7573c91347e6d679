"""The all-databases overview (`GET /api/v1/databases`) and the health findings (`GET /api/v1/health/schema`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from idemdash.dashboard.schemas.common import Answer, Query
from idemdash.dashboard.schemas.examples import AS_OF, RUNNING_PURGE, without_pacing
from idemdash.dashboard.schemas.overview import LastPurge

# what a database that answered adds to its row (absent from the row of one that did not)
NUMBERS = (
    "stuck",
    "needs_review",
    "processing",
    "outbox_pending",
    "outbox_lag_seconds",
    "failed",
    "last_purge",
    "outbox_poison",
    "outbox_poison_oldest_seconds",
)


class DatabaseItem(Answer):
    name: str = Field(description="The database's name, as IDEMDASH_CONFIG lists it.")
    database: str = Field(description="Where it is: host:port/database (never the password).")
    environment: str | None = Field(description="Its IDEMDASH_ENVIRONMENT, or null.")
    reachable: bool
    profile: str = Field(
        description="Whose tables it holds (its profile). Every profile answers the same numbers, "
        "each by its library's own meaning (/api/v1/db/<name>/tables has every state); "
        "a number the library does not record is null."
    )
    problem: str | None = Field(description="Why there are no numbers: the cause and its fix; null when it answered.")
    answered_ms: float | None = Field(description="How long it took to answer, in milliseconds.")
    pending: bool = Field(
        description="Not answered yet: the background refresh has not heard from it since "
        "this worker started (reachable false, problem null, no numbers)."
    )
    asking: bool = Field(description="The refresh is asking it right now (its row is the previous answer).")
    as_of: datetime | None = Field(description="When this row's answer (or failure) came; null while pending.")
    age_seconds: float | None = Field(description="How old this row is, in seconds; null while pending.")
    failures: int = Field(
        description="Asks in a row that failed: it is asked again after twice "
        "IDEMDASH_FLEET_REFRESH_SECONDS, four times, … up to 5 minutes."
    )
    next_ask_at: datetime | None = Field(description="When the refresh asks it again; null while asking.")
    fleet: str | None = Field(
        None, description="The [fleets.<name>] it is a member of; null for a [databases.<name>] table."
    )
    attention: list[Literal["unreachable", "stuck_keys", "outbox_lag", "purge_failed"]] = Field(
        default_factory=list,
        description="Why it needs a look, worst first: unreachable (its last ask failed), "
        "stuck_keys, outbox_lag (oldest pending outbox row 600 s or older), purge_failed (its newest purge run "
        "failed); empty when fine or not answered yet. Rows are sorted by it (see items).",
    )
    stuck: int | None = Field(
        None,
        description="Stuck work: keys, or a library's rows in its stuck state, over every "
        "table that records it; null when none does (only when it answered).",
    )
    needs_review: int | None = Field(
        None,
        description="Keys held for review by an operator; null where the profile has none (only when it answered).",
    )
    processing: int | None = Field(
        None,
        description="Work someone holds now (processing keys, a library's rows in "
        "progress); null when not recorded (only when it answered).",
    )
    outbox_pending: int | None = Field(
        None, description="Pending outbox rows; null when the profile has no outbox (only when it answered)."
    )
    outbox_lag_seconds: float | None = Field(
        None,
        description="Age of the oldest pending outbox row that is not "
        "likely poison (the reference tables: fewer than 3 "
        "delivery attempts), null when none is pending or its "
        "table records no time (only when it answered).",
    )
    outbox_poison: int | None = Field(
        None,
        description="Likely poison outbox rows (pending with 3 or more delivery "
        "attempts), counted apart from the lag; null where the profile "
        "does not record them (only when it answered).",
    )
    outbox_poison_oldest_seconds: float | None = Field(
        None,
        description="Age of the oldest likely poison outbox row; "
        "null when there is none or it is not "
        "recorded (only when it answered).",
    )
    failed: int | None = Field(
        None,
        description="Rows given up on, as the profile counts them (failed keys, parked "
        "or dead-lettered messages); null when not recorded (only when it "
        "answered).",
    )
    last_purge: LastPurge | None = Field(
        None, description="The newest purge run, null when none ran (only when it answered)."
    )

    @model_serializer(mode="wrap")
    # unannotated: the schema stays the fields
    def _numbers_only_when_answered(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        return {name: value for name, value in data.items() if name not in NUMBERS or name in self.model_fields_set}


class Databases(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {
                            "name": "billing",
                            "database": "billing-db.internal:5432/billing",
                            "environment": "production",
                            "reachable": False,
                            "profile": "reference",
                            "problem": "connection refused by billing-db.internal port "
                            "5432: no PostgreSQL is "
                            "listening there. Check the host and port in the url of "
                            "[databases.billing] in IDEMDASH_CONFIG (/etc/idemdash/databases.toml), "
                            "and that the server is running.",
                            "answered_ms": None,
                            "pending": False,
                            "asking": False,
                            "as_of": AS_OF,
                            "age_seconds": 12.0,
                            "failures": 3,
                            "next_ask_at": AS_OF,
                            "fleet": None,
                            "attention": ["unreachable"],
                        },
                        {
                            "name": "orders",
                            "database": "orders-db.internal:5432/orders",
                            "environment": "production",
                            "reachable": True,
                            "profile": "reference",
                            "problem": None,
                            "answered_ms": 9.376822,
                            "pending": False,
                            "asking": False,
                            "as_of": AS_OF,
                            "age_seconds": 4.2,
                            "failures": 0,
                            "next_ask_at": AS_OF,
                            "fleet": None,
                            "attention": ["stuck_keys", "outbox_lag"],
                            "stuck": 13,
                            "needs_review": 0,
                            "processing": 14,
                            "outbox_pending": 2,
                            "outbox_lag_seconds": 10800.285588,
                            "outbox_poison": 0,
                            "outbox_poison_oldest_seconds": None,
                            "failed": 3,
                            "last_purge": without_pacing(RUNNING_PURGE),
                        },
                        {
                            "name": "ledger",
                            "database": "ledger-db.internal:5432/ledger",
                            "environment": "production",
                            "reachable": False,
                            "profile": "reference",
                            "problem": None,
                            "answered_ms": None,
                            "pending": True,
                            "asking": True,
                            "as_of": None,
                            "age_seconds": None,
                            "failures": 0,
                            "next_ask_at": None,
                            "fleet": None,
                            "attention": [],
                        },
                    ],
                    "next_cursor": None,
                    "as_of": AS_OF,
                }
            ]
        },
    )

    items: list[DatabaseItem] = Field(
        description="Every database of IDEMDASH_CONFIG the filters keep, worst first: "
        "by the first reason in attention (unreachable, stuck_keys, outbox_lag, "
        "purge_failed), then more failed asks, more stuck keys and an older outbox row "
        "first; rows needing no attention (fine, or not answered yet) by name."
    )
    next_cursor: None = Field(description="Always null: every database is in one answer.")
    as_of: datetime


class DatabasesQuery(Query):
    fleet: str | None = Field(
        None,
        pattern=r"^(-|[a-z0-9][a-z0-9_-]{0,62})$",
        description="Only the members of this [fleets.<name>]; '-' for the databases of "
        "[databases.<name>] tables. 404 when there is no such fleet.",
    )
    environment: str | None = Field(
        None,
        pattern=r"^\w[\w .+/-]{0,39}$",
        description="Only databases whose environment (its name, without the colour) is "
        "this. 404 when no database has it.",
    )
    attention: bool = Field(False, description="1: only the databases that need attention (a non-empty attention).")


class FindingKey(Answer):
    scope: str
    key: str


class Finding(Answer):
    id: str = Field(description="Stable per finding: migrations, table.<role>, index.<advice>, session.<pid>, …")
    status: Literal["ok", "warn", "fail"]
    title: str
    detail: str
    fix_sql: str | None = Field(description="The SQL that fixes it (shown, never run), or null.")
    fix: str | None = Field(description="A setting or command that fixes it, when the fix is not SQL.")
    keys: list[FindingKey] = Field(
        description="The idempotency keys the finding is about (an advisory lock's guarded key); empty otherwise."
    )


class HealthCounts(Answer):
    fail: int
    warn: int
    ok: int


class Health(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "status": "warn",
                    "counts": {"fail": 0, "warn": 1, "ok": 14},
                    "items": [
                        {
                            "id": "migrations",
                            "status": "ok",
                            "title": "idemdash's schema is up to date",
                            "detail": "8 migrations applied, the latest 0008_purge_latency_pacing.",
                            "fix_sql": None,
                            "fix": None,
                            "keys": [],
                        },
                        {
                            "id": "retention.outbox",
                            "status": "warn",
                            "title": "Published outbox rows are kept for ever",
                            "detail": "IDEMDASH_OUTBOX_RETENTION_DAYS is 0, so no purge deletes published rows: "
                            "2,140,311 are kept.",
                            "fix_sql": None,
                            "fix": "IDEMDASH_OUTBOX_RETENTION_DAYS=7",
                            "keys": [],
                        },
                    ],
                    "next_cursor": None,
                }
            ]
        },
    )

    status: Literal["ok", "warn", "fail"] = Field(description="The worst finding's status.")
    counts: HealthCounts
    items: list[Finding] = Field(description="Every finding, in the order the checks ran.")
    next_cursor: None = Field(description="Always null: every finding is in one answer.")
