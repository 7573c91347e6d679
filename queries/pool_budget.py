"""One web worker's connections: its databases' pools, opened when first used and closed when idle, within a budget.

With several databases (IDEMDASH_CONFIG) a database's pool opens when a request first reads or writes it (``lease``),
not at start, and closes once no request has used it for IDEMDASH_FLEET_IDLE_SECONDS. Each open pool reserves what it
may grow to (POOL_MAX_SIZE, twice with a ``read_url``), and the background reads reserve theirs (``background``: the
all-databases refresh's threads and /metrics' one reader, each a connection at most); together they stay within
IDEMDASH_FLEET_MAX_CONNECTIONS. Opening a pool past it first closes the least recently used pool no request is using;
when every open pool is in use, the request waits up to POOL_TIMEOUT_SECONDS for one to be released, then fails with
``BudgetExhausted`` (a 503 naming the setting). Two requests opening the same pool at once open one.

The background reads' connections of their own (``own_connection``: the refresh, /metrics, and the all-databases
search's asks) share the ``background`` slots reserved for them: a read that finds every slot taken waits for one, up
to its deadline (``NoConnectionFree`` then), never past the budget. Every fan-out of a request across databases runs
on this worker's one bounded pool of threads (``fan_out``), whatever the number of requests.

With one database its pool opens at start and stays open, as it always did: no budget applies (``lazy`` false), but
the connections are counted the same way for /health and /metrics.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from idemdash.core.settings import ConfigError
from idemdash.queries.budget_errors import MAX_CONNECTIONS as MAX_CONNECTIONS
from idemdash.queries.budget_errors import BudgetExhausted as BudgetExhausted
from idemdash.queries.budget_errors import NoConnectionFree as NoConnectionFree
from idemdash.queries.pool_usage import Pooled, Usage

REAPER_THREAD = "idemdash-pool-idle"
FAN_OUT_THREAD = "idemdash-fan-out"


@dataclass
class _Open:
    target: Pooled
    reserved: int
    last_used: float
    in_use: int = 0


class PoolBudget:
    def __init__(
        self,
        targets: Mapping[str, Pooled],
        *,
        lazy: bool,
        budget: int,
        idle_seconds: float,
        background: int,
        wait_seconds: float,
        fan_out_threads: int = 1,
    ) -> None:
        self.targets, self.lazy, self.budget = targets, lazy, budget
        self.idle_seconds, self.background, self.wait_seconds = idle_seconds, background, wait_seconds
        self.fan_out_threads = max(1, fan_out_threads)
        self._fan_out: ThreadPoolExecutor | None = None
        self._cond = threading.Condition()
        self._open: dict[str, _Open] = {}
        self._closing = 0  # reservations of pools being closed (their connections are not gone yet)
        self._own = 0  # connections the background reads hold of their own
        self._pid = os.getpid()
        self._reaper: threading.Thread | None = None
        self._stopped = False
        if lazy:
            self._check_room()
        else:  # one database: opened at start, as always
            for target in targets.values():
                target.open_pool()
                self._open[target.name] = _Open(target, target.pool_reservation, time.monotonic())

    def _check_room(self) -> None:
        if not self.targets:
            return
        biggest = max(self.targets.values(), key=lambda t: t.pool_reservation)
        need = self.background + biggest.pool_reservation
        if self.budget < need:
            raise ConfigError(
                f"{MAX_CONNECTIONS} ({self.budget}) leaves no room for database {biggest.name}'s pool: the background "
                f"reads take {self.background} (IDEMDASH_FLEET_REFRESH_THREADS, and one for /metrics) and its pool up "
                f"to {biggest.pool_reservation} (IDEMDASH_POOL_MAX_SIZE, twice with a read_url); set it to {need} at "
                "least"
            )

    # -- a request's use of a pool ----------------------------------------------------------------------------

    @contextmanager
    def lease(self, target: Pooled) -> Iterator[None]:
        """The target's pool is open, and stays open, while the block runs."""
        self._acquire(target)
        try:
            yield
        finally:
            self._release(target)

    @contextmanager
    def borrow(self, target: Pooled) -> Iterator[bool]:
        """True, and the pool kept open while the block runs, when the target's pool is open now; False (nothing
        opened) otherwise: a background read then connects on its own, inside ``own_connection``."""
        with self._cond:
            self._forked()
            entry = self._open.get(target.name)
            if entry is None or not target.pool_is_open():
                borrowed = False
            else:
                entry.in_use += 1
                borrowed = True
        if not borrowed:
            yield False
            return
        try:
            yield True
        finally:
            self._release(target, touch=False)  # a background read does not keep a pool from closing

    @contextmanager
    def own_connection(self, deadline: float | None = None) -> Iterator[None]:
        """A slot for a background read's connection of its own, held while the block runs. With several databases
        the slots are the ``background`` the budget reserves: when all are taken this waits for one until
        ``deadline`` (a ``time.monotonic()``; None: as long as it takes), then raises ``NoConnectionFree``."""
        started = time.monotonic()
        with self._cond:
            self._forked()
            while self.lazy and self._own >= self.background:
                remaining = None if deadline is None else deadline - time.monotonic()
                if self._stopped or (remaining is not None and remaining <= 0):
                    raise NoConnectionFree(self.background, time.monotonic() - started)
                self._cond.wait(remaining)
            self._own += 1
        try:
            yield
        finally:
            with self._cond:
                self._own = max(0, self._own - 1)
                self._cond.notify_all()

    def fan_out(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        """``fn(*args)`` on this worker's one pool of ``fan_out_threads`` threads, shared by every request that asks
        many databases at once: the threads stay bounded however many requests come (each read inside still takes
        its connection through ``own_connection``)."""
        with self._cond:
            self._forked()
            if self._fan_out is None:
                self._fan_out = ThreadPoolExecutor(max_workers=self.fan_out_threads, thread_name_prefix=FAN_OUT_THREAD)
            return self._fan_out.submit(fn, *args)

    def _acquire(self, target: Pooled) -> None:
        deadline = time.monotonic() + self.wait_seconds
        while True:
            victim: _Open | None = None
            with self._cond:
                self._forked()
                entry = self._open.get(target.name)
                if entry is not None and target.pool_is_open():
                    entry.in_use += 1
                    entry.last_used = time.monotonic()
                    return
                self._open.pop(target.name, None)  # opened by the process this one was forked from
                need = target.pool_reservation
                if not self.lazy or self._reserved() + need <= self.budget:
                    target.open_pool()
                    self._open[target.name] = _Open(target, need, time.monotonic(), in_use=1)
                    self._start_reaper()
                    return
                idle = [e for e in self._open.values() if e.in_use == 0]
                if idle:
                    victim = min(idle, key=lambda e: e.last_used)
                    pools = self._detach(victim)
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise BudgetExhausted(target.name, self.budget, len(self._open), self.wait_seconds)
                    self._cond.wait(remaining)
            if victim is not None:
                self._close(victim, pools)

    def _release(self, target: Pooled, *, touch: bool = True) -> None:
        with self._cond:
            entry = self._open.get(target.name)
            if entry is not None and entry.in_use > 0:
                entry.in_use -= 1
                if touch:
                    entry.last_used = time.monotonic()
            self._cond.notify_all()

    # -- closing ----------------------------------------------------------------------------------------------

    def _detach(self, entry: _Open) -> list[Any]:
        """Out of the open set (the lock held); its reservation stays counted until its connections are closed."""
        del self._open[entry.target.name]
        self._closing += entry.reserved
        return entry.target.take_pools()

    def _close(self, entry: _Open, pools: list[Any]) -> None:
        try:
            for pool in pools:
                pool.close(timeout=1.0)
        finally:
            with self._cond:
                self._closing = max(0, self._closing - entry.reserved)
                self._cond.notify_all()

    def _start_reaper(self) -> None:
        if self.lazy and self._reaper is None and not self._stopped:
            self._reaper = threading.Thread(target=self._reap, name=REAPER_THREAD, daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        """Close each pool no request has used for ``idle_seconds``."""
        while True:
            expired: list[tuple[_Open, list[Any]]] = []
            with self._cond:
                if self._stopped or self._pid != os.getpid():
                    return
                now = time.monotonic()
                unused = [e for e in self._open.values() if e.in_use == 0]
                for entry in unused:
                    if now - entry.last_used >= self.idle_seconds:
                        expired.append((entry, self._detach(entry)))
                if not expired:
                    waits = [e.last_used + self.idle_seconds - now for e in unused]
                    self._cond.wait(max(0.05, min(waits)) if waits else None)
                    continue
            for entry, pools in expired:
                self._close(entry, pools)

    def forget(self, target: Pooled) -> None:
        """A database no longer served (it left its fleet): its pool out of the budget, closed."""
        with self._cond:
            entry = self._open.get(target.name)
            pools = self._detach(entry) if entry is not None else []
        if entry is not None:
            self._close(entry, pools)

    def close(self) -> None:
        """Stop closing idle pools (the app is closing every pool itself)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            fan_out, self._fan_out = self._fan_out, None
        if fan_out is not None:
            fan_out.shutdown(wait=False, cancel_futures=True)
        reaper = self._reaper
        if reaper is not None and reaper is not threading.current_thread() and reaper.ident is not None:
            reaper.join(5)

    # -- what this worker holds -------------------------------------------------------------------------------

    def usage(self) -> Usage:
        with self._cond:
            self._forked()
            entries = [e for e in self._open.values() if e.target.pool_is_open()]
            reserved = self._reserved()
            own = self._own
        return Usage(
            self.lazy,
            self.budget if self.lazy else None,
            self.idle_seconds if self.lazy else None,
            len(entries),
            sum(e.target.pool_connections() for e in entries),
            own,
            reserved,
        )

    def _reserved(self) -> int:
        return self.background + self._closing + sum(e.reserved for e in self._open.values())

    def _forked(self) -> None:
        """A worker forked from a process that had pools: they are not ours (each target opens its own again)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._open.clear()
            self._closing = self._own = 0
            self._reaper = None
            self._fan_out = None  # its threads were the parent's
