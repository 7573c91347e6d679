"""The all-databases overview's numbers: every database asked at once, each with a deadline, so that one that is
down or slow marks its own row and never holds up the page.

A database that did not answer is remembered as down: the next requests show its last problem at once instead
of waiting for it again, while one probe at a time keeps asking it in the background; its row comes back as
soon as a probe gets an answer.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from idemdash.core.dsn import endpoint
from idemdash.core.parsers import split_environment
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.queries import overview
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.target import Target

# how long a request waits for the databases it asks, all together
DEADLINE_SECONDS = 2.0
# how long each database's statements may run
STATEMENT_TIMEOUT_MS = 1500


@dataclass(frozen=True)
class DatabaseRow:
    name: str
    label: str                     # where it is: host:port/database, never the password
    environment: tuple[str, str] | None  # its IDEMDASH_ENVIRONMENT band: (name, colour)
    reachable: bool
    summary: overview.DatabaseSummary | None
    problem: str | None            # why there are no numbers: the cause and its fix (core.diagnosis)
    transient: bool                # the problem may go away on its own (down, slow), not a setting to fix
    milliseconds: float | None     # how long it took to answer
    profile: str = "reference"     # whose tables it holds: another library's has its states on /tables, no summary


class AllDatabases:
    """One per app: a thread pool that asks the databases, and what each last answered."""

    def __init__(self, targets: Mapping[str, Target]) -> None:
        self.targets = targets
        self._executor = ThreadPoolExecutor(max_workers=max(2, 2 * len(targets)),
                                            thread_name_prefix="idemdash-databases")
        self._lock = threading.Lock()
        self._down: dict[str, DatabaseRow] = {}        # databases whose last answer was a failure
        self._probing: dict[str, Future] = {}          # a down database's probe still under way

    def rows(self) -> list[DatabaseRow]:
        asked: dict[str, Future] = {}
        with self._lock:
            down = dict(self._down)  # as the request found them: a probe finishing meanwhile counts next time
            for name, target in self.targets.items():
                if name in self._down:
                    if name not in self._probing:  # one probe at a time keeps asking it, nobody waits for it
                        self._probing[name] = self._submit(name, target)
                else:
                    asked[name] = self._submit(name, target)
        wait(asked.values(), timeout=DEADLINE_SECONDS)
        rows = []
        for name, target in self.targets.items():
            future = asked.get(name)
            if future is None:
                rows.append(down[name])
            elif future.done():
                rows.append(future.result())
            else:
                rows.append(self._late(name, target))
        return rows

    def _late(self, name: str, target: Target) -> DatabaseRow:
        return _row(name, target, None, f"no answer within {DEADLINE_SECONDS:g} s: it is slow or unreachable", True)

    def _submit(self, name: str, target: Target) -> Future:
        return self._executor.submit(self._ask, name, target)

    def _ask(self, name: str, target: Target) -> DatabaseRow:
        started = time.perf_counter()
        foreign = target.settings["PROFILE"] != DEFAULT_PROFILE
        try:
            with target.read(STATEMENT_TIMEOUT_MS) as conn:
                if foreign:  # another library's tables: found where configured, their states on its /tables
                    find_configured(conn, target.settings)
                    summary = None
                else:
                    summary = overview.get_database_summary(conn, target.tables,
                                                            target.settings["DEFAULT_LEASE_SECONDS"])
        except ShapeNotFound as exc:
            row = _row(name, target, None, str(exc), False)
            with self._lock:
                self._probing.pop(name, None)
            return row
        except Exception as exc:  # any failure is this database's row, never the page's
            cause = target.cause_of(exc)
            row = _row(name, target, None, cause.message, cause.transient)
            with self._lock:
                self._down[name] = row
                self._probing.pop(name, None)
            return row
        row = _row(name, target, summary, None, True, (time.perf_counter() - started) * 1000, reachable=True)
        with self._lock:
            self._down.pop(name, None)
            self._probing.pop(name, None)
        return row


def _row(name: str, target: Target, summary: overview.DatabaseSummary | None, problem: str | None, transient: bool,
         milliseconds: float | None = None, *, reachable: bool = False) -> DatabaseRow:
    return DatabaseRow(name, endpoint(target.dsn).label, split_environment(target.settings["ENVIRONMENT"]),
                       reachable, summary, problem, transient, milliseconds, target.settings["PROFILE"])
