"""Transaction helpers shared by every query module.

``read_tx`` is what pages and the API read through: a READ ONLY transaction
with a statement timeout, so a slow panel can never hold locks or run away.
``write_tx`` is for the dashboard's own writes: a lock timeout, so an action
never queues behind an application transaction for long.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.rows import class_row
from psycopg_pool import ConnectionPool

from idemdash.queries import Statement, statement

T = TypeVar("T")


@contextmanager
def read_tx(pool: ConnectionPool, statement_timeout_ms: int) -> Iterator[psycopg.Connection]:
    with pool.connection() as conn, conn.transaction():
        conn.execute(statement("set_read_only"))
        conn.execute(statement("set_statement_timeout"), {"ms": str(statement_timeout_ms)})
        yield conn


@contextmanager
def write_tx(pool: ConnectionPool, lock_timeout_ms: int,
             statement_timeout_ms: int = 10000) -> Iterator[psycopg.Connection]:
    with pool.connection() as conn, conn.transaction():
        conn.execute(statement("set_lock_timeout"), {"ms": str(lock_timeout_ms)})
        conn.execute(statement("set_statement_timeout"), {"ms": str(statement_timeout_ms)})
        yield conn


def select_all(conn: psycopg.Connection, query: Statement, params: Any, row_type: type[T]) -> list[T]:
    with conn.cursor(row_factory=class_row(row_type)) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def select_one(conn: psycopg.Connection, query: Statement, params: Any, row_type: type[T]) -> T | None:
    with conn.cursor(row_factory=class_row(row_type)) as cur:
        cur.execute(query, params)
        return cur.fetchone()
