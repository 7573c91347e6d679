"""The APScheduler process behind `idemdash scheduler` (and the demo's in-process jobs).

Web workers do not run jobs unless IDEMDASH_RUN_JOBS=1: with several gunicorn
workers each would otherwise run every job.
"""
from __future__ import annotations

import logging
from datetime import timezone
from typing import Any, Mapping

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler

log = logging.getLogger(__name__)

JOB_DEFAULTS = {
    # A run that was missed while the process was down runs once, not N times.
    "coalesce": True,
    "max_instances": 1,
    "misfire_grace_time": 60,
}


def register_jobs(scheduler: BaseScheduler, config: Mapping[str, Any]) -> None:
    """Add every scheduled job (DESIGN section 5). A bad schedule setting raises ConfigError naming it."""
    from jobs import purges, rollups, snapshots

    # Retention purges: purge_keys, purge_inbox, purge_outbox, each on its IDEMDASH_PURGE_*_SCHEDULE (UTC).
    purges.register(scheduler, config)
    snapshots.register(scheduler, config)  # metric snapshots for the overview's trends
    rollups.register(scheduler, config)  # aggregates too slow to count per page view at millions of rows


def build(config: Mapping[str, Any], scheduler_class: type[BaseScheduler]) -> BaseScheduler:
    scheduler = scheduler_class(timezone=timezone.utc, job_defaults=JOB_DEFAULTS)
    register_jobs(scheduler, config)
    return scheduler


def start_in_background(config: Mapping[str, Any]) -> BackgroundScheduler:
    scheduler = build(config, BackgroundScheduler)
    scheduler.start()
    log.info("scheduler started in the background with %d job(s)", len(scheduler.get_jobs()))
    return scheduler  # type: ignore[return-value]


def run_blocking(config: Mapping[str, Any]) -> None:
    scheduler = build(config, BlockingScheduler)
    log.info("scheduler starting with %d job(s): %s", len(scheduler.get_jobs()),
             ", ".join(job.id for job in scheduler.get_jobs()) or "none yet")
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        log.info("scheduler stopped")
