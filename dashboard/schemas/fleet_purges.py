"""The purges of every database (`GET /api/v1/databases/purges`): each database's tables, their last purge run and
their failures, worst first, as the all-databases background refresh last found them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import Answer, Name, Query
from idemdash.dashboard.schemas.examples import AS_OF, PURGE_RUN, without_pacing
from idemdash.dashboard.schemas.overview import LastPurge

# worst first: the order of the items
FleetPurgeState = Literal[
    "failing", "failed_recently", "unreachable", "purges_unknown", "pending", "never_purged", "ok"
]


class FleetPurgesQuery(Query):
    fleet: Name | None = Field(
        None,
        description="Only the members of this fleet ([fleets.<name>] of "
        "IDEMDASH_CONFIG): the databases named <fleet>/<database>.",
    )


class FleetPurgeItem(Answer):
    database: str = Field(
        description="The database's name, as IDEMDASH_CONFIG lists it (<fleet>/<database> for a fleet's member)."
    )
    fleet: str | None = Field(description="The fleet it belongs to, or null.")
    table: str | None = Field(
        description="The table purged (keys, inbox, outbox; schema.table for another library's "
        "table); null on the one row of a database with no table to show "
        "(not answered, unreachable, never purged)."
    )
    state: FleetPurgeState = Field(
        description="failing: its last run failed; failed_recently: a run failed in the last 24 hours, the last one "
        "did not; unreachable: the database could not be asked (problem says why); purges_unknown: it "
        "answered but its purge history could not be read (problem says why); pending: not asked yet; "
        "never_purged: no purge ever ran there; ok. The items come in this order, then by name."
    )
    last_run: LastPurge | None = Field(description="The table's latest run of any kind, or null.")
    failures_24h: int | None = Field(
        description="The table's runs that failed in the last 24 hours; null without a table."
    )
    last_success_at: datetime | None = Field(
        description="When the table's latest real purge that succeeded finished, or null."
    )
    problem: str | None = Field(
        description="Why the database, or its purge history, could not be read: the cause and its fix."
    )
    as_of: datetime | None = Field(
        description="When the background refresh got this answer (or failure); null while pending."
    )
    age_seconds: float | None = Field(description="How old the row is, in seconds; null while pending.")
    url: str = Field(description="That database's own purges page.")


class FleetPurges(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {
                            "database": "shop/shop_eu",
                            "fleet": "shop",
                            "table": "keys",
                            "state": "failing",
                            "last_run": without_pacing(PURGE_RUN)
                            | {
                                "outcome": "failed",
                                "error": "canceling statement due to statement timeout",
                                "rows_deleted": 0,
                            },
                            "failures_24h": 3,
                            "last_success_at": "2026-11-23T20:48:48.201660+00:00",
                            "problem": None,
                            "as_of": AS_OF,
                            "age_seconds": 4.2,
                            "url": "/db/shop/shop_eu/purges",
                        },
                        {
                            "database": "billing",
                            "fleet": None,
                            "table": None,
                            "state": "unreachable",
                            "last_run": None,
                            "failures_24h": None,
                            "last_success_at": None,
                            "problem": "connection refused by billing-db.internal port 5432: no PostgreSQL is "
                            "listening there.",
                            "as_of": AS_OF,
                            "age_seconds": 12.0,
                            "url": "/db/billing/purges",
                        },
                        {
                            "database": "orders",
                            "fleet": None,
                            "table": "keys",
                            "state": "ok",
                            "last_run": without_pacing(PURGE_RUN),
                            "failures_24h": 0,
                            "last_success_at": "2026-11-24T20:48:48.201660+00:00",
                            "problem": None,
                            "as_of": AS_OF,
                            "age_seconds": 4.2,
                            "url": "/db/orders/purges",
                        },
                    ],
                    "next_cursor": None,
                    "as_of": AS_OF,
                }
            ]
        },
    )

    items: list[FleetPurgeItem] = Field(
        description="One per database and table, worst first (see state), then by database and table."
    )
    next_cursor: None = Field(description="Always null: every database is in one answer.")
    as_of: datetime
