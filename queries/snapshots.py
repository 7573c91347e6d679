"""Metric snapshots: the overview's headline numbers recorded every minute, so pages can draw trends
without scanning the application tables.

The numbers come from ``queries.overview``'s own functions, so a snapshot and
the overview can never disagree about what "stuck" or "lag" means; the counts
the rollup job precomputes (by status and window, inbox volume) are taken from
it while fresh instead of being counted a second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated

import psycopg
from pydantic import Field

from idemdash.core.settings import Settings
from idemdash.queries import Tables, overview, rollups, statement
from idemdash.queries.health import database_now
from idemdash.queries.transactions import select_all, select_one


@dataclass(frozen=True)
class Snapshot:
    taken_at: datetime
    stuck_keys: int
    processing_keys: int
    failed_retryable_keys: int
    failed_final_keys_24h: int
    outbox_pending: int
    outbox_lag_seconds: float | None
    inbox_rows_24h: int
    rows_purged: int
    # what happened since the previous snapshot (None: not counted, in snapshots from before it was recorded or
    # when counting took longer than the statement timeout)
    interval_seconds: float | None = None
    claims: int | None = None
    completions: int | None = None
    failures: int | None = None


@dataclass(frozen=True)
class KeyChanges:
    """Keys claimed, completed and failed in an interval, operators' decisions left out (count_key_changes_between)."""

    claims: int
    completions: int
    failures: int


# One point of a trend line: one snapshot, or a bucket of consecutive ones when there are many. (A comment, not a
# docstring: the API documents the row, and a dataclass's docstring would become its schema's description.)
@dataclass(frozen=True)
class TrendPoint:
    taken_at: Annotated[datetime, Field(description="The first snapshot the point stands for.")]
    until: Annotated[datetime, Field(description="The last snapshot the point stands for.")]
    snapshots: Annotated[int, Field(description="How many consecutive snapshots the point merges.")]
    stuck_keys: int
    outbox_pending: int
    outbox_lag_seconds: float | None
    rows_purged: int
    interval_seconds: Annotated[
        float | None,
        Field(
            description="The seconds the point's claims, completions and failures "
            "cover (its snapshots' intervals); null when not counted."
        ),
    ]
    claims: Annotated[
        int | None, Field(description="Keys claimed in those seconds (definitions.trends.points.claims).")
    ]
    completions: Annotated[int | None, Field(description="Keys that became succeeded in those seconds.")]
    failures: Annotated[
        int | None, Field(description="Keys that became failed_retryable or failed_final in those seconds.")
    ]
    claims_per_minute: float | None
    completions_per_minute: float | None
    failures_per_minute: float | None


@dataclass(frozen=True)
class _Locked:
    locked: bool


@dataclass(frozen=True)
class _LastAt:
    taken_at: datetime | None


@dataclass(frozen=True)
class _Purged:
    rows_purged: int


def try_snapshot_lock(conn: psycopg.Connection) -> bool:
    row = select_one(conn, statement("try_snapshot_lock"), None, _Locked)
    return bool(row and row.locked)


def get_last_snapshot_at(conn: psycopg.Connection) -> datetime | None:
    row = select_one(conn, statement("get_last_snapshot_at"), None, _LastAt)
    return row.taken_at if row else None


def count_rows_purged_between(conn: psycopg.Connection, since: datetime, until: datetime) -> int:
    row = select_one(conn, statement("count_rows_purged_between"), {"since": since, "until": until}, _Purged)
    return row.rows_purged if row else 0


def count_key_changes_between(
    conn: psycopg.Connection, tables: Tables, since: datetime, until: datetime
) -> KeyChanges | None:
    """Keys claimed, completed and failed in (since, until]; None when counting them timed out (the keys table lacks
    index_keys_updated) or waited past the lock timeout: a savepoint keeps the caller's transaction, and the snapshot's
    levels, alive."""
    try:
        with conn.transaction():
            return select_one(
                conn, statement("count_key_changes_between", tables), {"since": since, "until": until}, KeyChanges
            )
    except (psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable):
        return None


def insert_metric_snapshot(conn: psycopg.Connection, snapshot: Snapshot) -> Snapshot | None:
    """None when a snapshot with the same timestamp exists already."""
    return select_one(conn, statement("insert_metric_snapshot"), snapshot.__dict__, Snapshot)


def delete_old_snapshots(conn: psycopg.Connection, *, retention_days: int, limit: int = 5000) -> int:
    cur = conn.execute(statement("delete_old_snapshots"), {"retention_days": retention_days, "limit": limit})
    return cur.rowcount


def take_snapshot(
    conn: psycopg.Connection,
    tables: Tables,
    settings: Settings,
    *,
    interval_seconds: int,
    min_gap_seconds: float = 0.0,
) -> Snapshot | None:
    """Measure and record one snapshot inside the caller's transaction.

    None when another writer holds the snapshot lock, or when the newest
    snapshot is younger than ``min_gap_seconds`` (a second scheduler replica
    must not double the points). Rows purged counts real runs that finished
    since the previous snapshot (for the first one: in the last interval); the
    keys claimed, completed and failed are counted over the same interval.
    """
    if not try_snapshot_lock(conn):
        return None
    now = database_now(conn)
    previous = get_last_snapshot_at(conn)
    if previous is not None and (now - previous).total_seconds() < min_gap_seconds:
        return None
    keys = overview.KeyCounts.combine(
        overview.count_processing_keys(conn, tables, settings.default_lease_seconds),
        rollups.read_value(conn, tables, settings, "key_windows"),
    )
    backlog = overview.get_outbox_backlog(conn, tables)
    inbox = rollups.read_value(conn, tables, settings, "inbox_volume")
    since = previous if previous is not None else now - timedelta(seconds=interval_seconds)
    changes = count_key_changes_between(conn, tables, since, now)
    snapshot = Snapshot(
        taken_at=now,
        stuck_keys=keys.stuck,
        processing_keys=keys.processing,
        failed_retryable_keys=keys.failed_retryable,
        failed_final_keys_24h=keys.failed_final_24h,
        outbox_pending=backlog.pending,
        outbox_lag_seconds=backlog.lag_seconds,
        inbox_rows_24h=inbox.rows_24h,
        rows_purged=count_rows_purged_between(conn, since, now),
        interval_seconds=(now - since).total_seconds() if changes else None,
        claims=changes.claims if changes else None,
        completions=changes.completions if changes else None,
        failures=changes.failures if changes else None,
    )
    return insert_metric_snapshot(conn, snapshot)


def get_latest_snapshot(conn: psycopg.Connection) -> Snapshot | None:
    return select_one(conn, statement("get_latest_snapshot"), None, Snapshot)


def list_snapshot_trend(conn: psycopg.Connection, *, hours: int = 24, max_points: int = 240) -> list[TrendPoint]:
    return select_all(conn, statement("list_snapshot_trend"), {"hours": hours, "max_points": max_points}, TrendPoint)
