"""Retention purges (docs/operations.md, Retention purges): the per-table lock, the run history and its own retention.

The batches themselves are in ``queries/purge_batches.py``, partitions dropped whole in
``queries/partitions.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql

from idemdash.queries import statement
from idemdash.queries.transactions import select_all, select_one

# The tables a purge runs over, by role (each has its own lock, schedule and history).
TABLES = ("keys", "inbox", "outbox")


@dataclass(frozen=True)
class SkippedRun:
    run_id: int
    error: str


@dataclass(frozen=True)
class _RunId:
    run_id: int


# ---------------------------------------------------------------------------------------------------------------
# the per-table lock (session level, on the run's own connection)


def try_purge_lock(conn: psycopg.Connection, table: str) -> bool:
    row = conn.execute(statement("try_purge_lock"), {"table": table}).fetchone()
    return bool(row and row[0])


def release_purge_lock(conn: psycopg.Connection, table: str) -> bool:
    row = conn.execute(statement("release_purge_lock"), {"table": table}).fetchone()
    return bool(row and row[0])


# ---------------------------------------------------------------------------------------------------------------
# the run history


def fail_dead_purge_runs(conn: psycopg.Connection, table: str, by_run: int) -> list[int]:
    """Mark this table's 'running' rows failed ('runner died'); only correct while holding the table's lock."""
    return [
        r.run_id
        for r in select_all(conn, statement("fail_dead_purge_runs"), {"table": table, "by_run": by_run}, _RunId)
    ]


def insert_purge_run(
    conn: psycopg.Connection, table: str, *, dry_run: bool, started_by: str, audited: bool = False
) -> int:
    """The run's history row; ``audited``: a person started it, so the audit log records it in the same statement."""
    row = select_one(
        conn,
        statement("insert_purge_run"),
        {"table": table, "dry_run": dry_run, "started_by": started_by, "audited": audited},
        _RunId,
    )
    assert row is not None
    return row.run_id


def started_within(conn: psycopg.Connection, table: str, started_by: str, seconds: float) -> bool:
    """A run of ``table`` by ``started_by`` (not a dry run, and not failed) began within the last ``seconds``."""
    row = conn.execute(
        statement("started_within"), {"table": table, "started_by": started_by, "seconds": float(seconds)}
    ).fetchone()
    return bool(row and row[0])


def insert_skipped_purge_run(
    conn: psycopg.Connection, table: str, *, dry_run: bool, started_by: str, audited: bool = False
) -> SkippedRun:
    """Record a run that found the table's lock taken; the error names the run holding it."""
    row = select_one(
        conn,
        statement("insert_skipped_purge_run"),
        {"table": table, "dry_run": dry_run, "started_by": started_by, "audited": audited},
        SkippedRun,
    )
    assert row is not None
    return row


@dataclass(frozen=True)
class _CancelAsked:
    cancel_requested_by: str | None


@dataclass(frozen=True)
class CancelRequest:
    run_id: int
    table_name: str
    cancel_requested_by: str
    cancel_requested_at: datetime
    audit_id: int


def get_purge_cancel(conn: psycopg.Connection, run_id: int) -> str | None:
    """Who asked to cancel the run (None: nobody). Raises if the connection holding the table's lock has gone
    (and the lock with it): the batches call it between batches on that connection."""
    row = select_one(conn, statement("get_purge_cancel"), {"run_id": run_id}, _CancelAsked)
    return None if row is None else row.cancel_requested_by


def request_purge_cancel(conn: psycopg.Connection, run_id: int, *, actor: str, reason: str) -> CancelRequest | None:
    """Ask a running run to stop after its current batch; None when the run is not running."""
    return select_one(
        conn, statement("request_purge_cancel"), {"run_id": run_id, "actor": actor, "reason": reason}, CancelRequest
    )


def finish_purge_run(conn: psycopg.Connection, run_id: int, outcome: str, error: str | None) -> None:
    conn.execute(statement("finish_purge_run"), {"run_id": run_id, "outcome": outcome, "error": error})


def insert_unrecorded_purge_run(
    conn: psycopg.Connection,
    table: str,
    *,
    dry_run: bool,
    started_by: str,
    started_at: datetime,
    finished_at: datetime,
    error: str,
) -> int | None:
    """Record a failed run that could not reach the database at the time; None if it is recorded already."""
    row = select_one(
        conn,
        statement("insert_unrecorded_purge_run"),
        {
            "table": table,
            "dry_run": dry_run,
            "started_by": started_by,
            "started_at": started_at,
            "finished_at": finished_at,
            "error": error,
        },
        _RunId,
    )
    return None if row is None else row.run_id


def finish_unrecorded_purge_run(
    conn: psycopg.Connection, run_id: int, outcome: str, finished_at: datetime, error: str | None
) -> bool:
    """Close a run left 'running' when the database went away; False if something closed it meanwhile."""
    row = select_one(
        conn,
        statement("finish_unrecorded_purge_run"),
        {"run_id": run_id, "outcome": outcome, "finished_at": finished_at, "error": error},
        _RunId,
    )
    return row is not None


def set_purge_run_method(conn: psycopg.Connection, run_id: int, method: str) -> None:
    """How the run's batches find their rows: 'due_index' or 'primary_key' (queries.purge_batches)."""
    conn.execute(statement("set_purge_run_method"), {"run_id": run_id, "method": method})


def delete_old_purge_runs(conn: psycopg.Connection, table: str, retention_days: int, limit: int = 1000) -> int:
    """Forget finished runs of ``table`` older than the retention (at most ``limit`` a call), keeping the latest
    successful purge and dry run; returns how many went."""
    row = conn.execute(
        statement("delete_old_purge_runs"), {"table": table, "retention_days": retention_days, "limit": limit}
    ).fetchone()
    return int(row[0]) if row else 0


# ---------------------------------------------------------------------------------------------------------------
# one batch's transaction


def set_purge_timeouts(conn: psycopg.Connection, statement_timeout_ms: int, lock_timeout_ms: int) -> None:
    """SET LOCAL statement_timeout and lock_timeout (call inside the batch's transaction)."""
    conn.execute(
        statement("set_purge_timeouts"), {"statement_ms": str(statement_timeout_ms), "lock_ms": str(lock_timeout_ms)}
    )


@dataclass(frozen=True)
class ServerSetting:
    name: str
    setting: str
    unit: str | None
    choices: list[str]
    default_value: str | None
    source: str


def list_delete_settings(conn: psycopg.Connection) -> dict[str, ServerSetting]:
    """wal_compression, checkpoint_timeout, max_wal_size and full_page_writes as the server has them."""
    return {s.name: s for s in select_all(conn, statement("list_delete_settings"), None, ServerSetting)}


def fix_wal_compression(method: str) -> str:
    return statement("fix_wal_compression", method=sql.Literal(method)).as_string(None)


def fix_checkpoint_spacing(timeout: str, wal_size: str) -> str:
    return statement("fix_checkpoint_spacing", timeout=sql.Literal(timeout), wal_size=sql.Literal(wal_size)).as_string(
        None
    )
