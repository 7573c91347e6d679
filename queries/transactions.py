"""Transaction helpers shared by every query module.

``read_tx`` is what pages and the API read through: a READ ONLY transaction
with a statement timeout, so a slow panel can never hold locks or run away.
``write_tx`` is for the dashboard's own writes: a lock timeout, so an action
never queues behind an application transaction for long.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.rows import class_row
from psycopg_pool import ConnectionPool

from idemdash.queries import Statement, statement

T = TypeVar("T")

# when each connection last finished a transaction here, healthy (queries/pools.check_rested reads it)
_finished: weakref.WeakKeyDictionary[psycopg.Connection, float] = weakref.WeakKeyDictionary()


def finished_at(conn: psycopg.Connection) -> float:
    """The monotonic time ``conn`` last finished a transaction through these helpers, or -inf."""
    return _finished.get(conn, float("-inf"))


@contextmanager
def read_tx(pool: ConnectionPool, statement_timeout_ms: int) -> Iterator[psycopg.Connection]:
    with pool.connection() as conn:
        conn.read_only = True  # BEGIN READ ONLY: one round trip less than BEGIN, then SET TRANSACTION READ ONLY
        try:
            with conn.transaction():
                set_statement_timeout(conn, statement_timeout_ms)
                yield conn
        finally:
            if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                conn.read_only = None  # the pool's next user (a write) begins as the server's default says
                _finished[conn] = time.monotonic()


def set_statement_timeout(conn: psycopg.Connection, statement_timeout_ms: int) -> None:
    """The statement timeout for the rest of the current transaction."""
    conn.execute(statement("set_statement_timeout"), {"ms": str(statement_timeout_ms)})


@contextmanager
def write_tx(
    pool: ConnectionPool, lock_timeout_ms: int, statement_timeout_ms: int = 10000
) -> Iterator[psycopg.Connection]:
    with pool.connection() as conn:
        conn.read_only = None  # as the server's default, whatever a read left behind
        with conn.transaction():
            conn.execute(statement("set_lock_timeout"), {"ms": str(lock_timeout_ms)})
            conn.execute(statement("set_statement_timeout"), {"ms": str(statement_timeout_ms)})
            yield conn
        _finished[conn] = time.monotonic()


def select_all(conn: psycopg.Connection, query: Statement, params: Any, row_type: type[T]) -> list[T]:
    with conn.cursor(row_factory=class_row(row_type)) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def select_one(conn: psycopg.Connection, query: Statement, params: Any, row_type: type[T]) -> T | None:
    with conn.cursor(row_factory=class_row(row_type)) as cur:
        cur.execute(query, params)
        return cur.fetchone()
