"""How the web's connection pools are made: each connect attempt under a deadline and reported to the database's
``CauseLog`` (one line per cause, not one per retry), and psycopg_pool's own retry warnings silenced.

``Target.open_pool`` (queries/target.py) calls ``new_pool``; when a pool opens and closes is ``PoolBudget``'s
(queries/pool_budget.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from idemdash.core.diagnosis import Cause, CauseLog
from idemdash.core.settings import Settings
from idemdash.queries import transactions

# a connection handed back to the pool less than this long ago is handed out again without a check query
CHECK_AFTER_IDLE_SECONDS = 2.0


def new_pool(
    name: str,
    dsn: str,
    settings: Settings,
    kwargs: Mapping[str, Any],
    connection_class: type[psycopg.Connection],
) -> ConnectionPool:
    """An open pool (not waiting for the database). Its connects give up after POOL_CONNECT_TIMEOUT_SECONDS unless
    the DSN sets its own ``connect_timeout``: a host that accepts and never answers then fails each attempt, with its
    cause, instead of holding the pool's workers for good."""
    _quiet_pool_retries()
    deadline = (
        {} if "connect_timeout" in conninfo_to_dict(dsn) else {"connect_timeout": settings.pool_connect_timeout_seconds}
    )
    return ConnectionPool(
        dsn,
        min_size=settings.pool_min_size,
        max_size=max(settings.pool_max_size, settings.pool_min_size),
        open=True,
        timeout=float(settings.pool_timeout_seconds),
        name=name,
        check=check_rested,
        kwargs={**deadline, **kwargs},
        connection_class=connection_class,
    )


def check_rested(conn: psycopg.Connection) -> None:
    """The pool's check when it hands a connection out: a query for one that has rested in the pool (a restarted
    server or a dropped connection is found before a page uses it), none for one a transaction helper
    (queries/transactions.py) finished with moments ago: a page takes one per panel, and a check per take was a round
    trip per panel. (psycopg_pool's ``reset`` callback would stamp it too, but makes every return go through its
    worker thread.)"""
    if time.monotonic() - transactions.finished_at(conn) > CHECK_AFTER_IDLE_SECONDS:
        ConnectionPool.check_connection(conn)


def watched_connection_class(
    problems: CauseLog, cause_of: Callable[[BaseException], Cause]
) -> type[psycopg.Connection]:
    """A pool's connections, each attempt reported to ``problems``: the cause is logged once, as soon as the pool's
    background connect fails, and a request that then waits in vain can name it."""

    class WatchedConnection(psycopg.Connection):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> WatchedConnection:
            try:
                conn = super().connect(*args, **kwargs)
            except psycopg.Error as exc:
                problems.failed(cause_of(exc))
                raise
            problems.recovered()
            return conn

    return WatchedConnection


class _PoolRetries(logging.Filter):
    """psycopg_pool warns on every failed reconnection attempt; ``Target.problems`` says the cause once instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("error connecting in", "reconnection attempt in pool"))


def _quiet_pool_retries() -> None:
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(f, _PoolRetries) for f in pool_log.filters):
        pool_log.addFilter(_PoolRetries())
