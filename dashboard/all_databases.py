"""The all-databases overview's numbers, refreshed in the background: no request waits for the fleet.

Each app (one per web worker) keeps every database's last answer and a few threads that ask them again, the most
overdue first: IDEMDASH_FLEET_REFRESH_THREADS of them however many databases there are, each database every
IDEMDASH_FLEET_REFRESH_SECONDS. An ask reads in a READ ONLY transaction with STATEMENT_TIMEOUT_MS, on an idle
connection of the database's web pool when there is one, else on a connection of its own that it closes after
(``Target.read_once``; its deadline, CONNECT_TIMEOUT_SECONDS or the url's own connect_timeout, also covers a host
that accepts and never answers): at rest the refresh holds no connection, at its busiest one per thread. A
connection of its own takes one of the slots the worker's budget keeps for the background reads, which it shares with
/metrics and the all-databases search (queries/pool_budget.py), waiting for one when they are all taken. A database
that failed is asked again after twice the interval, then four times, … up to BACKOFF_MAX_SECONDS, so hosts that hang or
refuse do not take the threads from those that answer. A request copies what is there: each row says when it was
answered, or that it was not yet.

The threads start at the app's first request (``start``), never at import nor in a gunicorn master that forks
its workers afterwards: a process that finds the threads were started by another pid starts its own.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from idemdash.core.dsn import endpoint
from idemdash.core.parsers import split_environment
from idemdash.core.settings import Settings
from idemdash.queries import fleet_numbers, purge_history
from idemdash.queries.catalog import ShapeNotFound
from idemdash.queries.target import Target

# how long each database's statements may run
STATEMENT_TIMEOUT_MS = 1500
# how long connecting may take, unless the database's url sets its connect_timeout (psycopg, like libpq: 2 s at least)
CONNECT_TIMEOUT_SECONDS = 2
# the longest a database that failed waits for its next ask
BACKOFF_MAX_SECONDS = 300.0
# the refresh's sessions, as pg_stat_activity names them
APPLICATION_NAME = "idemdash-refresh"
THREAD_PREFIX = "idemdash-refresh"


@dataclass(frozen=True)
class DatabaseRow:
    name: str
    label: str  # where it is: host:port/database, never the password
    environment: tuple[str, str] | None  # its IDEMDASH_ENVIRONMENT band: (name, colour)
    reachable: bool
    summary: fleet_numbers.DatabaseSummary | None
    problem: str | None  # why there are no numbers: the cause and its fix (core.diagnosis)
    transient: bool  # the problem may go away on its own (down, slow), not a setting to fix
    milliseconds: float | None  # how long it took to answer
    profile: str = "reference"  # whose tables it holds: its summary reads them through that profile
    as_of: datetime | None = None  # when this answer (or failure) came; None: not answered yet
    asking: bool = False  # being asked right now
    failures: int = 0  # asks in a row that failed: each waits twice as long as the one before
    next_ask: datetime | None = None  # when it is asked again; None while it is being asked
    # its purges per table (the all-databases purges view); None: not answered, or purges_problem says why not
    purges: tuple[purge_history.PurgeTableStatus, ...] | None = None
    purges_problem: str | None = None

    @property
    def pending(self) -> bool:
        """Not answered yet (nor failed): no numbers and no problem to show."""
        return self.as_of is None

    def age_seconds(self, now: datetime) -> float | None:
        return None if self.as_of is None else max(0.0, (now - self.as_of).total_seconds())


@dataclass
class _State:
    row: DatabaseRow  # the last answer, or a pending row
    due: float = 0.0  # time.monotonic() of its next ask
    asking: bool = False
    failures: int = 0


class AllDatabases:
    """One per app: what each database last answered, and the threads that keep asking."""

    def __init__(self, targets: Mapping[str, Target], settings: Settings) -> None:
        self.targets = targets
        self.interval = float(settings.fleet_refresh_seconds)
        self.threads = settings.fleet_refresh_threads
        self.backoff_max = max(BACKOFF_MAX_SECONDS, self.interval)
        self._cond = threading.Condition()
        self._states = {
            name: _State(_row(name, target, None, None, True, answered=False)) for name, target in targets.items()
        }
        self._workers: list[threading.Thread] = []
        self._pid: int | None = None
        self._stopped = False

    # -- what a request reads ---------------------------------------------------------------------------------

    def rows(self) -> list[DatabaseRow]:
        """Every database's last answer, at once: never waits for one."""
        self.start()
        now_wall, now = datetime.now(timezone.utc), time.monotonic()
        with self._cond:
            return [
                replace(
                    state.row,
                    asking=state.asking,
                    failures=state.failures,
                    next_ask=None if state.asking else now_wall + timedelta(seconds=max(0.0, state.due - now)),
                )
                for state in self._states.values()
            ]

    def replace_targets(self, targets: Mapping[str, Target]) -> None:
        """The databases served now (a fleet's members joined or left): a new one waits for its first ask, soon; one
        that left is asked no more (an ask of it under way is dropped)."""
        with self._cond:
            self.targets = targets
            self._states = {
                name: self._states.get(name) or _State(_row(name, target, None, None, True, answered=False))
                for name, target in targets.items()
            }
            if self._pid == os.getpid() and len(self._workers) < min(self.threads, len(self._states)):
                more = [
                    threading.Thread(target=self._work, name=f"{THREAD_PREFIX}-{i}", daemon=True)
                    for i in range(len(self._workers), min(self.threads, len(self._states)))
                ]
                self._workers += more
                for worker in more:
                    worker.start()
            self._cond.notify_all()

    # -- the refresh ------------------------------------------------------------------------------------------

    def ask_all_now(self) -> None:
        """Ask every database once, now, in this thread, and record the answers (tests; a request never calls it)."""
        for name, target in list(self.targets.items()):
            row = self._ask(name, target)
            with self._cond:
                if name in self._states:
                    self._record(name, row)

    def start(self) -> None:
        """Start this process's threads, once (cheap to call on every request)."""
        if self._pid == os.getpid() or self._stopped:
            return
        with self._cond:
            if self._pid == os.getpid() or self._stopped:
                return
            if self._pid is not None:  # forked from a process that had started: its asks never finish here
                for state in self._states.values():
                    state.asking = False
            self._pid = os.getpid()
            self._workers = [
                threading.Thread(target=self._work, name=f"{THREAD_PREFIX}-{i}", daemon=True)
                for i in range(min(self.threads, len(self._states)))
            ]
        for worker in self._workers:
            worker.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the threads; one in the middle of an ask finishes it first (within its deadlines)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            if worker.ident is not None and worker is not threading.current_thread():
                worker.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while True:
            with self._cond:
                name = self._take()
                target = self.targets.get(name) if name is not None else None
            if name is None:
                return
            if target is None:  # left the fleet meanwhile
                continue
            row = self._ask(name, target)
            with self._cond:
                if name in self._states:  # not left the fleet meanwhile
                    self._record(name, row)

    def _take(self) -> str | None:
        """The most overdue database nobody is asking, once it is due (the lock held); None once stopped."""
        while not self._stopped:
            now = time.monotonic()
            # ties (every database at the start) in the configured order
            idle = [(state.due, i, name) for i, (name, state) in enumerate(self._states.items()) if not state.asking]
            if idle:
                due, _, name = min(idle)
                if due <= now:
                    self._states[name].asking = True
                    return name
                self._cond.wait(due - now)
            else:
                self._cond.wait()
        return None

    def _record(self, name: str, row: DatabaseRow) -> None:
        state = self._states[name]
        state.row, state.asking = row, False
        state.failures = 0 if row.reachable else state.failures + 1
        wait = self.interval if not state.failures else min(self.interval * 2**state.failures, self.backoff_max)
        state.due = time.monotonic() + wait

    def _ask(self, name: str, target: Target) -> DatabaseRow:
        started = time.perf_counter()
        try:
            with target.read_once(APPLICATION_NAME, STATEMENT_TIMEOUT_MS, CONNECT_TIMEOUT_SECONDS) as conn:
                # the same numbers for every profile, each through its own tables' meanings
                summary = fleet_numbers.get_database_summary(conn, target.tables, target.settings)
                purges, purges_problem = _purge_status(conn, target)
        except ShapeNotFound as exc:
            return _row(name, target, None, str(exc), False)
        except Exception as exc:  # any failure is this database's row, never the page's
            cause = target.cause_of(exc)
            return _row(name, target, None, cause.message, cause.transient)
        return replace(
            _row(name, target, summary, None, True, (time.perf_counter() - started) * 1000, reachable=True),
            purges=purges,
            purges_problem=purges_problem,
        )


def _purge_status(conn: Any, target: Target) -> tuple[tuple[purge_history.PurgeTableStatus, ...] | None, str | None]:
    """Each table's last purge run and recent failures, in a savepoint: a database whose purge history cannot be read
    (no idemdash schema yet, a timeout) keeps its other numbers and says why its purges are missing."""
    try:
        with conn.transaction():
            return tuple(purge_history.list_purge_table_status(conn)), None
    except Exception as exc:
        return None, target.cause_of(exc).message


def _row(
    name: str,
    target: Target,
    summary: fleet_numbers.DatabaseSummary | None,
    problem: str | None,
    transient: bool,
    milliseconds: float | None = None,
    *,
    reachable: bool = False,
    answered: bool = True,
) -> DatabaseRow:
    """A database's row: what it answered now, or (``answered`` false) a row that waits for its first answer."""
    return DatabaseRow(
        name,
        endpoint(target.dsn).label,
        split_environment(target.settings.environment),
        reachable,
        summary,
        problem,
        transient,
        milliseconds,
        target.settings.profile,
        as_of=datetime.now(timezone.utc) if answered else None,
    )
