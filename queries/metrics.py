"""The few numbers /metrics needs beyond the overview's."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class ScopeStuck:
    scope: str
    stuck: int


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


def count_stuck_keys_by_scope(conn: psycopg.Connection, tables: Tables, lease_seconds: int,
                              limit: int = 500) -> list[ScopeStuck]:
    return select_all(conn, statement("count_stuck_keys_by_scope", tables),
                      {"lease_seconds": lease_seconds, "limit": limit}, ScopeStuck)


def list_purge_status_by_table(conn: psycopg.Connection) -> list[PurgeStatus]:
    return select_all(conn, statement("list_purge_status_by_table"), None, PurgeStatus)


def list_last_purge_run_by_table(conn: psycopg.Connection) -> list[LastPurgeRun]:
    return select_all(conn, statement("list_last_purge_run_by_table"), None, LastPurgeRun)
