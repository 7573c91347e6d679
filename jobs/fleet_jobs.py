"""The scheduler's databases when IDEMDASH_CONFIG has fleets: each member's jobs are added when it is found (at start,
and by the ``discover_fleets`` job every FLEET_DISCOVER_SECONDS) and removed when it leaves (its database dropped, or
no longer matching the pattern). A fleet's server that does not answer keeps the members it had."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from apscheduler.schedulers.base import BaseScheduler

from idemdash.core.databases import Config, DatabaseConfig, load_config
from idemdash.core.settings import Settings
from idemdash.jobs.fleet_schedule import CONTROL
from idemdash.queries.fleets import Membership, resolve
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

JOB_ID = "discover_fleets"


def membership(config: Settings) -> tuple[Config, Membership]:
    described = load_config(config)
    return described, resolve(described)


def known(config: Config, targets: Sequence[Target]) -> Membership:
    """The membership ``targets`` stand for (found by the caller): each pattern fleet's members among them."""
    found = {
        fleet.name: tuple(t.name.partition("/")[2] for t in targets if t.name.partition("/")[0] == fleet.name)
        for fleet in config.fleets
        if fleet.discovered
    }
    return Membership([DatabaseConfig(t.name, t.settings) for t in targets], found)


class FleetJobs:
    """Keeps each fleet member's jobs in ``scheduler`` as members join and leave."""

    def __init__(
        self,
        scheduler: BaseScheduler,
        config: Config,
        found: Membership,
        register: Callable[[BaseScheduler, Target], None],
    ) -> None:
        self.scheduler, self.config, self.membership, self.register = scheduler, config, found, register

    def add_discovery(self, seconds: int) -> None:
        if any(fleet.discovered for fleet in self.config.fleets):
            self.scheduler.add_job(self.discover, "interval", seconds=seconds, id=JOB_ID, name=JOB_ID, executor=CONTROL)

    def discover(self) -> Membership:
        before = set(self.membership.names)
        self.membership = resolve(self.config, self.membership)
        for database in self.membership.databases:
            if database.name not in before:
                log.info("database %s joined its fleet: its jobs are scheduled", database.name)
                self.register(self.scheduler, Target.from_settings(database.settings, database.name))
        left = before - set(self.membership.names)
        for job in self.scheduler.get_jobs():
            if job.id.rpartition("@")[2] in left:
                job.remove()
        for name in sorted(left):
            log.info("database %s left its fleet: its jobs are removed", name)
        return self.membership
