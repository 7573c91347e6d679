"""The APScheduler process behind `idemdash scheduler` (and the demo's in-process jobs).

Web workers do not run jobs unless IDEMDASH_RUN_JOBS=1: with several gunicorn
workers each would otherwise run every job.

No job lets a database outage out: each catches it, logs one line and tries again at its next time on
a fresh connection. A listener logs, in one line each, what still reaches the scheduler (a job that raised:
a bug; a run missed or skipped because the previous one was still running) and keeps every job's last
outcome (``last_outcomes``).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypeVar

from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobEvent,
    JobExecutionEvent,
)
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler

from idemdash.core.databases import load_config
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.settings import Settings
from idemdash.jobs import library_purge, partitions, purges, rollups, snapshots, unrecorded
from idemdash.jobs.fleet_jobs import FleetJobs, known, membership
from idemdash.jobs.fleet_schedule import executors
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

# build() hands back the kind of scheduler it was asked for (background for the web app, blocking for the command)
S = TypeVar("S", bound=BaseScheduler)

JOB_DEFAULTS = {
    # A run that was missed while the process was down runs once, not N times.
    "coalesce": True,
    "max_instances": 1,
    # a run waiting for one of the FLEET_JOB_CONCURRENCY threads runs late rather than never (jobs.fleet_schedule)
    "misfire_grace_time": None,
}


def register_jobs(scheduler: BaseScheduler, target: Target) -> None:
    """Add every scheduled job for the target's database. A bad schedule setting raises ConfigError naming it."""
    if target.settings.profile != DEFAULT_PROFILE:
        # another library's tables: only the purges of what the library counts as finished (jobs/library_purge.py),
        # and its states' counts that are slow to count per page view
        library_purge.register(scheduler, target)
        rollups.register(scheduler, target)
        return
    # Retention purges: purge_keys, purge_inbox, purge_outbox, each on its IDEMDASH_PURGE_*_SCHEDULE (UTC).
    purges.register(scheduler, target)
    unrecorded.register(scheduler, target)  # purge runs that failed during an outage, written once it ends
    snapshots.register(scheduler, target)  # metric snapshots for the overview's trends
    rollups.register(scheduler, target)  # aggregates too slow to count per page view at millions of rows
    partitions.register(scheduler, target)  # upcoming partitions of the partitioned reference inbox and outbox


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    at: datetime  # when the run was due (a missed run: the time it missed)
    outcome: str  # the job's own ('succeeded', 'failed', 'skipped', ...), or 'raised' / 'missed'
    error: str | None


class JobMonitor:
    """Scheduler listener: one log line per job that raised or missed its time, and each job's last outcome."""

    MASK = EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, JobOutcome] = {}

    def __call__(self, event: JobEvent) -> None:
        # execution events carry one run time, submission events (max instances) a list of them
        at = (
            getattr(event, "scheduled_run_time", None)
            or next(iter(getattr(event, "scheduled_run_times", [])), None)
            or datetime.now(timezone.utc)
        )
        if event.code == EVENT_JOB_EXECUTED:
            retval = getattr(event, "retval", None)
            outcome = getattr(retval, "outcome", retval)
            self._set(
                JobOutcome(
                    event.job_id, at, outcome if isinstance(outcome, str) else "failed", getattr(retval, "error", None)
                )
            )
        elif event.code == EVENT_JOB_ERROR:
            assert isinstance(event, JobExecutionEvent)
            first_line = (str(event.exception).strip().splitlines() or [""])[0]
            error = f"{type(event.exception).__name__}: {first_line}"
            # APScheduler logs the traceback; jobs catch what they expect, so this is a bug worth one
            log.error("job %s raised %s; it runs again at its next time", event.job_id, error)
            self._set(JobOutcome(event.job_id, at, "raised", error))
        elif event.code == EVENT_JOB_MISSED:
            log.warning(
                "job %s missed its run at %s (the process was busy or stopped)",
                event.job_id,
                at.isoformat(timespec="seconds"),
            )
            self._set(JobOutcome(event.job_id, at, "missed", None))
        else:  # EVENT_JOB_MAX_INSTANCES
            log.warning(
                "job %s skipped its run at %s: the previous run is still going",
                event.job_id,
                at.isoformat(timespec="seconds"),
            )

    def _set(self, outcome: JobOutcome) -> None:
        with self._lock:
            self._last[outcome.job_id] = outcome

    def last(self) -> dict[str, JobOutcome]:
        with self._lock:
            return dict(self._last)


_MONITORS: weakref.WeakKeyDictionary[BaseScheduler, JobMonitor] = weakref.WeakKeyDictionary()


def last_outcomes(scheduler: BaseScheduler) -> dict[str, JobOutcome]:
    """Each job's last outcome in a scheduler made by ``build`` (jobs that have not run yet are absent)."""
    monitor = _MONITORS.get(scheduler)
    return monitor.last() if monitor is not None else {}


def build(
    config: Settings,
    scheduler_class: type[S],
    targets: Sequence[Target] | None = None,
    *,
    discover: bool = False,
) -> S:
    """A scheduler with every job of ``targets`` (default: every database of IDEMDASH_CONFIG, or the one of
    IDEMDASH_DATABASE_URL); each database's jobs are its own, so one failing never stops the others'. Without
    ``targets``, or with ``discover`` (they are every database of IDEMDASH_CONFIG), a fleet's members' jobs come and
    go as they are found."""
    # every database's jobs share FLEET_JOB_CONCURRENCY threads: hundreds of databases never run all at once
    scheduler = scheduler_class(timezone=timezone.utc, job_defaults=JOB_DEFAULTS, executors=executors(config))
    monitor = JobMonitor()
    scheduler.add_listener(monitor, JobMonitor.MASK)
    _MONITORS[scheduler] = monitor
    if targets is None:  # every database, and a fleet's members as they come and go
        described, found = membership(config)
        targets = [Target.from_settings(d.settings, d.name) for d in found.databases]
        FleetJobs(scheduler, described, found, register_jobs).add_discovery(config.fleet_discover_seconds)
    elif discover:
        described = load_config(config)
        FleetJobs(scheduler, described, known(described, targets), register_jobs).add_discovery(
            config.fleet_discover_seconds
        )
    for target in targets:
        register_jobs(scheduler, target)
    return scheduler


def start_in_background(config: Settings) -> BackgroundScheduler:
    scheduler = build(config, BackgroundScheduler)
    scheduler.start()
    log.info("scheduler started in the background with %d job(s)", len(scheduler.get_jobs()))
    return scheduler


def run_blocking(config: Settings, targets: Sequence[Target] | None = None, *, discover: bool = False) -> None:
    scheduler = build(config, BlockingScheduler, targets, discover=discover)
    log.info(
        "scheduler starting with %d job(s): %s",
        len(scheduler.get_jobs()),
        ", ".join(job.id for job in scheduler.get_jobs()) or "none yet",
    )
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        log.info("scheduler stopped")
