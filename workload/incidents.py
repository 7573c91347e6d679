"""Incidents that come and go: now and then a "bad deploy" of one scope makes that scope's workers crash holding
their keys for a while (stuck keys with, and without, committed effects), then the deploy is rolled back.

The schedule is drawn from the run's seed: gaps of ``every`` seconds on average (between half and one and a half
times that), each incident lasting ``length`` seconds and adding about ``stuck_per_second`` crashed keys a second
across all clients, whatever the request rate.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

# the host a bad deploy went out to first: its crashes name it, so the hotspot and stuck lists point at it
BAD_DEPLOY_WORKER = "api-3"


@dataclass(frozen=True)
class Incident:
    scope: str
    started: float  # time.monotonic()
    ends: float


class Incidents:
    """A thread-safe schedule of bad deploys; the clients ask it, per request, whether to crash."""

    def __init__(
        self,
        scopes: tuple[str, ...],
        *,
        every: float,
        length: float,
        stuck_per_second: float,
        request_rate: float,
        seed: int | None = None,
        first_after: float | None = None,
    ) -> None:
        if every <= 0 or length <= 0 or stuck_per_second <= 0 or request_rate <= 0:
            raise ValueError("every, length, stuck_per_second and request_rate must be positive")
        self.scopes = scopes
        self.every, self.length = every, length
        # per request: the share of all requests that crash during an incident (at most every one of them)
        self.crash_share = min(1.0, stuck_per_second / request_rate)
        self._rng = random.Random(f"{seed}:incidents") if seed is not None else random.Random()
        self._lock = threading.Lock()
        self._current: Incident | None = None
        self._next = time.monotonic() + (first_after if first_after is not None else self._gap())
        self.started = 0

    def _gap(self) -> float:
        return self.every * self._rng.uniform(0.5, 1.5)

    def current(self, now: float | None = None) -> Incident | None:
        """The incident under way now, if any (starting and ending incidents as time passes)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if self._current is not None and now >= self._current.ends:
                log.info("incident over: the bad deploy of %s was rolled back", self._current.scope)
                self._current = None
                self._next = now + self._gap()
            if self._current is None and now >= self._next:
                scope = self._rng.choice(self.scopes)
                self._current = Incident(scope, now, now + self.length)
                self.started += 1
                log.info(
                    "incident: a bad deploy of %s on %s crashes its workers for the next %.0fs",
                    scope,
                    BAD_DEPLOY_WORKER,
                    self.length,
                )
            return self._current

    def crash_scope(self, rng: random.Random) -> str | None:
        """The scope this request crashes in (an incident is under way and the draw says so), else None."""
        incident = self.current()
        if incident is None or rng.random() >= self.crash_share:
            return None
        return incident.scope
