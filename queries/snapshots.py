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
from psycopg.types.json import Jsonb
from pydantic import Field

from idemdash.core.settings import Settings
from idemdash.queries import Tables, fleet_numbers, overview, rollups, statement
from idemdash.queries.health import database_now
from idemdash.queries.transactions import select_all, select_one

# the stuck keys per scope a snapshot records (/metrics' idemdash_stuck_keys{scope}), the first this many by name
STUCK_SCOPES = 500


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
    # what /metrics serves from the snapshot (None in snapshots from before it was recorded: /metrics counts live)
    needs_review_keys: int | None = None
    failed_keys: int | None = None  # the profile's failed state, every failed key
    outbox_poison: int | None = None
    outbox_poison_oldest_seconds: float | None = None
    stuck_by_scope: dict[str, int] | None = None  # scope -> stuck keys, the first STUCK_SCOPES scopes by name


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
    by_scope = snapshot.stuck_by_scope
    params = snapshot.__dict__ | {"stuck_by_scope": Jsonb(by_scope) if by_scope is not None else None}
    return select_one(conn, statement("insert_metric_snapshot"), params, Snapshot)


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
    # the numbers /metrics serves, counted as it would count them (the summary every profile answers)
    summary, _ = fleet_numbers.get_database_numbers(conn, tables, settings)
    windows = rollups.read_value(conn, tables, settings, "key_windows")
    inbox = rollups.read_value(conn, tables, settings, "inbox_volume")
    by_scope = overview.count_stuck_keys_by_scope(conn, tables, settings.default_lease_seconds, STUCK_SCOPES)
    since = previous if previous is not None else now - timedelta(seconds=interval_seconds)
    changes = count_key_changes_between(conn, tables, since, now)
    snapshot = Snapshot(
        taken_at=now,
        stuck_keys=_known(summary.stuck),
        processing_keys=_known(summary.processing),
        failed_retryable_keys=windows.failed_retryable,
        failed_final_keys_24h=windows.failed_final_24h,
        outbox_pending=_known(summary.outbox_pending),
        outbox_lag_seconds=summary.outbox_lag_seconds,
        inbox_rows_24h=inbox.rows_24h,
        rows_purged=count_rows_purged_between(conn, since, now),
        interval_seconds=(now - since).total_seconds() if changes else None,
        claims=changes.claims if changes else None,
        completions=changes.completions if changes else None,
        failures=changes.failures if changes else None,
        needs_review_keys=summary.needs_review,
        failed_keys=summary.failed,
        outbox_poison=summary.outbox_poison,
        outbox_poison_oldest_seconds=summary.outbox_poison_oldest_seconds,
        stuck_by_scope={row.scope: row.stuck for row in by_scope},
    )
    return insert_metric_snapshot(conn, snapshot)


def _known(count: int | None) -> int:
    """The reference tables record every headline number: the summary's None would be a bug, not 'not recorded'."""
    assert count is not None
    return count


def get_latest_snapshot(conn: psycopg.Connection) -> Snapshot | None:
    return select_one(conn, statement("get_latest_snapshot"), None, Snapshot)


def get_snapshot_younger_than(conn: psycopg.Connection, max_age_seconds: float) -> Snapshot | None:
    """The newest snapshot when it was taken within ``max_age_seconds`` (the scheduler is running), else None."""
    return select_one(conn, statement("get_snapshot_younger_than"), {"max_age_seconds": max_age_seconds}, Snapshot)


def list_snapshot_trend(conn: psycopg.Connection, *, hours: int = 24, max_points: int = 240) -> list[TrendPoint]:
    return select_all(conn, statement("list_snapshot_trend"), {"hours": hours, "max_points": max_points}, TrendPoint)
