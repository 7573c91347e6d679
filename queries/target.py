"""Which database, and which tables of which shape: the one object every statement runs against.

A ``Target`` says how to reach one database (its DSN, and the web's connection pool once opened), which
schema, tables and columns hold the application's idempotency keys, inbox and outbox there (``Tables``), and
the settings that apply to it. The web app, the jobs and the command line each build the targets they need
from the settings and pass them down explicitly; nothing is kept at module level.

Today there is one target per deployment (``name`` "default") and every table has seed 004's columns; several
databases and other table shapes are new targets and new shapes, not new code paths.
"""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from core.diagnosis import TIMEOUT, Cause, CauseLog, diagnose
from queries import Tables
from queries import db as qdb

log = logging.getLogger(__name__)

# libpq waits forever without one (psycopg: 130 s); a job or a command must fail fast and try again.
DEFAULT_CONNECT_TIMEOUT = 10


@dataclass(eq=False)
class Target:
    name: str
    dsn: str
    tables: Tables
    settings: Mapping[str, Any]
    pool: ConnectionPool | None = field(default=None, repr=False)
    _pool_pid: int | None = field(default=None, repr=False)
    _pool_application_name: str = field(default="idemdash", repr=False)
    # why the database cannot be used right now, logged once per cause (not once per retry)
    problems: CauseLog = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.problems = CauseLog(log, "database" if self.name == "default" else f"database {self.name}")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], name: str = "default") -> "Target":
        return cls(name, settings["DATABASE_URL"], Tables.from_config(settings), settings)

    @property
    def statement_timeout_ms(self) -> int:
        return self.settings["STATEMENT_TIMEOUT_MS"]

    @property
    def lock_timeout_ms(self) -> int:
        return self.settings["LOCK_TIMEOUT_MS"]

    # -- the web's pool: pages and actions -----------------------------------------------------------------

    def open_pool(self, application_name: str = "idemdash") -> ConnectionPool:
        """Open the pool without waiting for the database, so the web process starts (and ``/healthz`` answers)
        while it is unreachable."""
        s = self.settings
        self._pool_pid, self._pool_application_name = os.getpid(), application_name
        _quiet_pool_retries()
        self.pool = ConnectionPool(
            self.dsn, min_size=s["POOL_MIN_SIZE"], max_size=max(s["POOL_MAX_SIZE"], s["POOL_MIN_SIZE"]),
            open=True, timeout=float(s["POOL_TIMEOUT_SECONDS"]), name=f"idemdash-{self.name}",
            check=ConnectionPool.check_connection, kwargs={"application_name": application_name},
            connection_class=self._watched_connection_class())
        return self.pool

    def _watched_connection_class(self) -> type[psycopg.Connection]:
        """The pool's connections, each attempt reported to ``problems``: the cause is logged once, as soon as
        the pool's background connect fails, and a request that then waits in vain can name it."""
        target = self

        class WatchedConnection(psycopg.Connection):
            @classmethod
            def connect(cls, *args: Any, **kwargs: Any):  # type: ignore[override]
                try:
                    conn = super().connect(*args, **kwargs)
                except psycopg.Error as exc:
                    target.problems.failed(target.cause_of(exc))
                    raise
                target.problems.recovered()
                return conn

        return WatchedConnection

    def cause_of(self, exc: BaseException, *, privilege: str | None = None) -> Cause:
        """Why ``exc`` happened here, in one line with its fix (a pool that timed out: why it has no connection)."""
        if isinstance(exc, PoolTimeout):
            known = self.problems.current
            if known is not None:
                return known
            return Cause(TIMEOUT, f"no database connection within {self.settings['POOL_TIMEOUT_SECONDS']} s "
                                  "(IDEMDASH_POOL_TIMEOUT_SECONDS): the database is slow to accept connections, or "
                                  "every pooled connection is busy (IDEMDASH_POOL_MAX_SIZE).", True)
        t = self.tables
        names = {t.keys: "IDEMDASH_KEYS_TABLE", t.inbox: "IDEMDASH_INBOX_TABLE", t.outbox: "IDEMDASH_OUTBOX_TABLE"}
        return diagnose(exc, self.dsn, schema=t.schema, app_tables=names, privilege=privilege)

    @contextmanager
    def read(self, statement_timeout_ms: int | None = None) -> Iterator[psycopg.Connection]:
        """A READ ONLY transaction with the statement timeout (or a shorter one a page's time budget leaves)."""
        with qdb.read_tx(self._pool(), statement_timeout_ms or self.statement_timeout_ms) as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[psycopg.Connection]:
        """A transaction for the dashboard's own writes, with the lock timeout."""
        with qdb.write_tx(self._pool(), self.lock_timeout_ms) as conn:
            yield conn

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def _pool(self) -> ConnectionPool:
        if self.pool is None:
            raise RuntimeError(f"database {self.name!r}: open_pool() first (the web app does)")
        if self._pool_pid != os.getpid():
            # forked after the pool opened (gunicorn --preload builds the app before forking its workers): the
            # parent's connections and threads are not ours to use, so this process opens a pool of its own
            self.open_pool(self._pool_application_name)
        return self.pool

    # -- a connection of its own: jobs and the command line ---------------------------------------------------

    def connect(self, application_name: str, *, report: bool = True) -> psycopg.Connection:
        """A fresh autocommit connection; the DSN's own ``connect_timeout`` wins over the default.

        Jobs hold no pool: each run connects anew, so a database that went away and came back needs nothing
        reset (a broken connection dies with the run that saw it). With ``report`` a failure's cause is logged
        once (``problems``), however many runs retry; the command line says it itself instead.
        """
        extra = {} if "connect_timeout" in conninfo_to_dict(self.dsn) else {"connect_timeout": DEFAULT_CONNECT_TIMEOUT}
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, application_name=application_name, **extra)
        except psycopg.Error as exc:
            if report:
                self.problems.failed(self.cause_of(exc))
            raise
        if report:
            self.problems.recovered()
        return conn


class _PoolRetries(logging.Filter):
    """psycopg_pool warns on every failed reconnection attempt; ``Target.problems`` says the cause once instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("error connecting in", "reconnection attempt in pool"))


def _quiet_pool_retries() -> None:
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(f, _PoolRetries) for f in pool_log.filters):
        pool_log.addFilter(_PoolRetries())
