"""A live workload against the reference claim/complete/fail/consume functions.

``idemdash simulate`` (and the demo) run this to produce everything the
dashboard must show: plain successes, replayed client retries, workers that
crash after claiming or after their effect committed (stuck keys, some with
outbox evidence), retryable and final failures, payload-mismatch reuse,
retry hotspots, an outbox publisher that sometimes fails and a few events that
never publish, and an inbox consumer that sees redeliveries.

Every thread owns one connection and survives database restarts: an
unexpected error is logged, the connection dropped, and the thread reconnects
after a short back-off. Nothing here needs idemdash's own schema.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping

import psycopg

from idemdash.queries import Tables
from idemdash.workload.broker import Consumer, Publisher
from idemdash.workload.client import Client
from idemdash.workload.incidents import Incidents
from idemdash.workload.scenario import SCENARIOS, Run, Stats

log = logging.getLogger(__name__)


class Simulator:
    """Concurrent simulated clients, an outbox publisher and an inbox consumer, each on its own thread."""

    def __init__(
        self,
        database_url: str,
        tables: Tables = Tables(),
        rate: float = 20.0,
        clients: int = 4,
        seed: int | None = None,
        lease_seconds: int | tuple[int, int] = (15, 45),
        publish_interval: float = 2.0,
        scenarios: Mapping[str, float] = SCENARIOS,
        incidents: Incidents | None = None,
        expected_error: Callable[[], bool] = lambda: False,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        if clients < 1:
            raise ValueError("clients must be at least 1")
        lease = (lease_seconds, lease_seconds) if isinstance(lease_seconds, int) else lease_seconds
        if lease[0] < 1 or lease[1] < lease[0]:
            raise ValueError("lease_seconds must be a positive int or a (low, high) range")
        self.run = Run(
            database_url,
            tables,
            rate,
            clients,
            seed,
            lease,
            publish_interval,
            run_tag=secrets.token_hex(3),
            key_salt=secrets.randbits(128),
            scenarios=scenarios,
            incidents=incidents,
        )
        self._threads: list[threading.Thread] = []
        # asked before an error is logged: True when the caller knows its cause and says it itself (the demo,
        # whose own PostgreSQL died)
        self.expected_error = expected_error

    @property
    def stats(self) -> Stats:
        return self.run.stats

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("simulator already started")
        self.run.stop.clear()
        for index in range(self.run.clients):
            client = Client(self.run, index)
            self._spawn(f"client-{index}", client.wait_next, client.step)
        publisher = Publisher(self.run)
        self._spawn("publisher", publisher.wait_next, publisher.step)
        consumer = Consumer(self.run)
        self._spawn("consumer", consumer.wait_next, consumer.step)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every thread; True when all of them ended within ``timeout`` seconds."""
        self.run.stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            log.warning("simulator threads still running after %.1fs: %s", timeout, ", ".join(alive))
        return not alive

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    # -- supervision ---------------------------------------------------------------------------------------------

    def _spawn(self, role: str, wait_next: Callable[[], bool], step: Callable[[psycopg.Connection], None]) -> None:
        thread = threading.Thread(
            target=self._supervise, args=(role, wait_next, step), name=f"idemdash-sim-{role}", daemon=True
        )
        self._threads.append(thread)
        thread.start()

    def _connect(self, role: str) -> psycopg.Connection:
        return psycopg.connect(
            self.run.database_url, autocommit=False, connect_timeout=3, application_name=f"idemdash-simulate-{role}"
        )

    def _supervise(self, role: str, wait_next: Callable[[], bool], step: Callable[[psycopg.Connection], None]) -> None:
        conn: psycopg.Connection | None = None
        failures = 0
        try:
            while wait_next():
                try:
                    if conn is None:
                        conn = self._connect(role)
                    step(conn)
                    failures = 0
                except Exception as exc:  # a worker thread must never die: log, back off, reconnect
                    failures += 1
                    self.stats.add("errors")
                    if not self.expected_error():
                        log.warning(
                            "simulator %s: %s: %s (retrying)",
                            role,
                            type(exc).__name__,
                            str(exc).strip().splitlines()[0] if str(exc).strip() else "",
                        )
                    if conn is not None:
                        conn.close()
                        conn = None
                    if self.run.stop.wait(min(5.0, 0.1 * 2 ** min(failures, 6))):
                        break
        finally:
            if conn is not None:
                conn.close()
