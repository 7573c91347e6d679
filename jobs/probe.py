"""What the application feels while a purge runs: a thread that times a tiny write and its commit (what an
application commit costs) every ``INTERVAL`` on a connection of its own, during the purge's batches and between
them, for the latency pacer (``jobs.pacing``).

Each sample is marked **quiet** when no batch was in flight while it ran and the last batch had ended at least
``QUIET_AFTER`` before it began (the WAL writer has flushed the batch by then): those make the idle baseline, kept
fresh through the run, so a busier application raises it too. The probe writes its own row of
``idemdash.purge_probe`` (``queries/purge_probe.sql``), gone when the run ends.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import psycopg

from idemdash.queries import purge_probe

log = logging.getLogger(__name__)

INTERVAL = 0.01          # seconds between the starts of two probes
QUIET_AFTER = 0.02       # a probe this long after a batch's end, with none in flight, sees an idle server
MAX_SAMPLES = 200_000    # kept for the run's p99 (about half an hour of probing); older ones are dropped


class CommitProbe(threading.Thread):
    def __init__(self, connect: Callable[[], psycopg.Connection], run_id: int, interval: float = INTERVAL) -> None:
        super().__init__(name=f"idemdash-purge-probe-{run_id}", daemon=True)
        self._connect, self.run_id, self.interval = connect, run_id, interval
        self._lock = threading.Lock()
        self._samples: list[tuple[float, bool]] = []    # (milliseconds, quiet)
        self._read = 0                                   # samples handed out by new_samples()
        self._busy = False
        self._batch_ended = 0.0
        self._in_flight_since: float | None = None       # the probe waiting for its commit now, if any
        self._stop_event = threading.Event()
        self.failed: str | None = None                   # why probing stopped early

    # -- the purge loop tells the probe when a batch is in flight ------------------------------------------
    def batch_started(self) -> None:
        self._busy = True

    def batch_ended(self) -> None:
        self._batch_ended = time.monotonic()
        self._busy = False

    # -- the pacer reads what came in ----------------------------------------------------------------------
    def new_samples(self) -> list[tuple[float, bool]]:
        """The samples since the last call: (milliseconds, quiet)."""
        with self._lock:
            fresh = self._samples[self._read:]
            self._read = len(self._samples)
        return fresh

    def in_flight(self) -> tuple[int, float] | None:
        """The probe waiting now, if any: (its number, milliseconds so far). A commit stuck behind a batch is slow
        before it is a sample."""
        since = self._in_flight_since
        if since is None:
            return None
        with self._lock:
            number = len(self._samples)
        return number, (time.monotonic() - since) * 1000

    def all_samples(self) -> list[float]:
        with self._lock:
            return [ms for ms, _ in self._samples]

    def wait_samples(self, count: int, timeout: float) -> None:
        """Wait until ``count`` samples are unread (or ``timeout`` passes, or probing failed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.failed is None and self.is_alive():
            with self._lock:
                if len(self._samples) - self._read >= count:
                    return
            time.sleep(self.interval)

    # -- the thread -------------------------------------------------------------------------------------------
    def run(self) -> None:
        conn: psycopg.Connection | None = None
        try:
            conn = self._connect()
            conn.autocommit = True
            purge_probe.start_probe(conn, self.run_id)
            purge_probe.probe(conn, self.run_id)  # untimed: a new session's first statement loads its caches
            next_at = time.monotonic()
            while not self._stop_event.is_set():
                quiet = not self._busy and time.monotonic() - self._batch_ended >= QUIET_AFTER
                began = self._in_flight_since = time.monotonic()
                purge_probe.probe(conn, self.run_id)
                ms = (time.monotonic() - began) * 1000
                self._in_flight_since = None
                quiet = quiet and not self._busy and self._batch_ended < began
                with self._lock:
                    self._samples.append((ms, quiet))
                    if len(self._samples) > MAX_SAMPLES:
                        drop = len(self._samples) - MAX_SAMPLES
                        del self._samples[:drop]
                        self._read = max(0, self._read - drop)
                next_at += self.interval
                self._stop_event.wait(max(0.0, next_at - time.monotonic()))
                if next_at < time.monotonic():
                    next_at = time.monotonic()  # fell behind (a slow commit): no burst to catch up
        except psycopg.Error as exc:  # the purge goes on, paced by its duty cycle alone
            self.failed = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning("purge run %d: the latency probe stopped (%s); the duty cycle alone paces the rest",
                        self.run_id, self.failed)
        finally:
            if conn is not None:
                try:
                    if not conn.closed:
                        purge_probe.end_probe(conn, self.run_id)
                except psycopg.Error:
                    pass  # its row is removed by a later run's start_purge_probe
                conn.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)
