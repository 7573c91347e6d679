"""Purge runs the database could not be told about when they happened, kept until it answers again.

A purge that cannot reach the database cannot write its ``idemdash.purge_run`` row, and one that loses the
database mid-run cannot close it. Either way the run is kept here (in this process's memory, the newest
``LIMIT``) with its real times and error, and written at the start of the next purge run that reaches the
same database, or by the ``record_unrecorded_runs`` job within ``FLUSH_INTERVAL_SECONDS``, whichever comes
first. A run leaves memory only after the transaction that recorded it committed; writing one again is a
no-op (the same table, start and starter), so a flush cut off mid-commit cannot record it twice.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime

import psycopg
from apscheduler.schedulers.base import BaseScheduler

from idemdash.jobs.failures import describe_error
from idemdash.jobs.job_ids import job_id
from idemdash.queries import purges
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

LIMIT = 100
FLUSH_INTERVAL_SECONDS = 30
JOB_ID = "record_unrecorded_runs"


@dataclass(frozen=True, eq=False)  # identity, not value: two equal failures are two runs
class UnrecordedRun:
    dsn: str  # the database it belongs to (a run is only ever written where it ran)
    table: str
    dry_run: bool
    started_by: str
    started_at: datetime
    finished_at: datetime
    outcome: str  # 'failed' when it never reached the database; else whatever the run ended with
    error: str | None
    run_id: int | None = None  # set when its row exists, still 'running', and only the ending was lost


class UnrecordedRuns:
    def __init__(self, limit: int = LIMIT) -> None:
        self._runs: deque[UnrecordedRun] = deque(maxlen=limit)
        self._lock = threading.Lock()  # guards _runs and dropped
        self._flushing = threading.Lock()  # one flush at a time, so no run is written by two threads
        self.dropped = 0  # runs pushed out by newer ones before they could be written

    def add(self, run: UnrecordedRun) -> int:
        """Keep ``run``; returns how many wait for its database."""
        with self._lock:
            if len(self._runs) == self._runs.maxlen:
                self.dropped += 1
            self._runs.append(run)
            return sum(1 for r in self._runs if r.dsn == run.dsn)

    def waiting(self, dsn: str | None = None) -> list[UnrecordedRun]:
        with self._lock:
            return [r for r in self._runs if dsn is None or r.dsn == dsn]

    def clear(self) -> None:
        with self._lock:
            self._runs.clear()
            self.dropped = 0

    def flush(self, conn: psycopg.Connection, dsn: str) -> int:
        """Write the runs waiting for ``dsn`` on ``conn`` (autocommit) in one transaction; returns how many
        were written. Never raises for database trouble: the runs stay for the next flush."""
        if not self._flushing.acquire(blocking=False):
            return 0  # another thread is writing them right now
        try:
            runs = self.waiting(dsn)
            if not runs:
                return 0
            try:
                with conn.transaction():
                    for run in runs:
                        _write(conn, run)
            except psycopg.Error as exc:
                log.warning("%d purge run(s) from an outage still unrecorded: %s", len(runs), describe_error(exc, dsn))
                return 0
            written = {id(r) for r in runs}
            with self._lock:
                kept = [r for r in self._runs if id(r) not in written]
                self._runs.clear()
                self._runs.extend(kept)
                dropped, self.dropped = self.dropped, 0
            log.info(
                "recorded %d purge run(s) that failed while the database was unreachable%s",
                len(runs),
                f" ({dropped} older one(s) were not kept)" if dropped else "",
            )
            return len(runs)
        finally:
            self._flushing.release()


def _write(conn: psycopg.Connection, run: UnrecordedRun) -> None:
    if run.run_id is None:
        purges.insert_unrecorded_purge_run(
            conn,
            run.table,
            dry_run=run.dry_run,
            started_by=run.started_by,
            started_at=run.started_at,
            finished_at=run.finished_at,
            error=run.error or "database unreachable",
        )
    else:
        purges.finish_unrecorded_purge_run(conn, run.run_id, run.outcome, run.finished_at, run.error)


# This process's runs (the scheduler's, the CLI's, the web process's "Run now").
UNRECORDED = UnrecordedRuns()


def record_unrecorded_runs(target: Target) -> str:
    """The scheduled flush: connects only when runs are waiting. Returns 'idle', 'succeeded' or 'failed'."""
    dsn = target.dsn
    if not UNRECORDED.waiting(dsn):
        return "idle"
    try:
        with target.connect("idemdash-purge-history") as conn:
            UNRECORDED.flush(conn, dsn)
    except psycopg.Error as exc:
        log.info(
            "%d purge run(s) from an outage wait for the database: %s",
            len(UNRECORDED.waiting(dsn)),
            describe_error(exc, dsn),
        )
        return "failed"
    return "failed" if UNRECORDED.waiting(dsn) else "succeeded"


def register(scheduler: BaseScheduler, target: Target) -> None:
    scheduler.add_job(
        record_unrecorded_runs,
        "interval",
        seconds=FLUSH_INTERVAL_SECONDS,
        id=job_id(JOB_ID, target),
        name="record purge runs that failed during an outage",
        args=[target],
        replace_existing=True,
    )
