"""Retention purges (DESIGN section 5): the batch statements, the per-table lock and the run history.

Each batch is one statement: select the next rows in primary-key order after a
cursor with ``FOR UPDATE SKIP LOCKED``, delete exactly those (by ``ctid``, with
the eligibility checked again), and add the batch to the run's
``idemdash.purge_run`` row, so progress and deletions commit together.
A dry-run chunk counts the same rows (same predicate and order) without
locking or deleting. The batch statements are run unprepared so that each is
planned with its cursor and limit known (the ``IS NULL`` of the first batch
folds away and the primary-key index drives the scan).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Union

import psycopg
from psycopg.rows import class_row

from queries import Tables, statement
from queries.db import select_all, select_one

# The tables a purge runs over, by role (each has its own lock, schedule and history).
TABLES = ("keys", "inbox", "outbox")

# One cursor column (outbox_id) or two (the composite primary keys).
CursorValue = Union[str, uuid.UUID, None]


@dataclass(frozen=True)
class Batch:
    """What one batch deleted (or one dry-run chunk counted) and the cursor after it (the last key it took)."""

    rows: int                # deleted (dry run: counted)
    taken: int               # rows the key-ordered scan returned; fewer than the limit: the end of the table
    after_1: CursorValue
    after_2: CursorValue

    @property
    def after(self) -> tuple[CursorValue, CursorValue] | None:
        return None if self.after_1 is None else (self.after_1, self.after_2)


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
    return [r.run_id for r in select_all(conn, statement("fail_dead_purge_runs"), {"table": table, "by_run": by_run},
                                         _RunId)]


def insert_purge_run(conn: psycopg.Connection, table: str, *, dry_run: bool, started_by: str,
                     audited: bool = False) -> int:
    """The run's history row; ``audited``: a person started it, so the audit log records it in the same statement."""
    row = select_one(conn, statement("insert_purge_run"),
                     {"table": table, "dry_run": dry_run, "started_by": started_by, "audited": audited}, _RunId)
    assert row is not None
    return row.run_id


def insert_skipped_purge_run(conn: psycopg.Connection, table: str, *, dry_run: bool,
                             started_by: str, audited: bool = False) -> SkippedRun:
    """Record a run that found the table's lock taken; the error names the run holding it."""
    row = select_one(conn, statement("insert_skipped_purge_run"),
                     {"table": table, "dry_run": dry_run, "started_by": started_by, "audited": audited}, SkippedRun)
    assert row is not None
    return row


def check_purge_connection(conn: psycopg.Connection) -> None:
    """Raises if the connection holding the table's lock has gone (and the lock with it)."""
    conn.execute(statement("check_purge_connection")).fetchone()


def finish_purge_run(conn: psycopg.Connection, run_id: int, outcome: str, error: str | None) -> None:
    conn.execute(statement("finish_purge_run"), {"run_id": run_id, "outcome": outcome, "error": error})


def insert_unrecorded_purge_run(conn: psycopg.Connection, table: str, *, dry_run: bool, started_by: str,
                                started_at: datetime, finished_at: datetime, error: str) -> int | None:
    """Record a failed run that could not reach the database at the time; None if it is recorded already."""
    row = select_one(conn, statement("insert_unrecorded_purge_run"),
                     {"table": table, "dry_run": dry_run, "started_by": started_by, "started_at": started_at,
                      "finished_at": finished_at, "error": error}, _RunId)
    return None if row is None else row.run_id


def finish_unrecorded_purge_run(conn: psycopg.Connection, run_id: int, outcome: str, finished_at: datetime,
                                error: str | None) -> bool:
    """Close a run left 'running' when the database went away; False if something closed it meanwhile."""
    row = select_one(conn, statement("finish_unrecorded_purge_run"),
                     {"run_id": run_id, "outcome": outcome, "finished_at": finished_at, "error": error}, _RunId)
    return row is not None


# ---------------------------------------------------------------------------------------------------------------
# one batch (call inside the batch's transaction, after set_purge_timeouts)


def set_purge_timeouts(conn: psycopg.Connection, statement_timeout_ms: int, lock_timeout_ms: int) -> None:
    conn.execute(statement("set_purge_timeouts"),
                 {"statement_ms": str(statement_timeout_ms), "lock_ms": str(lock_timeout_ms)})


def _batch(conn: psycopg.Connection, name: str, tables: Tables, params: dict[str, Any]) -> Batch:
    with conn.cursor(row_factory=class_row(Batch)) as cur:
        # prepare=False: planned with this batch's cursor and limit, never a generic plan
        cur.execute(statement(name, tables), params, prepare=False)
        row = cur.fetchone()
    assert row is not None
    return row


def _params(run_id: int, limit: int, after: tuple[CursorValue, CursorValue] | None, **extra: Any) -> dict[str, Any]:
    after_1, after_2 = after if after is not None else (None, None)
    return {"run_id": run_id, "limit": limit, "after_1": after_1, "after_2": after_2, **extra}


def delete_expired_keys(conn: psycopg.Connection, tables: Tables, run_id: int, limit: int,
                        after: tuple[CursorValue, CursorValue] | None, replay_horizon_seconds: int) -> Batch:
    return _batch(conn, "delete_expired_keys", tables,
                  _params(run_id, limit, after, replay_horizon_seconds=replay_horizon_seconds))


def count_expired_keys(conn: psycopg.Connection, tables: Tables, run_id: int, limit: int,
                       after: tuple[CursorValue, CursorValue] | None, replay_horizon_seconds: int) -> Batch:
    return _batch(conn, "count_expired_keys", tables,
                  _params(run_id, limit, after, replay_horizon_seconds=replay_horizon_seconds))


def delete_old_inbox_rows(conn: psycopg.Connection, tables: Tables, run_id: int, limit: int,
                          after: tuple[CursorValue, CursorValue] | None, retention_days: int) -> Batch:
    return _batch(conn, "delete_old_inbox_rows", tables, _params(run_id, limit, after, retention_days=retention_days))


def count_old_inbox_rows(conn: psycopg.Connection, tables: Tables, run_id: int, limit: int,
                         after: tuple[CursorValue, CursorValue] | None, retention_days: int) -> Batch:
    return _batch(conn, "count_old_inbox_rows", tables, _params(run_id, limit, after, retention_days=retention_days))


def delete_old_published_outbox_rows(conn: psycopg.Connection, tables: Tables, run_id: int, limit: int,
                                     after: tuple[CursorValue, CursorValue] | None, retention_days: int) -> Batch:
    return _batch(conn, "delete_old_published_outbox_rows", tables,
                  _params(run_id, limit, after, retention_days=retention_days))


def count_old_published_outbox_rows(conn: psycopg.Connection, tables: Tables, run_id: int, limit: int,
                                    after: tuple[CursorValue, CursorValue] | None, retention_days: int) -> Batch:
    return _batch(conn, "count_old_published_outbox_rows", tables,
                  _params(run_id, limit, after, retention_days=retention_days))
