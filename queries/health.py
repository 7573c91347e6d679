"""Database health checks."""
from __future__ import annotations

import psycopg

from queries import statement


def ping(conn: psycopg.Connection) -> bool:
    row = conn.execute(statement("ping")).fetchone()
    return row is not None and row[0] == 1
