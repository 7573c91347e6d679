"""The steps of one simulated request through the reference functions: a new command (its scope, key and
payload), its claim, the business effect with its outbox events, and the completion or failure, each fenced by the
claim's attempt. ``workload/client.py`` strings them into scenarios."""

from __future__ import annotations

import time
import uuid
from collections import deque

import psycopg

from idemdash.queries.app_schema import NOT_PROCESSING, Claim, claim_key, complete_key, fail_key
from idemdash.queries.workload.simulate import insert_outbox_event
from idemdash.workload.scenario import SCOPE_WEIGHTS, SCOPES, UNROUTABLE_EVENT, WORKERS, Command, Run, digest


class RequestSteps:
    """One client's requests, step by step, and its memories of earlier commands for its retries."""

    def __init__(self, sim: Run, index: int) -> None:
        self.sim = sim
        self.tables = sim.tables
        self.stats = sim.stats
        self.rng = sim.rng(f"client-{index}")
        self._tag = f"{sim.run_tag}{index}"
        self._seq = 0
        # Bounded memories of this client's earlier commands, for its retries.
        self.succeeded: deque[Command] = deque(maxlen=200)
        self.final: deque[Command] = deque(maxlen=50)
        self.failed: deque[Command] = deque(maxlen=200)
        self.crashed: deque[Command] = deque(maxlen=50)

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
