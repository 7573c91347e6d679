"""Retention purges (DESIGN section 5): what may go, in small batches, one runner per table, every run recorded.

- keys: terminal rows (``succeeded``, ``failed_final``) whose ``expires_at`` has passed. Never
  ``processing`` or ``failed_retryable``, however old.
- inbox: rows whose ``processed_at`` is older than ``INBOX_RETENTION_DAYS``.
- outbox: rows with status ``published`` whose ``published_at`` is older than ``OUTBOX_RETENTION_DAYS``.
  Never pending or any other status (a published row without ``published_at`` is kept too).

A run holds a session-level advisory lock for its table on a connection of its
own (a second runner records ``skipped`` and returns at once), reaps runs of the
table left ``running`` by a runner that died, then deletes batch by batch on a
second connection: each batch one short transaction with ``SET LOCAL``
``statement_timeout`` and ``lock_timeout``, rows taken in primary-key order
after the previous batch's last key with ``FOR UPDATE SKIP LOCKED`` (a row an
application transaction holds is left for the next run, never waited for), and
the run's progress updated by the same statement. A batch that times out is
rolled back and the batch size halves; a run stops at its time budget. A dry
run counts the same rows in key-ordered chunks and deletes nothing.

A run that cannot reach the database, or loses it before its outcome is
written, is kept in memory (``jobs.unrecorded``) and recorded with its real
times once the database answers: the next run writes it before it starts.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import psycopg
from psycopg import errors

from core.settings import BY_NAME, ConfigError
from jobs.db import describe_error, describe_outage, lost
from jobs.unrecorded import UNRECORDED, UnrecordedRun
from queries import Tables
from queries import purges as q
from queries.target import Target

log = logging.getLogger(__name__)

TABLES = q.TABLES
OUTCOMES = ("succeeded", "failed", "skipped", "budget_exhausted")
# A timed-out batch halves the batch size down to this floor (or the configured size, if smaller) ...
MIN_BATCH_SIZE = 100
# ... and a run whose batches still time out this many times in a row at the floor gives up as failed.
TIMEOUTS_AT_FLOOR = 3
# Which setting holds each table's retention (keys carry their own expires_at) and schedule.
RETENTION_SETTING = {"keys": None, "inbox": "INBOX_RETENTION_DAYS", "outbox": "OUTBOX_RETENTION_DAYS"}

_DELETE = {"keys": q.delete_expired_keys, "inbox": q.delete_old_inbox_rows,
           "outbox": q.delete_old_published_outbox_rows}
_COUNT = {"keys": q.count_expired_keys, "inbox": q.count_old_inbox_rows, "outbox": q.count_old_published_outbox_rows}


@dataclass(frozen=True)
class PurgeResult:
    run_id: int | None        # None only when the run could not even be recorded (database unreachable:
                              # then it is recorded later, see jobs.unrecorded)
    table: str                # 'keys', 'inbox' or 'outbox'
    outcome: str              # 'succeeded' | 'failed' | 'skipped' | 'budget_exhausted'
    batches: int              # committed batches (dry run: counted chunks)
    rows: int                 # rows deleted (dry run: rows that would be deleted)
    dry_run: bool
    error: str | None


@dataclass(frozen=True)
class PurgeSettings:
    batch_size: int
    statement_timeout_ms: int
    lock_timeout_ms: int
    pause_ms: int
    time_budget_seconds: float
    retention_days: int | None
    replay_horizon_seconds: int

    @classmethod
    def from_config(cls, config: Mapping[str, Any], table: str) -> "PurgeSettings":
        retention = RETENTION_SETTING[table]
        return cls(
            batch_size=_positive(config, "PURGE_BATCH_SIZE"),
            statement_timeout_ms=_positive(config, "PURGE_STATEMENT_TIMEOUT_MS"),
            lock_timeout_ms=_positive(config, "PURGE_LOCK_TIMEOUT_MS"),
            pause_ms=setting(config, "PURGE_PAUSE_MS"),
            time_budget_seconds=_positive(config, "PURGE_TIME_BUDGET_SECONDS"),
            retention_days=_positive(config, retention) if retention else None,
            replay_horizon_seconds=_positive(config, "REPLAY_HORIZON"),
        )


def setting(config: Mapping[str, Any], name: str) -> Any:
    return config.get(name, BY_NAME[name].default)


def _positive(config: Mapping[str, Any], name: str) -> Any:
    value = setting(config, name)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{BY_NAME[name].env}: expected a positive number, got {value!r}")
    return value


@dataclass
class _Progress:
    batches: int = 0
    rows: int = 0


def run_purge(target: Target, table: str, *, dry_run: bool, started_by: str, by_person: bool = False,
              on_start: Callable[[int], None] | None = None,
              on_batch: Callable[[int, int], None] | None = None) -> PurgeResult:
    """One purge run of ``table`` now; never raises for database trouble (the outcome says ``failed``).

    ``by_person``: started from the dashboard, the API or the command line (not the scheduler), so the run is
    also recorded in the audit log, in the statement that records it in the purge history.

    Raises ValueError for an unknown table and ConfigError for an impossible setting (before touching
    the database).

    ``on_start(run_id)`` is called as soon as the run's ``idemdash.purge_run`` row exists (also for a
    skipped run); ``on_batch(batches, rows)`` after every committed batch with the running totals.
    """
    if table not in TABLES:
        raise ValueError(f"unknown purge table {table!r}: expected one of {', '.join(TABLES)}")
    settings = PurgeSettings.from_config(target.settings, table)
    tables = target.tables
    dsn = target.dsn
    progress = _Progress()
    run_id: int | None = None
    lock_conn: psycopg.Connection | None = None
    work_conn: psycopg.Connection | None = None
    started = time.monotonic()
    started_at = datetime.now(timezone.utc)
    interrupted: BaseException | None = None
    unreachable = False
    try:
        lock_conn = target.connect(f"idemdash-purge-{table}")
        UNRECORDED.flush(lock_conn, dsn)  # runs from an outage first, before this one could call them dead
        if not q.try_purge_lock(lock_conn, table):
            skipped = q.insert_skipped_purge_run(lock_conn, table, dry_run=dry_run, started_by=started_by,
                                                 audited=by_person)
            lock_conn.close()
            log.info("purge %s: skipped (run %d): %s", table, skipped.run_id, skipped.error)
            if on_start is not None:
                on_start(skipped.run_id)
            return PurgeResult(skipped.run_id, table, "skipped", 0, 0, dry_run, skipped.error)

        run_id = q.insert_purge_run(lock_conn, table, dry_run=dry_run, started_by=started_by, audited=by_person)
        # We hold the table's lock, so no other runner is alive: any other 'running' row is a dead runner's.
        for dead in q.fail_dead_purge_runs(lock_conn, table, run_id):
            log.warning("purge %s: run %d was left 'running' by a runner that died; recorded as failed", table, dead)
        log.info("purge %s: run %d started%s by %s", table, run_id, " (dry run)" if dry_run else "", started_by)
        if on_start is not None:
            on_start(run_id)
        work_conn = target.connect(f"idemdash-purge-{table}-batches")
        outcome, error = _batches(table, tables, settings, run_id, dry_run, work_conn, lock_conn, progress, on_batch)
    except Exception as exc:  # a purge never takes its caller (the scheduler, a web request) down with it
        # no run row and no connection: the database is unreachable, not merely refusing this statement
        unreachable = run_id is None and isinstance(exc, psycopg.OperationalError) and lost(lock_conn)
        outcome, error = "failed", (describe_outage if unreachable else describe_error)(exc, dsn)
        if not unreachable:
            log.error("purge %s%s failed: %s", table, f" run {run_id}" if run_id else "", error)
    except KeyboardInterrupt as exc:  # Ctrl-C on `idemdash purge`: record it, then stop as asked
        outcome, error, interrupted = "failed", "interrupted (Ctrl-C) before the run finished", exc
    finally:
        if work_conn is not None:
            work_conn.close()  # a batch in flight is rolled back with its connection

    if run_id is not None and not _finish(target, lock_conn, table, run_id, outcome, error):
        UNRECORDED.add(UnrecordedRun(dsn, table, dry_run, started_by, started_at, datetime.now(timezone.utc),
                                     outcome, error, run_id))
    if lock_conn is not None:
        lock_conn.close()  # releases the session lock even if the explicit unlock did not run
    if interrupted is not None:
        raise interrupted
    if unreachable:
        waiting = UNRECORDED.add(UnrecordedRun(dsn, table, dry_run, started_by, started_at,
                                               datetime.now(timezone.utc), outcome, error))
        # one line per run, no traceback: an outage fails every run the same way until it ends
        log.error("purge %s failed: %s (recorded when the database answers; %d run(s) waiting)", table, error,
                  waiting)
        return PurgeResult(None, table, outcome, 0, 0, dry_run, error)
    log.info("purge %s: run %s %s: %d batch(es), %d row(s)%s in %.1fs", table, run_id, outcome, progress.batches,
             progress.rows, " counted" if dry_run else " deleted", time.monotonic() - started)
    return PurgeResult(run_id, table, outcome, progress.batches, progress.rows, dry_run, error)


def _batches(table: str, tables: Tables, settings: PurgeSettings, run_id: int, dry_run: bool,
             work_conn: psycopg.Connection, lock_conn: psycopg.Connection, progress: _Progress,
             on_batch: Callable[[int, int], None] | None) -> tuple[str, str | None]:
    deadline = time.monotonic() + settings.time_budget_seconds
    size = settings.batch_size
    floor = min(MIN_BATCH_SIZE, size)
    step = _COUNT[table] if dry_run else _DELETE[table]
    # keys carry their own expiry but stay while an operator's decision is within the replay horizon
    extra = ({"replay_horizon_seconds": settings.replay_horizon_seconds} if settings.retention_days is None
             else {"retention_days": settings.retention_days})
    after = None
    timeouts_at_floor = 0
    while True:
        if time.monotonic() >= deadline:
            return "budget_exhausted", None
        try:
            with work_conn.transaction():
                q.set_purge_timeouts(work_conn, settings.statement_timeout_ms, settings.lock_timeout_ms)
                batch = step(work_conn, tables, run_id, size, after, **extra)
        except (errors.QueryCanceled, errors.LockNotAvailable) as exc:
            # statement_timeout (or a cancel) or lock_timeout: nothing of this batch committed
            what = "lock_timeout" if isinstance(exc, errors.LockNotAvailable) else "statement_timeout"
            if size > floor:
                size = max(floor, size // 2)
                log.warning("purge %s run %d: a batch hit %s; batch size now %d", table, run_id, what, size)
            else:
                timeouts_at_floor += 1
                if timeouts_at_floor >= TIMEOUTS_AT_FLOOR:
                    return "failed", (f"{TIMEOUTS_AT_FLOOR} batches of {size} rows in a row hit {what} "
                                      f"({settings.statement_timeout_ms} ms statement, {settings.lock_timeout_ms} ms "
                                      f"lock): {describe_error(exc, '')}")
                log.warning("purge %s run %d: a batch of %d (the floor) hit %s", table, run_id, size, what)
            _pause(settings.pause_ms, deadline)
            continue
        timeouts_at_floor = 0
        progress.batches += 1
        progress.rows += batch.rows
        if on_batch is not None:
            on_batch(progress.batches, progress.rows)
        if batch.taken < size or batch.after is None:
            return "succeeded", None  # the key-ordered scan reached the end of the table
        after = batch.after
        q.check_purge_connection(lock_conn)  # lost it: the lock is gone, so stop before another batch
        _pause(settings.pause_ms, deadline)


def _pause(pause_ms: int, deadline: float) -> None:
    # jittered so that replicas' and tables' purges do not fall into step
    seconds = random.uniform(0.5, 1.5) * pause_ms / 1000
    time.sleep(max(0.0, min(seconds, deadline - time.monotonic())))


def _finish(target: Target, lock_conn: psycopg.Connection | None, table: str, run_id: int, outcome: str,
            error: str | None) -> bool:
    """Close the run's row and release the lock; on a fresh connection if the lock's connection broke.

    False when the outcome could not be written (the row stays 'running' until it is).
    """
    try:
        if not lost(lock_conn):
            q.finish_purge_run(lock_conn, run_id, outcome, error)
            q.release_purge_lock(lock_conn, table)
            return True
    except psycopg.Error as exc:
        log.warning("purge %s run %d: could not record the outcome on its own connection: %s", table, run_id,
                    describe_error(exc, target.dsn))
    try:
        with target.connect(f"idemdash-purge-{table}") as conn:
            q.finish_purge_run(conn, run_id, outcome, error)
            return True
    except psycopg.Error as exc:
        # Kept in memory and written when the database answers again (the next run writes it first).
        log.error("purge %s run %d: could not record outcome %s yet: %s", table, run_id, outcome,
                  describe_error(exc, target.dsn))
        return False
