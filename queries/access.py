"""What the configured role may do: the application tables and idemdash's own, from the catalog
(``has_table_privilege``), for `/readyz`, `/health` and `idemdash check`."""
from __future__ import annotations

from dataclasses import dataclass

import psycopg

from queries import Tables, statement
from queries.db import select_all, select_one


@dataclass(frozen=True)
class TableAccess:
    role: str            # keys, inbox, outbox, or idemdash (one of idemdash's own tables)
    schema_name: str
    table_name: str
    role_name: str       # the database role idemdash connects as
    schema_present: bool
    schema_usage: bool
    present: bool
    can_select: bool
    can_insert: bool
    can_update: bool
    can_delete: bool
    can_lock: bool       # SELECT ... FOR UPDATE needs UPDATE on at least one column

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
    return select_all(conn, statement("list_table_access"),
                      {"schema": tables.schema, "keys": tables.keys, "inbox": tables.inbox, "outbox": tables.outbox},
                      TableAccess)


def get_database_access(conn: psycopg.Connection) -> DatabaseAccess:
    row = select_one(conn, statement("get_database_access"), None, DatabaseAccess)
    assert row is not None
    return row
