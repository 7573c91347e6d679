"""Which database, and which tables of which shape: the one object every statement runs against.

A ``Target`` says how to reach one database (its DSN, and the web's connection pool once opened), which
schema, tables and columns hold the application's idempotency keys, inbox and outbox there (``Tables``), and
the settings that apply to it. The web app, the jobs and the command line each build the targets they need
from the settings and pass them down explicitly; nothing is kept at module level.

Today there is one target per deployment (``name`` "default") and every table has seed 004's columns; several
databases and other table shapes are new targets and new shapes, not new code paths.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from queries import Tables
from queries import db as qdb

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
        self.pool = ConnectionPool(
            self.dsn, min_size=s["POOL_MIN_SIZE"], max_size=max(s["POOL_MAX_SIZE"], s["POOL_MIN_SIZE"]),
            open=True, timeout=float(s["POOL_TIMEOUT_SECONDS"]), name=f"idemdash-{self.name}",
            check=ConnectionPool.check_connection, kwargs={"application_name": application_name})
        return self.pool

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

    def connect(self, application_name: str) -> psycopg.Connection:
        """A fresh autocommit connection; the DSN's own ``connect_timeout`` wins over the default.

        Jobs hold no pool: each run connects anew, so a database that went away and came back needs nothing
        reset (a broken connection dies with the run that saw it).
        """
        extra = {} if "connect_timeout" in conninfo_to_dict(self.dsn) else {"connect_timeout": DEFAULT_CONNECT_TIMEOUT}
        return psycopg.connect(self.dsn, autocommit=True, application_name=application_name, **extra)
