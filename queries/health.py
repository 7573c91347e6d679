"""Database health: the probes, and what the schema checks of `/health` read from the catalog."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import psycopg

from idemdash.queries import QUERIES, Tables, statement
from idemdash.queries.migrate import AppliedMigration
from idemdash.queries.transactions import select_all, select_one


def database_now(conn: psycopg.Connection) -> datetime:
    """The database's clock: previews and their confirmations compare against it, not the web host's."""
    row = conn.execute(statement("get_database_now")).fetchone()
    assert row is not None
    now: datetime = row[0]
    return now


@dataclass(frozen=True)
class _Present:
    present: bool


@dataclass(frozen=True)
class TableColumn:
    table_name: str
    column_name: str | None
    data_type: str | None


@dataclass(frozen=True)
class ScopeRetention:
    scope: str
    min_retention_seconds: float
    sampled: int


def get_migration_table(conn: psycopg.Connection) -> bool:
    row = select_one(conn, statement("get_migration_table"), None, _Present)
    return bool(row and row.present)


def list_applied_migrations(conn: psycopg.Connection) -> list[AppliedMigration]:
    return select_all(conn, statement("list_applied_migrations"), None, AppliedMigration)


def list_table_columns(conn: psycopg.Connection, tables: Tables) -> dict[str, dict[str, str]]:
    """Columns (name → type) of each configured application table that exists, keyed by its role."""
    roles = {tables.keys: "keys", tables.inbox: "inbox", tables.outbox: "outbox"}
    rows = select_all(
        conn, statement("list_table_columns"), {"schema": tables.schema, "names": list(roles)}, TableColumn
    )
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        columns = found.setdefault(roles[row.table_name], {})
        if row.column_name is not None:
            columns[row.column_name] = row.data_type or ""
    return found


def list_key_retention_by_scope(
    conn: psycopg.Connection, tables: Tables, *, sample: int = 10_000, limit: int = 100
) -> list[ScopeRetention]:
    return select_all(
        conn, statement("list_key_retention_by_scope", tables), {"sample": sample, "limit": limit}, ScopeRetention
    )


@dataclass(frozen=True)
class NullableUniqueColumn:
    table_name: str
    index_name: str
    constraint_name: str | None  # None: a unique index without a constraint
    column_name: str
    nulls_not_distinct: bool  # PostgreSQL 15+: NULLs conflict like values, so no trap
    partial: bool


@dataclass(frozen=True)
class VacuumStats:
    table_name: str
    live_tuples: int
    dead_tuples: int
    changes: int  # inserted + updated + deleted rows since the statistics were reset
    changes_since_analyze: int
    last_vacuum: datetime | None
    last_autovacuum: datetime | None
    last_analyze: datetime | None
    last_autoanalyze: datetime | None
    options: str  # the table's storage parameters (reloptions), e.g. autovacuum settings

    @property
    def vacuumed(self) -> datetime | None:
        return max(filter(None, (self.last_vacuum, self.last_autovacuum)), default=None)

    @property
    def analyzed(self) -> datetime | None:
        return max(filter(None, (self.last_analyze, self.last_autoanalyze)), default=None)


@dataclass(frozen=True)
class Session:
    pid: int
    user_name: str | None
    application_name: str | None
    client_addr: str | None  # None: a Unix socket
    state: str
    query_seconds: float | None
    state_seconds: float | None
    transaction_seconds: float | None
    query: str | None


@dataclass(frozen=True)
class SessionCount:
    sessions: int
    hidden: int  # other roles' sessions this role may not inspect (no pg_read_all_stats)
    role: str  # the role idemdash connects as


@dataclass(frozen=True)
class AdvisoryLock:
    pid: int | None  # None: a prepared transaction holds it
    granted: bool
    mode: str
    two_keys: bool  # pg_advisory_lock(int4, int4) rather than pg_advisory_lock(bigint)
    lock_key: int  # the bigint key (two keys: key1 in the high half, key2 in the low)
    key1: int
    key2: int
    idemdash_lock: str | None  # what it is when it is one of idemdash's own locks
    user_name: str | None
    application_name: str | None
    client_addr: str | None
    state: str | None
    hidden: bool  # another role's session: no state, times or client without pg_read_all_stats
    session_seconds: float | None
    transaction_seconds: float | None
    state_seconds: float | None
    blocked_by: list[int] | None  # waiting locks: the sessions in the way
    total: int  # advisory locks in this database, before the limit

    @property
    def key_text(self) -> str:
        return f"({self.key1}, {self.key2})" if self.two_keys else str(self.lock_key)


# The derivation list_advisory_lock_keys reports for a key matched only by its claimed_by (no hash matched).
BY_HOLDER = "claimed_by = application_name"


@dataclass(frozen=True)
class LockedKey:
    lock_key: int
    two_keys: bool
    scope: str
    key: str
    claimed_by: str | None
    derivation: str  # the expression over the key row that equals the lock key
    same_holder: bool  # claimed_by is the lock holder's application_name


def list_nullable_unique_columns(conn: psycopg.Connection, tables: Tables) -> list[NullableUniqueColumn]:
    names = [tables.keys, tables.inbox, tables.outbox]
    return select_all(
        conn, statement("list_nullable_unique_columns"), {"schema": tables.schema, "names": names}, NullableUniqueColumn
    )


def list_table_vacuum_stats(conn: psycopg.Connection, tables: Tables) -> list[VacuumStats]:
    names = [tables.keys, tables.inbox, tables.outbox]
    return select_all(
        conn, statement("list_table_vacuum_stats"), {"schema": tables.schema, "names": names}, VacuumStats
    )


def list_long_sessions(
    conn: psycopg.Connection, *, active_seconds: float, idle_seconds: float, query_chars: int = 200, limit: int = 50
) -> list[Session]:
    params = {
        "active_seconds": active_seconds,
        "idle_seconds": idle_seconds,
        "query_chars": query_chars,
        "limit": limit,
    }
    return select_all(conn, statement("list_long_sessions"), params, Session)


def count_sessions(conn: psycopg.Connection) -> SessionCount:
    row = select_one(conn, statement("count_sessions"), None, SessionCount)
    assert row is not None
    return row


def list_advisory_locks(conn: psycopg.Connection, own: dict[str, str], *, limit: int = 50) -> list[AdvisoryLock]:
    """Advisory locks in this database; ``own`` maps the names idemdash hashes for its locks to what they are."""
    params = {"own_names": list(own), "own_labels": list(own.values()), "limit": limit}
    return select_all(conn, statement("list_advisory_locks"), params, AdvisoryLock)


def list_advisory_lock_keys(
    conn: psycopg.Connection, tables: Tables, locks: list[AdvisoryLock], *, candidates: int = 10_000, per_lock: int = 3
) -> list[LockedKey]:
    """Processing keys each lock may guard (see the derivations in the statement), at most ``per_lock`` each."""
    params = {
        "lock_keys": [lock.lock_key for lock in locks],
        "two_keys": [lock.two_keys for lock in locks],
        "holders": [lock.application_name for lock in locks],
        "candidates": candidates,
        "per_lock": per_lock,
        "by_holder": BY_HOLDER,
    }
    return select_all(conn, statement("list_advisory_lock_keys", tables), params, LockedKey)


_LOCK_NAME = re.compile(r"hashtextextended\('([^']+)'")


def lock_name(query_name: str) -> str:
    """The text idemdash hashes (hashtextextended(text, 0)) for the advisory lock the named statement takes.

    Read from the statement itself, so the health page and the lock cannot drift apart.
    """
    match = _LOCK_NAME.search(QUERIES[query_name].text)
    if match is None:
        raise ValueError(f"query {query_name!r} takes no hashtextextended('...') advisory lock")
    return match.group(1)
