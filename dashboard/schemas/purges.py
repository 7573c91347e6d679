"""The purges: the history and each table's retention and schedule (`GET /api/v1/purges`), starting a run
(`POST /api/v1/purges/run`) and cancelling one (`POST /api/v1/purges/{run_id}/cancel`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, StrictBool, WithJsonSchema

from idemdash.core.statuses import PartitionAction, PurgeOutcome
from idemdash.dashboard.schemas.common import (
    BLANK,
    CURSOR_TEXT,
    NO_NUL,
    Answer,
    Body,
    Error,
    Limit,
    Name,
    PositiveInt,
    Query,
    cursor_of,
)
from idemdash.dashboard.schemas.examples import ACTOR, PURGE_RUN, RUNNING_PURGE

PurgesCursor = Annotated[str, CURSOR_TEXT, cursor_of("purges")]

# the tables a purge empties: the reference tables' (jobs/purge_run.py TABLES), or on a database of another
# library's profile the roles of its purgeable tables (dashboard/purge_tables.py); a name the database has no purge
# for is a 400 naming those it has. How a run ends ('running' until it does; the CHECK constraint of
# idemdash.purge_run, jobs/purge_run.py OUTCOMES): tests/test_purges_page.py holds them together
REFERENCE_TABLES = ("keys", "inbox", "outbox")
PURGE_TABLE_FORMAT = "idemdash-purge-table"
PurgeTable = Annotated[
    str,
    Field(pattern=r"^[a-z][a-z_]{0,39}$"),
    WithJsonSchema(
        {
            "type": "string",
            "format": PURGE_TABLE_FORMAT,
            "pattern": r"^[a-z][a-z_]{0,39}$",
            "examples": list(REFERENCE_TABLES),
            "description": "One of the tables GET /api/v1/purges lists under tables: keys, inbox or outbox; on a "
            "database of "
            "another library's profile, the role of one of its purgeable tables (outbox, inbox, keys, "
            "archive). Another name is a 400 naming those the database has.",
        }
    ),
]


class PurgesQuery(Query):
    table: PurgeTable | None = Field(None, description="Only runs of this table.")
    run_id: PositiveInt | None = Field(None, description="Only this run.")
    outcome: PurgeOutcome | None = Field(None, description="Only runs that ended so (running: still in progress).")
    started_by: Name | None = Field(
        None, description="Only runs started by this person, or by 'scheduler' (the whole name)."
    )
    cursor: PurgesCursor | None = None
    limit: Limit = 50


class PurgesPageQuery(PurgesQuery):
    """The page's own parameter besides: the run just started there (0: started, its id not known yet)."""

    started: int | None = Field(None, ge=0, le=2**62)


class PurgeRun(Answer):
    run_id: int
    table_name: str = Field(description="keys, inbox or outbox; schema.table for a table of another library's profile.")
    started_at: datetime
    finished_at: datetime | None
    batches: int
    rows_deleted: int = Field(description="Rows deleted (a dry run: rows it would delete).")
    dry_run: bool
    outcome: PurgeOutcome
    error: str | None
    started_by: str
    duration_seconds: float | None
    method: str | None = Field(
        description="due_index: the batches read the due rows through an index, in the order they became due; "
        "heap: the table was mostly due and they read it page by page, each page once; "
        "primary_key: they walked the primary key; null for runs before it was recorded."
    )
    partitions_dropped: int
    cancel_requested_by: str | None = Field(description="Who asked the run to stop after its current batch.")
    latency_budget: float | None = Field(
        description="IDEMDASH_PURGE_LATENCY_BUDGET when it ran: how much longer the application's statements "
        "could wait for the WAL during batches than between them. This and the eight fields after it "
        "are null when the run never watched the application (a dry run, one batch, the budget off)."
    )
    probe_baseline_ms: float | None = Field(
        description="How long the application's statements that waited for the WAL (or for the purge's locks) had "
        "been running, between batches (ms; 90th percentile over the looks in which the application "
        "ran a statement); null when it never did."
    )
    probe_p99_ms: float | None = Field(description="The same while batches ran (ms).")
    probes: int | None = Field(description="Looks taken at the application's backends (pg_stat_activity).")
    backoffs: int | None = Field(
        description="Times the run halved its duty cycle or batch for the application's waits (lock_backoffs included)."
    )
    final_batch_size: int | None = Field(description="The batch size it ended at.")
    final_duty_cycle: float | None = Field(description="The duty cycle (percent) it ended at.")
    app_backends: int | None = Field(
        description="The most application statements it saw running at once; 0: nobody else used the database, "
        "so it never slowed down (null for runs before it was recorded)."
    )
    lock_backoffs: int | None = Field(
        description="Of the backoffs, those for an application statement waiting on a lock the purge held."
    )


