"""What the journey and the learned routes ask each database (queries/journey.py), and the routes this worker has
learned, kept for a minute and learned again in the background when older (``RouteBook``).

A library's tables are found once per database and kept (``idemdash detect``'s catalog read is not repeated for
each journey); the reference tables are read under their configured names.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import psycopg

from idemdash.core.journey import Consumed, KeyStep, Sent
from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found
from idemdash.core.routes import Learned, learn
from idemdash.core.time_parsers import zone_name
from idemdash.dashboard import one_model
from idemdash.dashboard.fan_out import ask_all
from idemdash.queries import journey
from idemdash.queries.catalog import find_configured
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.target import Target

ROUTES_WINDOW_SECONDS = 3600  # the recent window routes are learned from
ROUTES_MAX_AGE_SECONDS = 60  # learned routes older than this are learned again, in the background
APPLICATION_NAME = "idemdash-journey"

# a library's tables, as first found, by database (its name and where it is): asked from the fan-out's threads,
# outside any app context, so kept here rather than in the app
_found: dict[tuple[str, str], Found] = {}
_found_lock = threading.Lock()


def where(target: Target, conn: psycopg.Connection) -> journey.Where:
    settings = target.settings
    name = settings.profile
    zone = zone_name(settings.library_timezone)
    if one_model.owns_tables(settings):  # idemdash's own tables, by their configured names
        return journey.Where(name, target.tables, None, zone)
    with _found_lock:
        found = _found.get((target.name, target.dsn))
    if found is None or found.profile != name:
        found = find_configured(conn, settings)
        with _found_lock:
            _found[(target.name, target.dsn)] = found
    return journey.Where(name, target.tables, found, zone)


def unfollowed(targets: Mapping[str, Target]) -> dict[str, str]:
    """The databases whose library records no message id the journey can follow, and why."""
    return {
        name: f"{profile(t.settings.profile).library} records no message id the journey can follow (docs/profiles.md)"
        for name, t in targets.items()
        if not journey.profile_follows(t.settings.profile)
    }


@dataclass(frozen=True)
class Recorded:
    keys: list[KeyStep]
    sent: list[Sent]
    consumed: list[Consumed]


def recorded(q: str, *, inbox: bool):
    """The first round's read: the key ``q`` names, the outbox rows of ``q``, and with ``inbox`` the inbox rows of
    ``q`` as a message id (so that an outbox id or a message id takes one round, not two)."""

    def read(target: Target, conn: psycopg.Connection) -> Recorded:
        at = where(target, conn)
        keys = journey.find_keys(conn, at, q, lease_seconds=target.settings.default_lease_seconds)
        return Recorded(keys, journey.find_sent(conn, at, q), journey.find_consumed(conn, at, [q]) if inbox else [])

    return read


def consuming(ids: list[str]):
    def read(target: Target, conn: psycopg.Connection) -> list[Consumed]:
        return journey.find_consumed(conn, where(target, conn), ids)

    return read


def _recent(since: datetime):
    def read(target: Target, conn: psycopg.Connection) -> tuple[list[Sent], list[Consumed]]:
        at = where(target, conn)
        return journey.list_recent_sent(conn, at, since), journey.list_recent_consumed(conn, at, since)

    return read


class RouteBook:
    """The routes this worker learned last, and when; learned again when asked for and older than a minute."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.learned: Learned | None = None
        self._learning = False

    def learn(
        self, targets: Mapping[str, Target], keeper: PoolBudget, skip: Mapping[str, str], deadline: float
    ) -> Learned:
        now = datetime.now(timezone.utc)
        asked = ask_all(
            targets,
            _recent(now - timedelta(seconds=ROUTES_WINDOW_SECONDS)),
            keeper=keeper,
            ends=time.monotonic() + deadline,
            application_name=APPLICATION_NAME,
            skip={**skip, **unfollowed(targets)},
        )
        sent = [(db, row) for db, (rows, _) in asked.answers.items() for row in rows]
        consumed = [(db, row) for db, (_, rows) in asked.answers.items() for row in rows]
        learned = Learned(learn(sent, consumed), now, ROUTES_WINDOW_SECONDS, asked.not_answered)
        with self._lock:
            self.learned, self._learning = learned, False
        return learned

    def current(
        self, targets: Mapping[str, Target], keeper: PoolBudget, skip: Mapping[str, str], deadline: float
    ) -> Learned:
        """The routes learned last: learned now when there are none, and again in the background when stale."""
        with self._lock:
            learned, stale = (
                self.learned,
                self.learned is not None
                and not self._learning
                and (datetime.now(timezone.utc) - self.learned.learned_at).total_seconds() > ROUTES_MAX_AGE_SECONDS,
            )
            if stale:
                self._learning = True
        if learned is None:
            return self.learn(targets, keeper, skip, deadline)
        if stale:
            threading.Thread(
                target=self.learn, args=(targets, keeper, skip, deadline), daemon=True, name="idemdash-routes"
            ).start()
        return learned
