"""What the configured role may do: the application tables and idemdash's own, from the catalog
(``has_table_privilege``), for `/readyz`, `/health` and `idemdash check`."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_all, select_one


@dataclass(frozen=True)
class TableAccess:
    role: str  # keys, inbox, outbox, or idemdash (one of idemdash's own tables)
    schema_name: str
    table_name: str
    role_name: str  # the database role idemdash connects as
    schema_present: bool
    schema_usage: bool
    present: bool
    can_select: bool
    can_insert: bool
    can_update: bool
    can_delete: bool
    can_lock: bool  # SELECT ... FOR UPDATE needs UPDATE on at least one column

    @property
    def qualified(self) -> str:
        return f"{self.schema_name}.{self.table_name}"

    @property
    def readable(self) -> bool:
        return self.schema_usage and self.can_select


@dataclass(frozen=True)
class DatabaseAccess:
    role_name: str
    database_name: str
    idemdash_schema_present: bool
    idemdash_schema_usage: bool
    owns_idemdash_schema: bool
    can_create_schema: bool


def list_table_access(conn: psycopg.Connection, tables: Tables) -> list[TableAccess]:
    """The keys, inbox and outbox tables (in that order, present or not), then idemdash's own tables."""
    rows = select_all(
        conn,
        statement("list_table_access"),
        {"schema": tables.schema, "keys": tables.keys, "inbox": tables.inbox, "outbox": tables.outbox},
        TableAccess,
    )
    return sorted(rows, key=lambda row: (_ORDER.get(row.role, len(_ORDER)), row.table_name))


_ORDER = {"keys": 0, "inbox": 1, "outbox": 2}


def get_database_access(conn: psycopg.Connection) -> DatabaseAccess:
    row = select_one(conn, statement("get_database_access"), None, DatabaseAccess)
    assert row is not None
    return row


# the privilege lists a grant may name (fixed words, never configured text)
PRIVILEGES = ("SELECT", "UPDATE", "DELETE", "INSERT")


def fix_grant_schema_usage(schema: str, role: str) -> str:
    return statement("fix_grant_schema_usage", schema=sql.Identifier(schema), role=sql.Identifier(role)).as_string(None)


def fix_grant_on_table(schema: str, table: str, privileges: list[str], role: str) -> str:
    if not privileges or not set(privileges) <= set(PRIVILEGES):
        raise ValueError(f"privileges must be some of {PRIVILEGES}, got {privileges}")
    return statement(
        "fix_grant_on_table",
        privileges=sql.SQL(", ").join(sql.SQL(p) for p in privileges),
        table=sql.Identifier(schema, table),
        role=sql.Identifier(role),
    ).as_string(None)


def fix_grant_idemdash_tables(role: str) -> str:
    return statement("fix_grant_idemdash_tables", role=sql.Identifier(role)).as_string(None)
