"""What the application is doing while a purge runs: a thread that looks at its backends in ``pg_stat_activity``
every ``INTERVAL`` on a connection of its own (``queries.purge_probe.look_at_application``), for the governor
(``jobs.latency``). A look writes nothing: it adds no commit and no WAL of its own for the application to wait on.

Each look is marked **busy** when a batch was in flight while it ran, or the last batch had ended less than
``BUSY_AFTER`` before it began (what a batch leaves for the WAL writer); the rest are quiet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import psycopg

from idemdash.jobs.latency import Look
from idemdash.queries import purge_probe

log = logging.getLogger(__name__)

INTERVAL = 0.01  # seconds between the starts of two looks
BUSY_AFTER = 0.005  # a look this soon after a batch's end still sees that batch
MAX_PENDING = 100_000  # looks not yet handed to the governor (it reads them after every batch)


class ApplicationWatch(threading.Thread):
    def __init__(
        self, connect: Callable[[], psycopg.Connection], run_id: int, purge_pids: list[int], interval: float = INTERVAL
    ) -> None:
        super().__init__(name=f"idemdash-purge-watch-{run_id}", daemon=True)
        self._connect, self.run_id, self.purge_pids, self.interval = connect, run_id, purge_pids, interval
        self._lock = threading.Lock()
        self._looks: list[Look] = []
        self._busy = False
        self._batch_ended = 0.0
        self._stop_event = threading.Event()
        self.failed: str | None = None  # why looking stopped early

    # -- the purge loop tells the watch when a batch is in flight ------------------------------------------
    def batch_started(self) -> None:
        self._busy = True

    def batch_ended(self) -> None:
        self._batch_ended = time.monotonic()
        self._busy = False

    def new_looks(self) -> list[Look]:
        with self._lock:
            fresh, self._looks = self._looks, []
        return fresh

    # -- the thread -------------------------------------------------------------------------------------------
    def run(self) -> None:
        conn: psycopg.Connection | None = None
        try:
            conn = self._connect()
            conn.autocommit = True
            next_at = time.monotonic()
            while not self._stop_event.is_set():
                began = time.monotonic()
                busy = self._busy or began - self._batch_ended < BUSY_AFTER
                seen = purge_probe.look_at_application(conn, self.purge_pids)
                look = Look(
                    seen.active,
                    seen.wal_waits,
                    seen.lock_waits,
                    seen.longest_ms,
                    busy=busy or self._busy or self._batch_ended > began,
                )
                with self._lock:
                    if len(self._looks) < MAX_PENDING:
                        self._looks.append(look)
                next_at += self.interval
                self._stop_event.wait(max(0.0, next_at - time.monotonic()))
                if next_at < time.monotonic():
                    next_at = time.monotonic()  # fell behind: no burst to catch up
        except psycopg.Error as exc:  # the purge goes on, paced by its duty cycle alone
            self.failed = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning(
                "purge run %d: looking at the application stopped (%s); the duty cycle alone paces the rest",
                self.run_id,
                self.failed,
            )
        finally:
            if conn is not None:
                conn.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)
