"""The throttle on failed sign-ins (IDEMDASH_AUTH=basic; docs/security.md, Failed sign-ins).

At most ``PER_ADDRESS`` failed sign-ins from one client address, and ``PER_NAME`` for one user name (known or not,
so that the throttle tells nothing about which names exist), in any ``WINDOW_SECONDS``. Past either, every sign-in
from that address or for that name, right password or not, is answered 429 with ``Retry-After`` (the seconds until
the oldest counted failure leaves the window) without checking the password.

Kept in this process's memory: each gunicorn worker counts on its own, so with W workers a guesser gets at most W
times the limits. Not in PostgreSQL: signing in must not wait on (or fail with) a database, and with several
databases there is no one database whose ``idemdash`` schema would be the right one.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

log = logging.getLogger(__name__)

PER_ADDRESS = 20
PER_NAME = 10
WINDOW_SECONDS = 300
# how many addresses and names are remembered at once; past it the least recently failed are forgotten first
MAX_TRACKED = 10_000


class SignInThrottle:
    def __init__(
        self,
        *,
        per_address: int = PER_ADDRESS,
        per_name: int = PER_NAME,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = {"address": per_address, "name": per_name}
        self.window = window
        self.clock = clock
        self._failures: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, address: str, name: str) -> int | None:
        """Seconds to wait before this address may sign in again, or anyone as this name; None: go ahead."""
        now = self.clock()
        with self._lock:
            waits = [self._wait(key, now) for key in self._keys(address, name)]
        wait = max((w for w in waits if w is not None), default=None)
        return None if wait is None else max(1, math.ceil(wait))

    def failed(self, address: str, name: str) -> None:
        """Count one failed sign-in against the address and the name."""
        now = self.clock()
        with self._lock:
            for key in self._keys(address, name):
                times = self._failures.setdefault(key, deque())
                self._prune(times, now)
                times.append(now)
                self._failures.move_to_end(key)
                if len(times) == self.limits[key[0]]:
                    log.warning(
                        "basic sign-in: %d failed sign-ins for %s %r within %d s: refusing it (429) until they age out",
                        len(times),
                        key[0],
                        key[1],
                        self.window,
                    )
            while len(self._failures) > MAX_TRACKED:
                self._failures.popitem(last=False)

    @staticmethod
    def _keys(address: str, name: str) -> tuple[tuple[str, str], ...]:
        return (("address", address), ("name", name[:200]))

    def _prune(self, times: deque[float], now: float) -> None:
        while times and times[0] <= now - self.window:
            times.popleft()

    def _wait(self, key: tuple[str, str], now: float) -> float | None:
        times = self._failures.get(key)
        if times is None:
            return None
        self._prune(times, now)
        if not times:
            del self._failures[key]
            return None
        over = len(times) - self.limits[key[0]]
        return None if over < 0 else times[over] + self.window - now
