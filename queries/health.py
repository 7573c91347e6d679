"""Database health checks."""
from __future__ import annotations

import psycopg

from queries import statement


def ping(conn: psycopg.Connection) -> bool:
    row = conn.execute(statement("ping")).fetchone()
    return row is not None and row[0] == 1


def database_now(conn: psycopg.Connection):
    """The database's clock: previews and their confirmations compare against it, not the web host's."""
    row = conn.execute(statement("get_database_now")).fetchone()
    assert row is not None
    return row[0]
