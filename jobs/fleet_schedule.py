"""How one scheduler process spreads a fleet's jobs over time and bounds how many run at once.

- **A bounded executor.** Every database's jobs run on one thread pool of ``FLEET_JOB_CONCURRENCY`` threads; a job
  due while all are busy waits in its queue (late, never missed: ``misfire_grace_time`` is None, and with
  ``coalesce`` and ``max_instances=1`` a job waits at most once). Fleet discovery has a thread of its own, so it is
  never stuck behind the databases' jobs.
- **A fixed offset per database.** A database's purges fire ``offset`` seconds after their schedule and its first
  snapshot ``offset`` seconds after the scheduler starts: a stable hash of the database's name and the job, within
  ``FLEET_JOB_SPREAD_SECONDS`` (and at most half the schedule's shortest period). The same in every process, so two
  schedulers fire a database's purge at the same moment and its advisory lock picks one.
- **Once per period.** A scheduled purge that takes the lock first asks whether a scheduled run of the table started
  within half the period (another process's, done already): then it records nothing and returns (see
  ``jobs.purge_run``).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.triggers.base import BaseTrigger

from idemdash.core.databases import DEFAULT
from idemdash.core.settings import Settings

# the executor of fleet discovery (every database's own jobs use the default one)
CONTROL = "control"
# fire times looked at to find a schedule's shortest period
_PERIOD_SAMPLES = 6


def executors(config: Settings) -> dict[str, ThreadPoolExecutor]:
    return {"default": ThreadPoolExecutor(config.fleet_job_concurrency), CONTROL: ThreadPoolExecutor(1)}


def shortest_period(trigger: BaseTrigger, now: datetime | None = None) -> float:
    """The shortest gap, in seconds, between the trigger's next few fire times (a day for a daily schedule)."""
    at = now or datetime.now(timezone.utc)
    times: list[datetime] = []
    previous = None
    for _ in range(_PERIOD_SAMPLES):
        fire = trigger.get_next_fire_time(previous, at)
        if fire is None:
            break
        times.append(fire)
        previous, at = fire, fire + timedelta(microseconds=1)
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)]
    return min(gaps) if gaps else 0.0


def offset_seconds(database: str, job: str, limit: float) -> float:
    """A stable offset in [0, limit) from the database's name and the job: the same in every process and run."""
    if limit <= 0 or database == DEFAULT:
        return 0.0
    digest = hashlib.sha256(f"{database}\0{job}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * limit


class OffsetTrigger(BaseTrigger):
    """Another trigger's fire times, each ``offset`` seconds later."""

    def __init__(self, trigger: BaseTrigger, offset: float) -> None:
        self.trigger, self.offset = trigger, timedelta(seconds=offset)

    def get_next_fire_time(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
        previous = None if previous_fire_time is None else previous_fire_time - self.offset
        fire = self.trigger.get_next_fire_time(previous, now - self.offset)
        return None if fire is None else fire + self.offset

    def __str__(self) -> str:
        return f"{self.trigger} + {self.offset.total_seconds():.1f}s"


def spread(trigger: BaseTrigger, database: str, job: str, config: Settings) -> tuple[BaseTrigger, float]:
    """The trigger with the database's offset, and the schedule's shortest period (seconds)."""
    period = shortest_period(trigger)
    limit = min(float(config.fleet_job_spread_seconds), period / 2)
    offset = offset_seconds(database, job, limit)
    return (OffsetTrigger(trigger, offset) if offset else trigger), period
