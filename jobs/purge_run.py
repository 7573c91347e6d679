"""Retention purges (docs/operations.md, Retention purges): what may go, in small batches, one runner per table,
every run recorded.

- keys: terminal rows (``succeeded``, ``failed_final``) whose ``expires_at`` has passed. Never
  ``processing`` or ``failed_retryable``, however old.
- inbox: rows whose ``processed_at`` is older than ``INBOX_RETENTION_DAYS``.
- outbox: rows with status ``published`` whose ``published_at`` is older than ``OUTBOX_RETENTION_DAYS``.
  Never pending or any other status (a published row without ``published_at`` is kept too).

A run holds a session-level advisory lock for its table on a connection of its
own (a second runner records ``skipped`` and returns at once), reaps runs of the
table left ``running`` by a runner that died, forgets its table's runs older than
the history retention, then works on a second connection:

1. a table range-partitioned by time first loses the partitions in which every row
   is eligible (``jobs.partition_drops``);
2. the rest goes in batches (``jobs.purge_batches``): each one short transaction
   with ``SET LOCAL`` ``statement_timeout`` and ``lock_timeout``, rows taken in the
   order they became due through an index of due rows (or, without one, along the
   primary key) after the previous batch's last row with ``FOR UPDATE SKIP
   LOCKED`` (a row an application transaction holds is left for the next run,
   never waited for), the run's progress updated by the same statement, and paced
   by a duty cycle (``jobs.pacing``).

A run stops at its time budget. A dry run counts the same rows in the same order
(and lists the partitions it would drop) and deletes nothing.

A run that cannot reach the database, or loses it before its outcome is
written, is kept in memory (``jobs.unrecorded``) and recorded with its real
times once the database answers: the next run writes it before it starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import psycopg

from idemdash.core.statuses import PURGE_ENDS, PurgeMethod
from idemdash.jobs.failures import describe_error, describe_outage, lost
from idemdash.jobs.partition_detach import PartitionEvent
from idemdash.jobs.partition_drops import drop_partitions
from idemdash.jobs.purge_batches import (
    CANCELLED,
    RunContext,
    cancelled_error,
    plan_units,
    record_pacing_safely,
    run_batches,
)
from idemdash.jobs.purge_settings import RETENTION_SETTING, PurgeSettings
from idemdash.jobs.unrecorded import UNRECORDED, UnrecordedRun
from idemdash.queries import purge_batches, purges
from idemdash.queries.purge_probe import Pacing
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

__all__ = [
    "OUTCOMES",
    "RETENTION_SETTING",
    "TABLES",
    "PartitionEvent",
    "PurgeResult",
    "PurgeSettings",
    "describe_error",
    "run_purge",
]

TABLES = purges.TABLES
OUTCOMES = PURGE_ENDS


@dataclass(frozen=True)
class PurgeResult:
    run_id: int | None  # None only when the run could not even be recorded (database unreachable:
    # then it is recorded later, see jobs.unrecorded)
    table: str  # 'keys', 'inbox' or 'outbox'
    outcome: str  # 'succeeded' | 'failed' | 'skipped' | 'budget_exhausted' | 'cancelled'
    batches: int  # committed batches (dry run: counted chunks)
    rows: int  # rows deleted (dry run: rows that would be deleted), dropped partitions' rows included
    dry_run: bool
    error: str | None
    method: PurgeMethod | None = None  # how the batches found their rows
    partitions_dropped: int = 0  # whole partitions dropped (a dry run: none)


def run_purge(
    target: Target,
    table: str,
    *,
    dry_run: bool,
    started_by: str,
    by_person: bool = False,
    on_start: Callable[[int], None] | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    on_partition: Callable[[PartitionEvent], None] | None = None,
    cancel: Callable[[], str | None] | None = None,
    once_per_seconds: float | None = None,
) -> PurgeResult:
    """One purge run of ``table`` now; never raises for database trouble (the outcome says ``failed``).

    ``once_per_seconds`` (the scheduler's runs, several schedulers sharing a database): a run that finds the lock
    taken, or a run by the same starter begun within that long, records nothing and returns ``skipped`` with no
    run id, so schedulers that lose the race do not fill the history with skipped runs.

    ``by_person``: started from the dashboard, the API or the command line (not the scheduler), so the run is
    also recorded in the audit log, in the statement that records it in the purge history.

    Raises ValueError for an unknown table and ConfigError for an impossible setting (before touching
    the database).

    ``on_start(run_id)`` is called as soon as the run's ``idemdash.purge_run`` row exists (also for a
    skipped run); ``on_batch(batches, rows)`` after every committed batch with the running totals;
    ``on_partition(event)`` for each partition dropped, listed (dry run) or kept. ``cancel()`` says who, in this
    process, asked the run to stop after its current batch (None: nobody); a cancel asked through the database
    (``POST /api/v1/purges/<run_id>/cancel``) is read between batches too. Either ends the run ``cancelled``.
    """
    if table not in TABLES:
        raise ValueError(f"unknown purge table {table!r}: expected one of {', '.join(TABLES)}")
    settings = PurgeSettings.from_config(target.settings, table)
    dsn = target.dsn
    run_id: int | None = None
    ctx: RunContext | None = None
    lock_conn: psycopg.Connection | None = None
    work_conn: psycopg.Connection | None = None
    started = time.monotonic()
    started_at = datetime.now(timezone.utc)
    interrupted: BaseException | None = None
    unreachable = False
    method = None
    try:
        lock_conn = target.connect(f"idemdash-purge-{table}")
        UNRECORDED.flush(lock_conn, dsn)  # runs from an outage first, before this one could call them dead
        if once_per_seconds is not None:
            if _done_elsewhere(lock_conn, table, started_by, once_per_seconds):
                lock_conn.close()
                return PurgeResult(None, table, "skipped", 0, 0, dry_run, None)
        elif not purges.try_purge_lock(lock_conn, table):
            skipped = purges.insert_skipped_purge_run(
                lock_conn, table, dry_run=dry_run, started_by=started_by, audited=by_person
            )
            lock_conn.close()
            log.info("purge %s: skipped (run %d): %s", table, skipped.run_id, skipped.error)
            if on_start is not None:
                on_start(skipped.run_id)
            return PurgeResult(skipped.run_id, table, "skipped", 0, 0, dry_run, skipped.error)

        run_id = purges.insert_purge_run(lock_conn, table, dry_run=dry_run, started_by=started_by, audited=by_person)
        # We hold the table's lock, so no other runner is alive: any other 'running' row is a dead runner's.
        for dead in purges.fail_dead_purge_runs(lock_conn, table, run_id):
            log.warning("purge %s: run %d was left 'running' by a runner that died; recorded as failed", table, dead)
        forgotten = purges.delete_old_purge_runs(lock_conn, table, settings.history_retention_days)
        if forgotten:
            log.info("purge %s: forgot %d run(s) older than %d days", table, forgotten, settings.history_retention_days)
        log.info("purge %s: run %d started%s by %s", table, run_id, " (dry run)" if dry_run else "", started_by)
        if on_start is not None:
            on_start(run_id)
        work_conn = target.connect(f"idemdash-purge-{table}-batches")
        ctx = RunContext(
            table,
            target.tables,
            settings,
            run_id,
            dry_run,
            work_conn,
            lock_conn,
            deadline=started + settings.time_budget_seconds,
            on_batch=on_batch,
            cancel=cancel,
            connect_probe=lambda: target.connect(f"idemdash-purge-{table}-probe"),
        )
        outcome, error, method = _work(ctx, lambda: target.connect(f"idemdash-purge-{table}-detach"), on_partition)
    except Exception as exc:  # a purge never takes its caller (the scheduler, a web request) down with it
        # no run row and no connection: the database is unreachable, not merely refusing this statement
        unreachable = run_id is None and isinstance(exc, psycopg.OperationalError) and lost(lock_conn)
        outcome, error = "failed", (describe_outage if unreachable else describe_error)(exc, dsn)
        if not unreachable:
            log.error("purge %s%s failed: %s", table, f" run {run_id}" if run_id else "", error)
    except KeyboardInterrupt as exc:  # Ctrl-C on `idemdash purge`: record it, then stop as asked
        error = "cancelled at once (Ctrl-C twice): the batch in flight was rolled back"
        outcome, interrupted = CANCELLED, exc
    finally:
        if work_conn is not None:
            work_conn.close()  # a batch in flight is rolled back with its connection
        pacing = ctx.pacer.finish() if ctx is not None else None  # stops watching the application

    if run_id is not None and not _finish(target, lock_conn, table, run_id, outcome, error, pacing):
        UNRECORDED.add(
            UnrecordedRun(
                dsn, table, dry_run, started_by, started_at, datetime.now(timezone.utc), outcome, error, run_id
            )
        )
    if lock_conn is not None:
        lock_conn.close()  # releases the session lock even if the explicit unlock did not run
    if interrupted is not None:
        raise interrupted
    if unreachable:
        waiting = UNRECORDED.add(
            UnrecordedRun(dsn, table, dry_run, started_by, started_at, datetime.now(timezone.utc), outcome, error)
        )
        # one line per run, no traceback: an outage fails every run the same way until it ends
        log.error("purge %s failed: %s (recorded when the database answers; %d run(s) waiting)", table, error, waiting)
        return PurgeResult(None, table, outcome, 0, 0, dry_run, error)
    progress = ctx.progress if ctx is not None else None
    batches, rows = (progress.batches, progress.rows) if progress else (0, 0)
    dropped = progress.partitions_dropped if progress else 0
    log.info(
        "purge %s: run %s %s: %d batch(es)%s, %d row(s)%s in %.1fs",
        table,
        run_id,
        outcome,
        batches,
        f" ({method})" if method else "",
        rows,
        " counted" if dry_run else " deleted",
        time.monotonic() - started,
    )
    return PurgeResult(run_id, table, outcome, batches, rows, dry_run, error, method, dropped)


def _done_elsewhere(lock_conn: psycopg.Connection, table: str, started_by: str, seconds: float) -> bool:
    """Another runner holds the table's lock, or one ran this period already (the lock, taken, is given back);
    False: the lock is taken and held for this run."""
    if not purges.try_purge_lock(lock_conn, table):
        log.debug("purge %s: another runner holds its lock; nothing recorded", table)
        return True
    if purges.started_within(lock_conn, table, started_by, seconds):
        purges.release_purge_lock(lock_conn, table)
        log.debug("purge %s: a run by %s began within %.0fs; nothing recorded", table, started_by, seconds)
        return True
    return False


def _work(
    ctx: RunContext, connect: Callable[[], psycopg.Connection], on_partition: Callable[[PartitionEvent], None] | None
) -> tuple[str, str | None, PurgeMethod | None]:
    """Partitions first, then batches; the outcome, error and the batches' method."""
    stop, accounted = drop_partitions(ctx, connect, on_partition)
    if stop is not None:
        by = ctx.cancelled_by() if stop == CANCELLED else None
        return stop, None if by is None else cancelled_error(by, ctx.progress), None
    units = plan_units(ctx, accounted)
    method = purge_batches.run_method([u.order for u in units])
    purges.set_purge_run_method(ctx.lock_conn, ctx.run_id, method)
    outcome, error = run_batches(ctx, units)
    return outcome, error, method


