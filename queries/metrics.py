"""The few numbers /metrics needs beyond the overview's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from idemdash.queries import statement
from idemdash.queries.snapshots import get_last_snapshot_at
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class PurgeStatus:
    table_name: str
    last_success_at: datetime | None
    last_rows_deleted: int


@dataclass(frozen=True)
class LastPurgeRun:
    table_name: str
    finished_at: datetime
    failed: bool


@dataclass(frozen=True)
class Housekeeping:
    """idemdash's own records in the database: its purges per table and the scheduler's last snapshot."""

    purges: list[PurgeStatus]
    last_runs: list[LastPurgeRun]
    last_snapshot_at: datetime | None


NO_HOUSEKEEPING = Housekeeping([], [], None)


def get_housekeeping(conn: psycopg.Connection, *, required: bool = True) -> Housekeeping:
    """The purges and the heartbeat; unless ``required``, in a savepoint and nothing when idemdash's schema is not
    there (a library's database idemdash only reads)."""
    if required:
        return Housekeeping(
            list_purge_status_by_table(conn), list_last_purge_run_by_table(conn), get_last_snapshot_at(conn)
        )
    try:
        with conn.transaction():
            return get_housekeeping(conn)
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return NO_HOUSEKEEPING


def list_purge_status_by_table(conn: psycopg.Connection) -> list[PurgeStatus]:
    return select_all(conn, statement("list_purge_status_by_table"), None, PurgeStatus)


def list_last_purge_run_by_table(conn: psycopg.Connection) -> list[LastPurgeRun]:
    return select_all(conn, statement("list_last_purge_run_by_table"), None, LastPurgeRun)
