"""Which database, and which tables of which shape: the one object every statement runs against.

A ``Target`` says how to reach one database (its DSN, an optional hot standby to read from, and the web's
connection pools once opened), which schema, tables and columns hold the application's idempotency keys,
inbox and outbox there (``Tables``), and the settings that apply to it. The web app, the jobs and the command
line each build the targets they need from the settings (core.databases) and pass them down explicitly;
nothing is kept at module level. What shape the tables have is the database's profile (core/profiles).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from idemdash.core.diagnosis import TIMEOUT, URL, Cause, CauseLog, diagnose
from idemdash.core.dsn import Endpoint, endpoint, redact_dsn
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.settings import Settings
from idemdash.queries import Tables, statement, transactions
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.pools import new_pool, watched_connection_class
from idemdash.queries.standby import REPLICA_CHECK_SECONDS, ReplicaStatus, measure_standby

log = logging.getLogger(__name__)

# libpq waits forever without one (psycopg: 130 s); a job or a command must fail fast and try again.
DEFAULT_CONNECT_TIMEOUT = 10


@dataclass(eq=False)
class Target:
    name: str
    dsn: str
    tables: Tables
    settings: Settings
    read_dsn: str | None = None
    pool: ConnectionPool | None = field(default=None, repr=False)
    read_pool: ConnectionPool | None = field(default=None, repr=False)
    _pool_pid: int | None = field(default=None, repr=False)
    _application_name: str = field(default="idemdash", repr=False)
    _replica: tuple[float, ReplicaStatus] | None = field(default=None, repr=False)
    _replica_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # the web worker's budget of connections, which opens and closes the pools (None: open_pool() by hand)
    keeper: PoolBudget | None = field(default=None, repr=False)
    # why the database cannot be used right now, logged once per cause (not once per retry)
    problems: CauseLog = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.problems = CauseLog(log, "database" if self.name == "default" else f"database {self.name}")

    @functools.cached_property
    def endpoint(self) -> Endpoint:  # host, port, database and user of the DSN: every page's header shows them
        return endpoint(self.dsn)

    @classmethod
    def from_settings(cls, settings: Settings, name: str = "default") -> Target:
        return cls(
            name,
            settings.database_url,
            Tables.from_config(settings),
            settings,
            read_dsn=settings.read_database_url or None,
        )

    @property
    def statement_timeout_ms(self) -> int:
        return self.settings.statement_timeout_ms

    @property
    def lock_timeout_ms(self) -> int:
        return self.settings.lock_timeout_ms

    @property
    def label(self) -> str:
        """The database as a person may see it: its DSN without the password."""
        return redact_dsn(self.dsn)

    # -- the web's pools: pages and actions ----------------------------------------------------------------

    def open_pool(self, application_name: str | None = None) -> ConnectionPool:
        """Open the pools without waiting for the database, so the web process starts (and ``/healthz``
        answers) while it is unreachable. The web app opens them through its ``PoolBudget`` (``keeper``)."""
        self._pool_pid, self._application_name = os.getpid(), application_name or self._application_name
        options = {"application_name": self._application_name}
        watched = watched_connection_class(self.problems, self.cause_of)
        self.pool = new_pool(
            f"idemdash-{self.name}", self.dsn, self.settings, {**options, **self._session_options(self.dsn)}, watched
        )
        # the standby's failures are not the database's: replica_status sends reads to the primary instead
        self.read_pool = (
            new_pool(
                f"idemdash-{self.name}-standby",
                self.read_dsn,
                self.settings,
                {**options, **self._session_options(self.read_dsn)},
                psycopg.Connection,
            )
            if self.read_dsn
            else None
        )
        return self.pool

    def pool_is_open(self) -> bool:
        return self.pool is not None and self._pool_pid == os.getpid()

    @property
    def pool_reservation(self) -> int:
        """The most connections this database's pools may hold (the standby's pool too)."""
        size: int = max(self.settings.pool_max_size, self.settings.pool_min_size)
        return size * (2 if self.read_dsn else 1)

    def pool_connections(self) -> int:
        """Connections the pools hold now, in use or idle."""
        pools = (self.pool, self.read_pool) if self.pool_is_open() else ()
        return sum(p.get_stats().get("pool_size", 0) for p in pools if p is not None)

    def take_pools(self) -> list[ConnectionPool]:
        """The open pools, forgotten here for the caller to close: a request that comes after opens new ones."""
        pools = [p for p in (self.pool, self.read_pool) if p is not None]
        self.pool = self.read_pool = None
        return pools

    def cause_of(self, exc: BaseException, *, privilege: str | None = None) -> Cause:
        """Why ``exc`` happened here, in one line with its fix (a pool that timed out: why it has no connection)."""
        if isinstance(exc, PoolTimeout):
            known = self.problems.current
            if known is not None:
                return known
            return Cause(
                TIMEOUT,
                f"no database connection within {self.settings.pool_timeout_seconds} s "
                "(IDEMDASH_POOL_TIMEOUT_SECONDS): the database is slow to accept connections, or "
                "every pooled connection is busy (IDEMDASH_POOL_MAX_SIZE).",
                True,
            )
        t = self.tables
        names = {t.keys: "IDEMDASH_KEYS_TABLE", t.inbox: "IDEMDASH_INBOX_TABLE", t.outbox: "IDEMDASH_OUTBOX_TABLE"}
        cause = diagnose(exc, self.dsn, schema=t.schema, app_tables=names, privilege=privilege)
        if self.settings.config and URL in cause.message:  # the URL to fix is the file's, not the variable
            fleet, _, member = self.name.partition("/")
            table = f"[fleets.{fleet}] (its member {member})" if member else f"[databases.{self.name}]"
            where = f"the url of {table} in IDEMDASH_CONFIG ({self.settings.config})"
            cause = replace(cause, message=cause.message.replace(URL, where))
        return cause

    @contextmanager
    def read(self, statement_timeout_ms: int | None = None, *, primary: bool = False) -> Iterator[psycopg.Connection]:
        """A READ ONLY transaction with the statement timeout (or a shorter one a page's time budget leaves), on
        the standby while it is close enough (``replica_status``), else on the primary. ``primary``: reads
        an action depends on, which must see what the primary sees."""
        with self._lease() as pool:
            status = None if primary else self.replica_status()  # None without a standby
            if status is not None and status.using_standby and self.read_pool is not None:
                pool = self.read_pool
            with transactions.read_tx(pool, statement_timeout_ms or self.statement_timeout_ms) as conn:
                yield conn

    @contextmanager
    def write(self) -> Iterator[psycopg.Connection]:
        """A transaction on the primary for the dashboard's own writes, with the lock timeout."""
        with self._lease() as pool, transactions.write_tx(pool, self.lock_timeout_ms) as conn:
            yield conn

    def close(self) -> None:
        for pool in self.take_pools():
            pool.close()

    @contextmanager
    def _lease(self) -> Iterator[ConnectionPool]:
        """The primary's pool, kept open while the block runs: opened now if the budget (``keeper``) closed it."""
        if self.keeper is None:
            yield self._pool()
            return
        with self.keeper.lease(self):
            yield self._pool()

    def _pool(self) -> ConnectionPool:
        if self.pool is None:
            raise RuntimeError(f"database {self.name!r}: open_pool() first (the web app does)")
        if self._pool_pid != os.getpid():
            # forked after the pool opened (gunicorn --preload builds the app before forking its workers): the
            # parent's connections and threads are not ours to use, so this process opens pools of its own
            self.open_pool(self._application_name)
        return self.pool

    # -- the standby ----------------------------------------------------------------------------------------

    def replica_status(self) -> ReplicaStatus | None:
        """None without a standby; else where reads go now, measured at most every REPLICA_CHECK_SECONDS."""
        if not self.read_dsn:
            return None
        with self._replica_lock:
            if self._replica is None or time.monotonic() - self._replica[0] > REPLICA_CHECK_SECONDS:
                self._replica = (time.monotonic(), self._measure_replica())
            return self._replica[1]

    def _measure_replica(self) -> ReplicaStatus:
        assert self.read_pool is not None  # measured only with a read_dsn, whose pool opens with the primary's
        return measure_standby(self._lease(), self.read_pool, self.settings.read_max_lag_seconds)

    def _session_options(self, dsn: str) -> dict[str, str]:
        """A library's tables are read and purged in a session whose time zone is UTC: a ``timestamp`` column the
        library writes from a UTC clock (NServiceBus, MassTransit's legacy mode) then compares right with
        ``now()``, and through the library's own index. The reference tables' sessions are left as configured."""
        if self.settings.profile == DEFAULT_PROFILE:
            return {}
        own = conninfo_to_dict(dsn).get("options") or ""
        return {"options": f"{own} -c TimeZone=UTC".strip()}

    # -- a connection of its own: jobs and the command line ---------------------------------------------------

    def connect(self, application_name: str, *, report: bool = True) -> psycopg.Connection:
        """A fresh autocommit connection to the primary; the DSN's own ``connect_timeout`` wins over the default.

        Jobs hold no pool: each run connects anew, so a database that went away and came back needs nothing
        reset (a broken connection dies with the run that saw it). With ``report`` a failure's cause is logged
        once (``problems``), however many runs retry; the command line says it itself instead.
        """
        extra: dict[str, Any] = (
            {} if "connect_timeout" in conninfo_to_dict(self.dsn) else {"connect_timeout": DEFAULT_CONNECT_TIMEOUT}
        )
        extra.update(self._session_options(self.dsn))
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, application_name=application_name, **extra)
        except psycopg.Error as exc:
            if report:
                self.problems.failed(self.cause_of(exc))
            raise
        if report:
            self.problems.recovered()
        return conn

    @contextmanager
    def read_once(
        self,
        application_name: str,
        statement_timeout_ms: int,
        connect_timeout: int,
        *,
        slot_deadline: float | None = None,
    ) -> Iterator[psycopg.Connection]:
        """A READ ONLY transaction with ``statement_timeout_ms`` on the primary, for a read made now and then (the
        all-databases refresh) that must hold no connection between times: on an idle connection of this process's
        pool when it has one, else on one of its own, closed after, taken within the budget's background slots
        (``PoolBudget.own_connection``: waits until ``slot_deadline``, a monotonic time, or for good), whose connect
        deadline (the DSN's ``connect_timeout``, else ``connect_timeout``; psycopg: 2 s at least) bounds a hung host."""
        with self._borrowed() as pool:
            conn = None
            if pool is not None and pool.get_stats().get("pool_available", 0):
                try:
                    conn = pool.getconn(timeout=0.2)
                except PoolTimeout:  # taken meanwhile: a connection of its own instead
                    conn = None
            if conn is not None and pool is not None:
                try:
                    with conn.transaction():
                        _read_only(conn, statement_timeout_ms)
                        yield conn
                finally:
                    pool.putconn(conn)
                return
        extra: dict[str, Any] = (
            {} if "connect_timeout" in conninfo_to_dict(self.dsn) else {"connect_timeout": connect_timeout}
        )
        extra.update(self._session_options(self.dsn))
        with (
            self._own_connection(slot_deadline),
            psycopg.connect(self.dsn, application_name=application_name, **extra) as own,
            own.transaction(),
        ):
            _read_only(own, statement_timeout_ms)
            yield own

    @contextmanager
    def _borrowed(self) -> Iterator[ConnectionPool | None]:
        """This process's pool, kept open while the block runs, if it is open now; None otherwise (nothing opens)."""
        if self.keeper is None:
            yield self.pool if self.pool_is_open() else None
            return
        with self.keeper.borrow(self) as open_now:
            yield self.pool if open_now else None

    def _own_connection(self, deadline: float | None) -> AbstractContextManager[None]:
        return self.keeper.own_connection(deadline) if self.keeper is not None else nullcontext()


def _read_only(conn: psycopg.Connection, statement_timeout_ms: int) -> None:
    conn.execute(statement("set_read_only"))
    conn.execute(statement("set_statement_timeout"), {"ms": str(statement_timeout_ms)})