def _finish(
    target: Target,
    lock_conn: psycopg.Connection | None,
    table: str,
    run_id: int,
    outcome: str,
    error: str | None,
    pacing: Pacing | None = None,
) -> bool:
    """Close the run's row (with what its pacer measured) and release the lock; on a fresh connection if the lock's
    connection broke.

    False when the outcome could not be written (the row stays 'running' until it is).
    """
    try:
        if lock_conn is not None and not lost(lock_conn):
            if pacing is not None:
                record_pacing_safely(lock_conn, run_id, pacing)
            purges.finish_purge_run(lock_conn, run_id, outcome, error)
            purges.release_purge_lock(lock_conn, table)
            return True
    except psycopg.Error as exc:
        log.warning(
            "purge %s run %d: could not record the outcome on its own connection: %s",
            table,
            run_id,
            describe_error(exc, target.dsn),
        )
    try:
        with target.connect(f"idemdash-purge-{table}") as conn:
            purges.finish_purge_run(conn, run_id, outcome, error)
            return True
    except psycopg.Error as exc:
        # Kept in memory and written when the database answers again (the next run writes it first).
        log.error(
            "purge %s run %d: could not record outcome %s yet: %s",
            table,
            run_id,
            outcome,
            describe_error(exc, target.dsn),
        )
        return False