class PartitionRecord(Answer):
    partition: str = Field(description="schema.name of the partition.")
    action: PartitionAction
    rows: int | None
    from_: datetime | None = Field(alias="from", description="The partition's lower bound (null: MINVALUE).")
    to: datetime
    detail: str | None


class HistoryRun(PurgeRun):
    partitions: list[PartitionRecord] = Field(
        description="What the run did with whole partitions of a table partitioned by time."
    )


class TableStatus(Answer):
    table: PurgeTable
    relation: str = Field(description="schema.table, as configured.")
    deletes: str = Field(description="What a purge of this table deletes.")
    retention: str
    retention_days: int | None = Field(description="null: the keys' own expires_at decides.")
    schedule: str | None = Field(description="The crontab line (UTC), 'off', or null when not configured.")
    next_run_at: datetime | None
    last_run: PurgeRun | None
    last_success_at: datetime | None
    last_dry_run: PurgeRun | None
    running: list[PurgeRun]


class PurgeHistory(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [{**RUNNING_PURGE, "partitions": []}, {**PURGE_RUN, "partitions": []}],
                    "next_cursor": "WyIyMDI2LTExLTI0VDIwOjQ3OjQ4LjIwMTY2MCswMDowMCIsMV0",
                    "as_of": "2026-11-24T21:47:48.675476+00:00",
                    "running": [RUNNING_PURGE],
                    "tables": [
                        {
                            "table": "keys",
                            "relation": "app.idempotency_request",
                            "deletes": "Terminal idempotency keys (succeeded, failed_final) whose expires_at has "
                            "passed; never "
                            "processing or failed_retryable keys.",
                            "retention": "each key's own expires_at (the application sets it when it claims the key)",
                            "retention_days": None,
                            "schedule": "*/15 * * * *",
                            "next_run_at": "2026-11-24T22:00:00+00:00",
                            "last_run": PURGE_RUN,
                            "last_success_at": PURGE_RUN["finished_at"],
                            "last_dry_run": None,
                            "running": [],
                        },
                        {
                            "table": "outbox",
                            "relation": "app.outbox_event",
                            "deletes": "Published outbox rows whose published_at is older than the retention; never "
                            "pending rows.",
                            "retention": "7 days after published_at",
                            "retention_days": 7,
                            "schedule": "37 * * * *",
                            "next_run_at": "2026-11-24T22:37:00+00:00",
                            "last_run": RUNNING_PURGE,
                            "last_success_at": None,
                            "last_dry_run": None,
                            "running": [RUNNING_PURGE],
                        },
                    ],
                }
            ]
        },
    )

    items: list[HistoryRun]
    next_cursor: str | None
    as_of: datetime
    running: list[PurgeRun]
    tables: list[TableStatus]


class RunBody(Body):
    table: PurgeTable = Field(description="The table to purge.")
    dry_run: StrictBool = Field(description="true counts what would go; false deletes it.")


class RunStarted(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "run_id": 4,
                    "table": "inbox",
                    "dry_run": True,
                    "outcome": "running",
                    "status_url": "/api/v1/purges?run_id=4",
                }
            ]
        },
    )

    run_id: int | None = Field(description="null: the run had no id yet after 10 s; the history shows it once it has.")
    table: PurgeTable
    dry_run: bool
    outcome: PurgeOutcome
    status_url: str = Field(description="Where to follow the run (also the Location header).")


class RunConflict(Error):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "error": "a purge of outbox is already running, so this one was not started (recorded as run 5, "
                    "outcome "
                    "skipped): another purge of this table is running. Wait for the running one to finish.",
                    "run_id": 5,
                    "outcome": "skipped",
                    "status_url": "/api/v1/purges?run_id=5",
                }
            ]
        },
    )

    run_id: int = Field(description="The skipped run, as recorded.")
    outcome: PurgeOutcome
    status_url: str


def _trimmed(value: str) -> str:
    return value.strip(BLANK)


class CancelBody(Body):
    reason: Annotated[str, Field(max_length=2000, pattern=NO_NUL), AfterValidator(_trimmed)] | None = Field(
        None, description="Why, for the audit log (optional)."
    )


class CancelRequested(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "run_id": 3,
                    "table": "outbox",
                    "cancel_requested_by": ACTOR,
                    "cancel_requested_at": "2026-11-24T21:47:48.623597+00:00",
                    "audit_id": 18,
                    "status_url": "/api/v1/purges?run_id=3",
                }
            ]
        },
    )

    run_id: int
    table: str
    cancel_requested_by: str
    cancel_requested_at: datetime
    audit_id: int
    status_url: str = Field(description="Where to follow the run: it ends cancelled after its current batch.")
