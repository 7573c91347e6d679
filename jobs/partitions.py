"""The partitions job: keep the partitioned reference inbox and outbox (``idemdash init-app-schema --partitioned``)
supplied with daily partitions ``IDEMDASH_PARTITIONS_AHEAD_DAYS`` ahead, on ``IDEMDASH_PARTITIONS_SCHEDULE``.

A row whose time has no partition cannot be inserted at all, so the job runs often (hourly by default) and
right away when the scheduler starts. It only touches tables that are partitioned and whose schema has the
reference schema's ``create_time_partitions``; an application's own partitioned tables are its own business
(pg_partman and the like). The purges drop old partitions (``jobs.partition_drops``).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import psycopg
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.cron import CronTrigger

from idemdash.core.settings import BY_NAME, ConfigError
from idemdash.jobs.failures import already_logged, describe_failure
from idemdash.jobs.job_ids import job_id
from idemdash.queries import partitions, purges
from idemdash.queries.app_schema import PARTITIONED_TABLES, create_time_partitions, has_partition_function
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

JOB_ID = "create_partitions"
TIMEOUT_MS = 60_000


def create_partitions(target: Target) -> dict[str, int]:
    """Make the missing daily partitions from today to the days ahead; how many per table ({} if none managed)."""
    ahead = target.settings.partitions_ahead_days
    created: dict[str, int] = {}
    with target.connect("idemdash-partitions") as conn:
        if not has_partition_function(conn, target.tables):
            return created
        now = datetime.now(timezone.utc)
        for table in PARTITIONED_TABLES:
            if not partitions.list_table_partitions(conn, target.tables, table):
                continue
            with conn.transaction():
                purges.set_purge_timeouts(conn, TIMEOUT_MS, TIMEOUT_MS)
                created[table] = create_time_partitions(conn, target.tables, table, now, now + timedelta(days=ahead))
            if created[table]:
                log.info("created %d upcoming partition(s) of %s", created[table], getattr(target.tables, table))
    return created


def partitions_job(target: Target) -> str:
    """The scheduled entry point: 'succeeded' or 'failed' (logged in one line; the next run tries again)."""
    try:
        create_partitions(target)
        return "succeeded"
    except psycopg.Error as exc:
        say = log.debug if already_logged(exc, target.problems) else log.warning  # the target said why, once
        say("creating upcoming partitions failed: %s", describe_failure(exc, target.dsn))
        return "failed"


def register(scheduler: BaseScheduler, target: Target) -> str | None:
    """Add the job unless its schedule is ``off``; its first run is right away. A bad schedule raises ConfigError."""
    schedule = BY_NAME["PARTITIONS_SCHEDULE"]
    try:
        value = schedule.parse(str(target.settings.partitions_schedule))
    except ValueError as exc:
        raise ConfigError(f"{schedule.env}: {exc}") from None
    if value == "off":
        return None
    scheduler.add_job(
        partitions_job,
        CronTrigger.from_crontab(value, timezone=timezone.utc),
        id=job_id(JOB_ID, target),
        name="upcoming partitions",
        args=[target],
        replace_existing=True,
        next_run_time=datetime.now(timezone.utc),
    )
    return job_id(JOB_ID, target)
