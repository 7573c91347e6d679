"""The scheduled retention purges: one job per table (STYLE: jobs are named purge_<table>), each on the crontab
line of its schedule setting, each a run of ``jobs.purge_run.run_purge``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timezone

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from idemdash.core.settings import BY_NAME, ConfigError, Settings
from idemdash.jobs.fleet_schedule import spread
from idemdash.jobs.job_ids import job_id
from idemdash.jobs.purge_run import TABLES, PurgeResult, run_purge
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

# where `every <duration>` schedules count from: the same fire times in every scheduler process
EVERY_FROM = datetime(2000, 1, 1, tzinfo=timezone.utc)
SCHEDULE_SETTING = {"keys": "PURGE_KEYS_SCHEDULE", "inbox": "PURGE_INBOX_SCHEDULE", "outbox": "PURGE_OUTBOX_SCHEDULE"}


def purge_keys(target: Target, once_per_seconds: float | None = None) -> PurgeResult | None:
    return _scheduled(target, "keys", once_per_seconds)


def purge_inbox(target: Target, once_per_seconds: float | None = None) -> PurgeResult | None:
    return _scheduled(target, "inbox", once_per_seconds)


def purge_outbox(target: Target, once_per_seconds: float | None = None) -> PurgeResult | None:
    return _scheduled(target, "outbox", once_per_seconds)


JOBS: Mapping[str, Callable[..., PurgeResult | None]] = {
    "keys": purge_keys,
    "inbox": purge_inbox,
    "outbox": purge_outbox,
}


def _scheduled(target: Target, table: str, once_per_seconds: float | None) -> PurgeResult | None:
    """One scheduled run; with ``once_per_seconds``, none when another scheduler's run of the table started within
    that long (several schedulers share the database, see jobs.fleet_schedule)."""
    try:
        return run_purge(target, table, dry_run=False, started_by="scheduler", once_per_seconds=once_per_seconds)
    except ConfigError as exc:  # a bad setting: one line each time, and the scheduler runs the other jobs
        log.error("scheduled purge of %s could not run: %s", table, exc)
        return None
    except Exception:  # a bug: its traceback, once per run, and the scheduler lives on
        log.exception("scheduled purge of %s could not run", table)
        return None


def schedule_trigger(config: Settings, table: str):
    """The table's trigger (UTC) from its schedule setting (a crontab line, or ``every <duration>`` counted from
    ``EVERY_FROM``), or None when the setting is ``off``."""
    schedule = BY_NAME[SCHEDULE_SETTING[table]]
    try:
        # the setting's own parser again: overrides (tests, the demo) skip parsing at load
        value = schedule.parse(str(config.value(schedule.name)))
    except ValueError as exc:
        raise ConfigError(f"{schedule.env}: {exc}") from None
    if value == "off":
        return None
    if value.startswith("every "):
        return IntervalTrigger(seconds=int(value[6:-1]), start_date=EVERY_FROM, timezone=timezone.utc)
    return CronTrigger.from_crontab(value, timezone=timezone.utc)


def register(scheduler, target: Target) -> list[str]:
    """Add the purge jobs whose schedule is not ``off``; returns their ids. Bad schedules raise ConfigError."""
    triggers = {table: schedule_trigger(target.settings, table) for table in TABLES}  # all validated first
    added = []
    for table, trigger in triggers.items():
        if trigger is None:
            log.info("purge of %s is not scheduled (%s=off)", table, BY_NAME[SCHEDULE_SETTING[table]].env)
            continue
        job = JOBS[table]
        # a fixed offset per database spreads a fleet's runs; at most one scheduled run per half period
        trigger, period = spread(trigger, target.name, job.__name__, target.settings)
        scheduler.add_job(
            job,
            trigger,
            args=[target],
            kwargs={"once_per_seconds": period / 2 or None},
            id=job_id(job.__name__, target),
            name=f"retention purge of {table} ({target.name})",
            replace_existing=True,
        )
        added.append(job_id(job.__name__, target))
    return added
