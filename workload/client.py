"""One simulated API client: a paced stream of requests through the reference functions, each following one
scenario (success, replay, crashes, failures, payload reuse, hotspots, impatient retries)."""

from __future__ import annotations

import time
import uuid
from collections import deque
from dataclasses import replace

import psycopg

from idemdash.queries.app_schema import NOT_PROCESSING, PAYLOAD_MISMATCH, Claim, claim_key, complete_key, fail_key
from idemdash.queries.workload.simulate import insert_outbox_event
from idemdash.workload.incidents import BAD_DEPLOY_WORKER
from idemdash.workload.scenario import SCOPE_WEIGHTS, SCOPES, UNROUTABLE_EVENT, WORKERS, Command, Run, digest


class Client:
    """One simulated API client: a paced stream of requests, each following one scenario."""

    def __init__(self, sim: Run, index: int) -> None:
        self.sim = sim
        self.tables = sim.tables
        self.stats = sim.stats
        self.rng = sim.rng(f"client-{index}")
        self._pace_rng = sim.rng(f"pace-{index}")
        self._rate = sim.rate / sim.clients
        self._next_at = time.monotonic()
        self._tag = f"{sim.run_tag}{index}"
        self._seq = 0
        # Bounded memories of this client's earlier commands, for its retries.
        self.succeeded: deque[Command] = deque(maxlen=200)
        self.final: deque[Command] = deque(maxlen=50)
        self.failed: deque[Command] = deque(maxlen=200)
        self.crashed: deque[Command] = deque(maxlen=50)
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

    # -- building blocks -----------------------------------------------------------------------------------------

    def _new_command(self, scope_name: str | None = None) -> Command:
        scope = (
            self.rng.choices(SCOPES, SCOPE_WEIGHTS)[0]
            if scope_name is None
            else next(s for s in SCOPES if s.name == scope_name)
        )
        self._seq += 1
        r = self.rng.random()
        # Mostly UUIDs, sometimes keys with slashes, spaces or non-ASCII, which the dashboard must handle.
        if r < 0.03:
            key = f"cart/{self._seq}/checkout-{self._tag}"
        elif r < 0.05:
            key = f"user {self._seq} rüge {self._tag}"
        elif r < 0.06:
            key = f"invoice #{self._seq} für Müller ({self._tag})"
        else:
            key = str(uuid.UUID(int=self.rng.getrandbits(128) ^ self.sim.key_salt, version=4))
        amount = round(self.rng.uniform(5, 500), 2)
        return Command(scope, key, digest(scope.name, key, amount), amount)

    def _worker(self) -> str:
        return self.rng.choice(WORKERS)

    def _work(self) -> None:
        time.sleep(self.rng.uniform(0.001, 0.008))

    def _claim(self, conn: psycopg.Connection, cmd: Command, worker: str | None = None) -> Claim:
        with conn.transaction():
            claim = claim_key(
                conn,
                self.tables,
                cmd.scope.name,
                cmd.key,
                cmd.request_hash,
                worker or self._worker(),
                lock_seconds=self.rng.randint(*self.sim.lease_seconds),
                retention=cmd.scope.retention,
            )
        self.stats.add(claim.claim_kind)
        return claim

    def _write_effect(self, conn: psycopg.Connection, cmd: Command, aggregate_id: uuid.UUID) -> None:
        events = [cmd.scope.events[0]]
        events += [e for e in cmd.scope.events[1:] if self.rng.random() < 0.3]
        if self.rng.random() < 0.01:
            events.append(UNROUTABLE_EVENT)
        for event_type in events:
            insert_outbox_event(
                conn,
                self.tables,
                event_type,
                cmd.scope.result_type,
                aggregate_id,
                cmd.scope.name,
                cmd.key,
                {"amount": cmd.amount, "key": cmd.key},
            )
        self.stats.add("outbox_written", len(events))

    def _complete(self, conn: psycopg.Connection, cmd: Command, claim: Claim) -> bool:
        """The business effect and the completion commit together, fenced by the claim's attempt."""
        aggregate_id = uuid.uuid4()
        try:
            with conn.transaction():
                self._write_effect(conn, cmd, aggregate_id)
                complete_key(
                    conn,
                    self.tables,
                    cmd.scope.name,
                    cmd.key,
                    cmd.scope.result_type,
                    aggregate_id,
                    {"id": str(aggregate_id), "status": "ok", "amount": cmd.amount},
                    attempt=claim.attempt_count,
                )
        except psycopg.Error as exc:
            if exc.sqlstate in NOT_PROCESSING:
                self.stats.add("fenced")  # someone took the key over meanwhile; our effect rolled back
                return False
            raise
        self.stats.add("succeeded")
        self.succeeded.append(cmd)
        return True

    def _fail(
        self, conn: psycopg.Connection, cmd: Command, claim: Claim, retryable: bool, remember: bool = True
    ) -> bool:
        if retryable:
            code, message = self.rng.choice(
                (
                    ("upstream_timeout", "payment gateway did not answer within 10s"),
                    ("rate_limited", "provider answered 429"),
                    ("deadlock_retry", "business transaction hit a deadlock"),
                )
            )
        else:
            code, message = self.rng.choice(
                (
                    ("card_declined", "issuer declined the card"),
                    ("invalid_address", "address failed validation"),
                    ("insufficient_funds", "account balance too low"),
                )
            )
        try:
            with conn.transaction():
                fail_key(
                    conn, self.tables, cmd.scope.name, cmd.key, retryable, code, message, attempt=claim.attempt_count
                )
        except psycopg.Error as exc:
            if exc.sqlstate in NOT_PROCESSING:
                self.stats.add("fenced")
                return False
            raise
        self.stats.add("failed_retryable" if retryable else "failed_final")
        if remember:
            (self.failed if retryable else self.final).append(cmd)
        return True

    def _finish(self, conn: psycopg.Connection, cmd: Command, claim: Claim) -> None:
        """After a claim that turned out to own the key (e.g. an expired key re-created): do the work."""
        if claim.owns:
            self._work()
            self._complete(conn, cmd, claim)

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
