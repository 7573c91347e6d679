"""The connection pool, created unbound and attached with ``init_app``.

One pool per process: gunicorn workers each build their own app after the
fork. The pool opens without waiting, so the web process starts (and
``/healthz`` answers) even while the database is unreachable.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import psycopg
from flask import Flask, current_app
from psycopg_pool import ConnectionPool

from queries import Tables
from queries import db as qdb


class Database:
    def __init__(self, app: Flask | None = None) -> None:
        self.pool: ConnectionPool | None = None
        self.tables = Tables()
        self.statement_timeout_ms = 3000
        self.lock_timeout_ms = 500
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        config = app.config
        self.tables = Tables.from_config(config)
        self.statement_timeout_ms = config["STATEMENT_TIMEOUT_MS"]
        self.lock_timeout_ms = config["LOCK_TIMEOUT_MS"]
        self.pool = ConnectionPool(
            config["DATABASE_URL"],
            min_size=config["POOL_MIN_SIZE"],
            max_size=max(config["POOL_MAX_SIZE"], config["POOL_MIN_SIZE"]),
            open=True,
            timeout=float(config["POOL_TIMEOUT_SECONDS"]),
            name="idemdash",
            check=ConnectionPool.check_connection,
            kwargs={"application_name": "idemdash"},
        )
        app.extensions["idemdash_db"] = self

    @contextmanager
    def read(self, statement_timeout_ms: int | None = None) -> Iterator[psycopg.Connection]:
        """A READ ONLY transaction with the statement timeout (or a shorter one a page's time budget leaves)."""
        with qdb.read_tx(self.pool, statement_timeout_ms or self.statement_timeout_ms) as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[psycopg.Connection]:
        with qdb.write_tx(self.pool, self.lock_timeout_ms) as conn:
            yield conn

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def get_db() -> Database:
    return current_app.extensions["idemdash_db"]
