"""Database health: the probes, and what the schema checks of `/health` read from the catalog."""
from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from queries import Tables, statement
from queries.db import select_all, select_one
from queries.migrate import AppliedMigration


def ping(conn: psycopg.Connection) -> bool:
    row = conn.execute(statement("ping")).fetchone()
    return row is not None and row[0] == 1


def database_now(conn: psycopg.Connection):
    """The database's clock: previews and their confirmations compare against it, not the web host's."""
    row = conn.execute(statement("get_database_now")).fetchone()
    assert row is not None
    return row[0]


@dataclass(frozen=True)
class _Present:
    present: bool


@dataclass(frozen=True)
class TableColumn:
    table_name: str
    column_name: str | None
    data_type: str | None


@dataclass(frozen=True)
class TableIndex:
    table_name: str
    index_name: str
    valid: bool


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
    rows = select_all(conn, statement("list_table_columns"), {"schema": tables.schema, "names": list(roles)},
                      TableColumn)
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        columns = found.setdefault(roles[row.table_name], {})
        if row.column_name is not None:
            columns[row.column_name] = row.data_type or ""
    return found


def list_table_indexes(conn: psycopg.Connection, tables: Tables) -> list[TableIndex]:
    names = [tables.keys, tables.inbox, tables.outbox]
    return select_all(conn, statement("list_table_indexes"), {"schema": tables.schema, "names": names}, TableIndex)


def list_key_retention_by_scope(conn: psycopg.Connection, tables: Tables, *, sample: int = 10_000,
                                limit: int = 100) -> list[ScopeRetention]:
    return select_all(conn, statement("list_key_retention_by_scope", tables), {"sample": sample, "limit": limit},
                      ScopeRetention)


# -- the SQL a finding suggests (text to show; idemdash never runs it) --------------------------------

def fix_add_column(tables: Tables, role: str, column: str, data_type: str) -> str:
    return statement("fix_add_column", table=sql.Identifier(tables.schema, getattr(tables, role)),
                     column=sql.Identifier(column), data_type=sql.SQL(data_type)).as_string(None)


def fix_extend_key_retention(tables: Tables, scope: str, horizon_hours: int) -> str:
    return statement("fix_extend_key_retention", tables, horizon=sql.Literal(f"{horizon_hours} hours"),
                     scope=sql.Literal(scope)).as_string(None)


def fix_drop_index(tables: Tables, index_name: str) -> str:
    return statement("fix_drop_index", index=sql.Identifier(tables.schema, index_name)).as_string(None)
