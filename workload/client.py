"""One simulated API client: a paced stream of requests through the reference functions, each following one
scenario (success, replay, crashes, failures, payload reuse, hotspots, impatient retries). A scenario's steps
(claim, effect, complete, fail) are in ``workload/request_steps.py``."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

import psycopg

from idemdash.queries.app_schema import PAYLOAD_MISMATCH
from idemdash.workload.incidents import BAD_DEPLOY_WORKER
from idemdash.workload.request_steps import RequestSteps
from idemdash.workload.scenario import Run, digest


class Client(RequestSteps):
    """One simulated API client: a paced stream of requests, each following one scenario."""

    def __init__(self, sim: Run, index: int) -> None:
        super().__init__(sim, index)
        self._pace_rng = sim.rng(f"pace-{index}")
        self._rate = sim.rate / sim.clients
        self._next_at = time.monotonic()
        self._scenarios = list(sim.scenarios)
        self._weights = list(sim.scenarios.values())

    # -- pacing and dispatch -------------------------------------------------------------------------------------

    def wait_next(self) -> bool:
        """Sleep until this client's next (Poisson-spaced) request; False once stopping."""
        self._next_at += self._pace_rng.expovariate(self._rate)
        now = time.monotonic()
        if self._next_at < now - 1.0:
            self._next_at = now  # fell behind (slow database): do not burst to catch up
        delay = self._next_at - now
        if delay > 0:
            return not self.sim.stop.wait(delay)
        return not self.sim.stop.is_set()

    def step(self, conn: psycopg.Connection) -> None:
        self.stats.add("requests")
        bad_deploy = self.sim.incidents.crash_scope(self.rng) if self.sim.incidents is not None else None
        if bad_deploy is not None:
            return self._bad_deploy(conn, bad_deploy)
        scenario = self.rng.choices(self._scenarios, self._weights)[0]
        getattr(self, f"_{scenario}")(conn)

    # -- scenarios -----------------------------------------------------------------------------------------------

    def _success(self, conn: psycopg.Connection) -> None:
        cmd = self._new_command()
        self._finish(conn, cmd, self._claim(conn, cmd))

    def _replay(self, conn: psycopg.Connection) -> None:
        pool = self.final if self.final and self.rng.random() < 0.15 else self.succeeded
        if not pool:
            return self._success(conn)
        cmd = self.rng.choice(pool)
        self._finish(conn, cmd, self._claim(conn, cmd))

    def _crash_after_claim(self, conn: psycopg.Connection) -> None:
        cmd = self._new_command()
        if self._claim(conn, cmd).owns:
            self.stats.add("crashed_after_claim")
            self.crashed.append(cmd)

    def _crash_after_effect(self, conn: psycopg.Connection) -> None:
        cmd = self._new_command()
        if not self._claim(conn, cmd).owns:
            return
        with conn.transaction():  # the effect commits; the completion never happens
            self._write_effect(conn, cmd, uuid.uuid4())
        self.stats.add("crashed_after_effect")
        self.crashed.append(cmd)

    def _bad_deploy(self, conn: psycopg.Connection, scope: str) -> None:
        """A request to the scope a bad deploy broke: the worker crashes holding the key, a third of the time
        after its effect committed."""
        cmd = self._new_command(scope)
        if not self._claim(conn, cmd, BAD_DEPLOY_WORKER).owns:
            return
        if self.rng.random() < 1 / 3:
            with conn.transaction():
                self._write_effect(conn, cmd, uuid.uuid4())
        self.stats.add("crashed_in_incident")
        self.crashed.append(cmd)

    def _retryable_failure(self, conn: psycopg.Connection) -> None:
        cmd = self._new_command()
        claim = self._claim(conn, cmd)
        if claim.owns:
            self._work()
            self._fail(conn, cmd, claim, retryable=True)

    def _retry_failed(self, conn: psycopg.Connection) -> None:
        if not self.failed:
            return self._success(conn)
        cmd = self.failed.popleft()
        claim = self._claim(conn, cmd)
        if not claim.owns:
            return
        self._work()
        r = self.rng.random()
        if r < 0.7:
            self._complete(conn, cmd, claim)
        else:
            self._fail(conn, cmd, claim, retryable=r < 0.9)

    def _final_failure(self, conn: psycopg.Connection) -> None:
        cmd = self._new_command()
        claim = self._claim(conn, cmd)
        if claim.owns:
            self._work()
            self._fail(conn, cmd, claim, retryable=False)

    def _payload_mismatch(self, conn: psycopg.Connection) -> None:
        pool = [*self.succeeded, *self.final, *self.failed]
        if not pool:
            return self._success(conn)
        original = self.rng.choice(pool)
        reused = replace(
            original,
            amount=original.amount + 1,
            request_hash=digest(original.scope.name, original.key, original.amount + 1),
        )
        try:
            claim = self._claim(conn, reused)
        except psycopg.Error as exc:
            if exc.sqlstate == PAYLOAD_MISMATCH:
                self.stats.add("payload_mismatch")
                return
            raise
        self._finish(conn, reused, claim)  # the original row was purged meanwhile: a genuinely new command

    def _flaky(self, conn: psycopg.Connection) -> None:
        # Mostly one worker, so the hotspot page has a worker to point at.
        worker = "worker-7" if self.rng.random() < 0.7 else self._worker()
        cmd = self._new_command()
        target = self.rng.randint(5, 9)
        claim = self._claim(conn, cmd, worker)
        while claim.owns and claim.attempt_count < target:
            # not remembered for a later retry: this loop does its own retries
            if not self._fail(conn, cmd, claim, retryable=True, remember=False):
                return
            time.sleep(self.rng.uniform(0.001, 0.01))
            if self.sim.stop.is_set():
                return
            claim = self._claim(conn, cmd, worker)
        if not claim.owns:
            return
        self.stats.add("flaky")
        r = self.rng.random()
        if r < 0.5:
            self._complete(conn, cmd, claim)
        else:
            self._fail(conn, cmd, claim, retryable=r >= 0.8)

    def _impatient_retry(self, conn: psycopg.Connection) -> None:
        if not self.crashed:
            return self._success(conn)
        # Usually the latest crash (still leased: in_progress); sometimes an older one whose lease ran out.
        cmd = self.crashed[-1] if self.rng.random() < 0.75 else self.rng.choice(self.crashed)
        claim = self._claim(conn, cmd)
        if claim.owns:
            self.crashed.remove(cmd)
            self._finish(conn, cmd, claim)
