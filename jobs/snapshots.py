"""The snapshot job: every SNAPSHOT_INTERVAL_SECONDS, record the overview's headline numbers and the rows
purged since the previous snapshot into ``idemdash.metric_snapshot``, and drop snapshots past
SNAPSHOT_RETENTION_DAYS (one bounded batch per run). The overview draws its trend lines from these rows.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import psycopg
from apscheduler.schedulers.base import BaseScheduler

from idemdash.jobs.failures import already_logged, describe_failure
from idemdash.jobs.fleet_schedule import offset_seconds
from idemdash.jobs.job_ids import job_id
from idemdash.queries import snapshots, statement
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

JOB_ID = "snapshot"
# Counting the application tables may take longer than a page may; still bounded.
MIN_STATEMENT_TIMEOUT_MS = 10_000
DELETE_BATCH = 5000


def run_snapshot(target: Target, *, min_gap_seconds: float | None = None) -> snapshots.Snapshot | None:
    """Take one snapshot now; None when another replica took one moments ago (or holds the lock)."""
    config = target.settings
    interval = config.snapshot_interval_seconds
    # A second scheduler replica finds the snapshot its twin just wrote and skips.
    gap = interval / 2 if min_gap_seconds is None else min_gap_seconds
    timeout = max(config.statement_timeout_ms, MIN_STATEMENT_TIMEOUT_MS)
    with target.connect("idemdash-snapshot") as conn, conn.transaction():
        conn.execute(statement("set_serial"))  # in the background: one core
        conn.execute(statement("set_statement_timeout"), {"ms": str(timeout)})
        conn.execute(statement("set_lock_timeout"), {"ms": str(config.lock_timeout_ms)})
        snapshot = snapshots.take_snapshot(conn, target.tables, config, interval_seconds=interval, min_gap_seconds=gap)
        deleted = snapshots.delete_old_snapshots(
            conn, retention_days=config.snapshot_retention_days, limit=DELETE_BATCH
        )
    if deleted:
        log.info("dropped %d metric snapshot(s) older than %d days", deleted, config.snapshot_retention_days)
    return snapshot


def snapshot_job(target: Target) -> str:
    """The scheduled entry point: a failed snapshot is logged (one line) and the next one tries again.

    Returns 'succeeded', 'skipped' (another replica took one) or 'failed'. A missed snapshot is not made up
    later: the trend has a gap where the database was away, which is what happened.
    """
    try:
        return "succeeded" if run_snapshot(target) is not None else "skipped"
    except psycopg.Error as exc:
        # an outage: the target logged its cause once; a line per run would repeat it every interval
        say = log.debug if already_logged(exc, target.problems) else log.warning
        say("metric snapshot skipped: %s", describe_failure(exc, target.dsn))
        return "failed"


def register(scheduler: BaseScheduler, target: Target) -> None:
    """Add the snapshot job; its first run is right away (a fleet's member: after its fixed offset within
    FLEET_JOB_SPREAD_SECONDS, so a fleet's snapshots do not all start at once), so trends start with the scheduler."""
    interval = target.settings.snapshot_interval_seconds
    offset = offset_seconds(target.name, JOB_ID, min(target.settings.fleet_job_spread_seconds, interval))
    scheduler.add_job(
        snapshot_job,
        "interval",
        seconds=interval,
        id=job_id(JOB_ID, target),
        name="metric snapshot",
        args=[target],
        replace_existing=True,
        next_run_time=datetime.now(timezone.utc) + timedelta(seconds=offset),
    )
