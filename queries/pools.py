"""How the web's connection pools are made: each connect attempt under a deadline and reported to the database's
``CauseLog`` (one line per cause, not one per retry), and psycopg_pool's own retry warnings silenced.

``Target.open_pool`` (queries/target.py) calls ``new_pool``; when a pool opens and closes is ``PoolBudget``'s
(queries/pool_budget.py).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from idemdash.core.diagnosis import Cause, CauseLog
from idemdash.core.settings import setting


def new_pool(name: str, dsn: str, settings: Mapping[str, Any], kwargs: Mapping[str, Any],
             connection_class: type[psycopg.Connection]) -> ConnectionPool:
    """An open pool (not waiting for the database). Its connects give up after POOL_CONNECT_TIMEOUT_SECONDS unless
    the DSN sets its own ``connect_timeout``: a host that accepts and never answers then fails each attempt, with its
    cause, instead of holding the pool's workers for good."""
    _quiet_pool_retries()
    deadline = ({} if "connect_timeout" in conninfo_to_dict(dsn)
                else {"connect_timeout": setting(settings, "POOL_CONNECT_TIMEOUT_SECONDS")})
    return ConnectionPool(
        dsn, min_size=settings["POOL_MIN_SIZE"], max_size=max(settings["POOL_MAX_SIZE"], settings["POOL_MIN_SIZE"]),
        open=True, timeout=float(settings["POOL_TIMEOUT_SECONDS"]), name=name,
        check=ConnectionPool.check_connection, kwargs={**deadline, **kwargs}, connection_class=connection_class)


def watched_connection_class(problems: CauseLog,
                             cause_of: Callable[[BaseException], Cause]) -> type[psycopg.Connection]:
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
