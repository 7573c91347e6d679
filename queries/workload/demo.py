"""Bootstrap statements for `idemdash demo` on its embedded server."""

from __future__ import annotations

import psycopg
from psycopg import sql

from idemdash.queries import Tables
from idemdash.queries.workload import statement


def ensure_database(admin: psycopg.Connection, name: str) -> bool:
    """Create database ``name`` unless it exists; True when it was created. ``admin`` must be autocommit."""
    if admin.execute(statement("database_exists"), {"name": name}).fetchone():
        return False
    admin.execute(statement("create_database", database=sql.Identifier(name)))
    return True


def has_any_key(conn: psycopg.Connection, tables: Tables) -> bool:
    row = conn.execute(statement("has_any_key", tables)).fetchone()
    return bool(row and row[0])
