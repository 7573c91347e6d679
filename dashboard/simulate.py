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

import hashlib
import json
import logging
import queue
import random
import secrets
import threading
import time
import uuid
from collections import Counter, deque
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from typing import Any, Callable, Mapping

import click
import psycopg

from core.settings import redact_dsn
from queries import Tables
from queries.app_schema import (MESSAGE_MISMATCH, NOT_PROCESSING, PAYLOAD_MISMATCH, Claim, claim_key, complete_key,
                                consume_message, fail_key)
from queries.simulate import (PendingEvent, backfill_inbox, backfill_keys_and_outbox, insert_outbox_event,
                              list_missing_reference_objects, list_pending_outbox_events_for_publish,
                              mark_outbox_published, record_outbox_publish_failures)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scope:
    name: str
    retention: timedelta
    result_type: str
    # The first event is always written by the effect; the others sometimes.
    events: tuple[str, ...]


SCOPES = (
    Scope("create_order", timedelta(days=7), "customer_order", ("order.created", "inventory.reserved")),
    Scope("capture_payment", timedelta(days=3), "payment", ("payment.authorized", "payment.captured")),
    Scope("send_invoice", timedelta(days=1), "invoice", ("invoice.sent",)),
    Scope("refund", timedelta(days=2), "refund", ("refund.issued",)),
)
SCOPE_WEIGHTS = (40, 30, 20, 10)
WORKERS = ("api-1", "api-2", "api-3", "worker-7", "worker-9")
# No route exists for this event type, so the publisher fails it forever: backlog and lag never reach zero.
UNROUTABLE_EVENT = "legacy.unroutable"
# Which downstream consumers receive each published event type.
CONSUMER_ROUTES: Mapping[str, tuple[str, ...]] = {
    "order.created": ("shipping", "billing", "analytics"),
    "inventory.reserved": ("shipping",),
    "payment.authorized": ("fraud-check", "analytics"),
    "payment.captured": ("billing", "analytics"),
    "invoice.sent": ("notifications", "analytics"),
    "refund.issued": ("billing", "notifications"),
}
CONSUMER_RESULTS: Mapping[str, str | None] = {
    "billing": "ledger_entry", "shipping": "shipment", "notifications": "email", "fraud-check": "risk_score",
    "analytics": None,
}

# Relative weights of what one client request does.
SCENARIOS: Mapping[str, float] = {
    "success": 60,
    "replay": 10,             # client retry of an earlier finished key
    "crash_after_claim": 2,   # worker dies holding the lease: a stuck key
    "crash_after_effect": 2,  # dies after its outbox row committed: a stuck key with evidence
    "retryable_failure": 7,
    "retry_failed": 5,        # a later retry of a failed_retryable key
    "final_failure": 3,
    "payload_mismatch": 2,    # same key, different request
    "flaky": 2,               # retried until attempt_count reaches 5-9
    "impatient_retry": 2,     # retry of a crashed key: in_progress, or stale_reclaim once the lease ran out
}

PUBLISH_FAILURE_RATE = 0.05
PUBLISH_BATCH = 500
# Share of already-failed outbox rows the publisher retries per pass (a crude back-off).
PUBLISH_RETRY_FRACTION = 0.2
REDELIVERY_RATE = 0.10
MESSAGE_MISMATCH_RATE = 0.005


class Stats:
    """Thread-safe outcome counters shared by all simulator threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def summary(self) -> str:
        s = self.snapshot()
        parts = [
            ("requests", s.get("requests", 0)),
            ("succeeded", s.get("succeeded", 0)),
            ("replayed", s.get("replay_success", 0)),
            ("in_progress", s.get("in_progress", 0)),
            ("reclaimed", s.get("retry_reclaim", 0) + s.get("stale_reclaim", 0)),
            ("crashed", s.get("crashed_after_claim", 0) + s.get("crashed_after_effect", 0)),
            ("failed_retryable", s.get("failed_retryable", 0)),
            ("failed_final", s.get("failed_final", 0)),
            ("mismatch", s.get("payload_mismatch", 0)),
            ("published", s.get("published", 0)),
            ("publish_failed", s.get("publish_failed", 0)),
            ("inbox", s.get("processed", 0)),
            ("redelivered", s.get("duplicate_ignored", 0)),
            ("errors", s.get("errors", 0)),
        ]
        return " ".join(f"{name}={value}" for name, value in parts)


@dataclass(frozen=True)
class Command:
    """One client command: what it claims under, and the request its hash stands for."""

    scope: Scope
    key: str
    request_hash: str
    amount: float


@dataclass(frozen=True)
class _Delivery:
    message_id: str
    event_type: str


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()


class Simulator:
    """Concurrent simulated clients, an outbox publisher and an inbox consumer, each on its own thread."""

    def __init__(self, database_url: str, tables: Tables = Tables(), rate: float = 20.0, clients: int = 4,
                 seed: int | None = None, lease_seconds: int | tuple[int, int] = (15, 45),
                 publish_interval: float = 2.0) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        if clients < 1:
            raise ValueError("clients must be at least 1")
        lease = (lease_seconds, lease_seconds) if isinstance(lease_seconds, int) else lease_seconds
        if lease[0] < 1 or lease[1] < lease[0]:
            raise ValueError("lease_seconds must be a positive int or a (low, high) range")
        self.database_url = database_url
        self.tables = tables
        self.rate = rate
        self.clients = clients
        self.seed = seed
        self.lease_seconds = lease
        self.publish_interval = publish_interval
        self.stats = Stats()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # Published events travel to the inbox consumer as a broker would deliver them.
        self._deliveries: queue.Queue[_Delivery] = queue.Queue(maxsize=10_000)
        # Keys differ between runs even with a fixed seed, so two runs never collide.
        self._run_tag = secrets.token_hex(3)
        self._key_salt = secrets.randbits(128)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("simulator already started")
        self._stop.clear()
        for index in range(self.clients):
            client = _Client(self, index)
            self._spawn(f"client-{index}", client.wait_next, client.step)
        publisher = _Publisher(self)
        self._spawn("publisher", publisher.wait_next, publisher.step)
        consumer = _Consumer(self)
        self._spawn("consumer", consumer.wait_next, consumer.step)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every thread; True when all of them ended within ``timeout`` seconds."""
        self._stop.set()
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

    def rng(self, name: str) -> random.Random:
        """A per-thread generator derived from the seed, so a seeded run makes the same choices."""
        return random.Random(f"{self.seed}:{name}") if self.seed is not None else random.Random()

    # -- supervision ---------------------------------------------------------------------------------------------

    def _spawn(self, role: str, wait_next: Callable[[], bool], step: Callable[[psycopg.Connection], None]) -> None:
        thread = threading.Thread(target=self._supervise, args=(role, wait_next, step),
                                  name=f"idemdash-sim-{role}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _connect(self, role: str) -> psycopg.Connection:
        return psycopg.connect(self.database_url, autocommit=False, connect_timeout=3,
                               application_name=f"idemdash-simulate-{role}")

    def _supervise(self, role: str, wait_next: Callable[[], bool],
                   step: Callable[[psycopg.Connection], None]) -> None:
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
                    log.warning("simulator %s: %s: %s (retrying)", role, type(exc).__name__,
                                str(exc).strip().splitlines()[0] if str(exc).strip() else "")
                    if conn is not None:
                        conn.close()
                        conn = None
                    if self._stop.wait(min(5.0, 0.1 * 2 ** min(failures, 6))):
                        break
        finally:
            if conn is not None:
                conn.close()


class _Client:
    """One simulated API client: a paced stream of requests, each following one scenario."""

    def __init__(self, sim: Simulator, index: int) -> None:
        self.sim = sim
        self.tables = sim.tables
        self.stats = sim.stats
        self.rng = sim.rng(f"client-{index}")
        self._pace_rng = sim.rng(f"pace-{index}")
        self._rate = sim.rate / sim.clients
        self._next_at = time.monotonic()
        self._tag = f"{sim._run_tag}{index}"
        self._seq = 0
        # Bounded memories of this client's earlier commands, for its retries.
        self.succeeded: deque[Command] = deque(maxlen=200)
        self.final: deque[Command] = deque(maxlen=50)
        self.failed: deque[Command] = deque(maxlen=200)
        self.crashed: deque[Command] = deque(maxlen=50)
        self._scenarios = list(SCENARIOS)
        self._weights = list(SCENARIOS.values())

    # -- pacing and dispatch -------------------------------------------------------------------------------------

    def wait_next(self) -> bool:
        """Sleep until this client's next (Poisson-spaced) request; False once stopping."""
        self._next_at += self._pace_rng.expovariate(self._rate)
        now = time.monotonic()
        if self._next_at < now - 1.0:
            self._next_at = now  # fell behind (slow database): do not burst to catch up
        delay = self._next_at - now
        if delay > 0:
            return not self.sim._stop.wait(delay)
        return not self.sim._stop.is_set()

    def step(self, conn: psycopg.Connection) -> None:
        scenario = self.rng.choices(self._scenarios, self._weights)[0]
        self.stats.add("requests")
        getattr(self, f"_{scenario}")(conn)

    # -- building blocks -----------------------------------------------------------------------------------------

    def _new_command(self) -> Command:
        scope = self.rng.choices(SCOPES, SCOPE_WEIGHTS)[0]
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
            key = str(uuid.UUID(int=self.rng.getrandbits(128) ^ self.sim._key_salt, version=4))
        amount = round(self.rng.uniform(5, 500), 2)
        return Command(scope, key, _hash(scope.name, key, amount), amount)

    def _worker(self) -> str:
        return self.rng.choice(WORKERS)

    def _work(self) -> None:
        time.sleep(self.rng.uniform(0.001, 0.008))

    def _claim(self, conn: psycopg.Connection, cmd: Command, worker: str | None = None) -> Claim:
        with conn.transaction():
            claim = claim_key(conn, self.tables, cmd.scope.name, cmd.key, cmd.request_hash,
                              worker or self._worker(), lock_seconds=self.rng.randint(*self.sim.lease_seconds),
                              retention=cmd.scope.retention)
        self.stats.add(claim.claim_kind)
        return claim

    def _write_effect(self, conn: psycopg.Connection, cmd: Command, aggregate_id: uuid.UUID) -> None:
        events = [cmd.scope.events[0]]
        events += [e for e in cmd.scope.events[1:] if self.rng.random() < 0.3]
        if self.rng.random() < 0.01:
            events.append(UNROUTABLE_EVENT)
        for event_type in events:
            insert_outbox_event(conn, self.tables, event_type, cmd.scope.result_type, aggregate_id,
                                cmd.scope.name, cmd.key, {"amount": cmd.amount, "key": cmd.key})
        self.stats.add("outbox_written", len(events))

    def _complete(self, conn: psycopg.Connection, cmd: Command, claim: Claim) -> bool:
        """The business effect and the completion commit together, fenced by the claim's attempt."""
        aggregate_id = uuid.uuid4()
        try:
            with conn.transaction():
                self._write_effect(conn, cmd, aggregate_id)
                complete_key(conn, self.tables, cmd.scope.name, cmd.key, cmd.scope.result_type, aggregate_id,
                             {"id": str(aggregate_id), "status": "ok", "amount": cmd.amount},
                             attempt=claim.attempt_count)
        except psycopg.Error as exc:
            if exc.sqlstate in NOT_PROCESSING:
                self.stats.add("fenced")  # someone took the key over meanwhile; our effect rolled back
                return False
            raise
        self.stats.add("succeeded")
        self.succeeded.append(cmd)
        return True

    def _fail(self, conn: psycopg.Connection, cmd: Command, claim: Claim, retryable: bool,
              remember: bool = True) -> bool:
        if retryable:
            code, message = self.rng.choice((("upstream_timeout", "payment gateway did not answer within 10s"),
                                             ("rate_limited", "provider answered 429"),
                                             ("deadlock_retry", "business transaction hit a deadlock")))
        else:
            code, message = self.rng.choice((("card_declined", "issuer declined the card"),
                                             ("invalid_address", "address failed validation"),
                                             ("insufficient_funds", "account balance too low")))
        try:
            with conn.transaction():
                fail_key(conn, self.tables, cmd.scope.name, cmd.key, retryable, code, message,
                         attempt=claim.attempt_count)
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
        reused = replace(original, amount=original.amount + 1,
                         request_hash=_hash(original.scope.name, original.key, original.amount + 1))
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
            if self.sim._stop.is_set():
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


class _Publisher:
    """Outbox relay: locks pending rows, 'publishes' them, sometimes fails; runs a little behind the producers."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.rng = sim.rng("publisher")

    def wait_next(self) -> bool:
        return not self.sim._stop.wait(self.sim.publish_interval * self.rng.uniform(0.7, 1.3))

    def step(self, conn: psycopg.Connection) -> None:
        with conn.transaction():
            events = list_pending_outbox_events_for_publish(conn, self.sim.tables, PUBLISH_BATCH,
                                                            PUBLISH_RETRY_FRACTION)
            failed: list[PendingEvent] = []
            delivered: list[PendingEvent] = []
            for event in events:
                if event.event_type == UNROUTABLE_EVENT or self.rng.random() < PUBLISH_FAILURE_RATE:
                    failed.append(event)
                else:
                    delivered.append(event)
            if delivered:
                mark_outbox_published(conn, self.sim.tables, [e.outbox_id for e in delivered])
            if failed:
                record_outbox_publish_failures(conn, self.sim.tables, [e.outbox_id for e in failed])
        self.sim.stats.add("published", len(delivered))
        self.sim.stats.add("publish_failed", len(failed))
        for event in delivered:  # handed to the broker only once the commit succeeded
            try:
                self.sim._deliveries.put_nowait(_Delivery(str(event.outbox_id), event.event_type))
            except queue.Full:
                break


class _Consumer:
    """Inbox consumers downstream of the publisher; the broker redelivers now and then."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.rng = sim.rng("consumer")
        self.recent: deque[tuple[str, str, str]] = deque(maxlen=500)

    def wait_next(self) -> bool:
        return not self.sim._stop.is_set()

    def step(self, conn: psycopg.Connection) -> None:
        try:
            delivery = self.sim._deliveries.get(timeout=0.2)
        except queue.Empty:
            return
        message_hash = _hash(delivery.event_type, delivery.message_id)
        for consumer in CONSUMER_ROUTES.get(delivery.event_type, ("analytics",)):
            self._consume(conn, consumer, delivery.message_id, message_hash)
            self.recent.append((consumer, delivery.message_id, message_hash))
            if self.rng.random() < REDELIVERY_RATE:
                self._consume(conn, *self.rng.choice(self.recent))
            if self.rng.random() < MESSAGE_MISMATCH_RATE:
                # a producer bug: the same message id with another body
                other, message_id, _ = self.rng.choice(self.recent)
                self._consume(conn, other, message_id, _hash("tampered", message_id))

    def _consume(self, conn: psycopg.Connection, consumer: str, message_id: str, message_hash: str) -> None:
        result_type = CONSUMER_RESULTS.get(consumer)
        try:
            with conn.transaction():
                outcome = consume_message(conn, self.sim.tables, consumer, message_id, message_hash,
                                          result_type, uuid.uuid4() if result_type else None)
        except psycopg.Error as exc:
            if exc.sqlstate == MESSAGE_MISMATCH:
                self.sim.stats.add("message_mismatch")
                return
            raise
        self.sim.stats.add(outcome)


def backfill(conn: psycopg.Connection, tables: Tables, days: int, keys_per_day: int = 3000,
             inbox_per_day: int | None = None) -> dict[str, int]:
    """Write ``days`` of history with set-based inserts, one day per transaction; returns what was written.

    Each run uses a fresh random token in its keys and message ids, so running it again adds more history
    instead of colliding. The newest slice ends 15 minutes ago so the stuck keys' leases have run out.
    """
    if days < 1:
        raise ValueError("days must be at least 1")
    inbox_rows = keys_per_day if inbox_per_day is None else inbox_per_day
    token = secrets.token_hex(4)
    totals: Counter[str] = Counter()
    for day in range(days):
        newest = timedelta(days=day) if day else timedelta(minutes=15)
        oldest = timedelta(days=day + 1)
        with conn.transaction():
            counts = backfill_keys_and_outbox(conn, tables, f"{token}-{day}", keys_per_day, oldest, newest)
            totals.update(asdict(counts))
            totals["inbox"] += backfill_inbox(conn, tables, f"{token}-{day}", inbox_rows, oldest, newest)
    return dict(totals)


def run_cli(url: str, config: Mapping[str, Any], rate: float = 20.0, clients: int = 4, backfill_days: int = 0,
            duration: float = 0, seed: int | None = None, report_every: float = 10.0) -> None:
    """``idemdash simulate``: check the reference schema, optionally backfill, then run until stopped."""
    tables = Tables.from_config(config)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="idemdash-simulate")
    except psycopg.OperationalError as exc:
        raise click.ClickException(f"cannot connect to {redact_dsn(url)}: {exc}") from None
    with conn:
        missing = list_missing_reference_objects(conn, tables)
        if missing:
            raise click.ClickException(
                f"the reference schema is missing in schema {tables.schema!r} (no {', '.join(missing)}); "
                f"run `idemdash init-app-schema --database-url ...` first")
        if backfill_days:
            started = time.monotonic()
            written = backfill(conn, tables, backfill_days)
            click.echo(f"backfilled {backfill_days} day(s) in {time.monotonic() - started:.1f}s: "
                       + " ".join(f"{name}={count}" for name, count in written.items()))

    sim = Simulator(url, tables, rate=rate, clients=clients, seed=seed)
    click.echo(f"simulating {rate:g} requests/s with {clients} clients against {redact_dsn(url)} "
               f"({'for %gs' % duration if duration else 'Ctrl-C to stop'})")
    sim.start()
    started = time.monotonic()
    next_report = started + report_every
    try:
        while not duration or time.monotonic() - started < duration:
            time.sleep(0.2)
            if time.monotonic() >= next_report:
                click.echo(sim.stats.summary())
                next_report += report_every
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    click.echo("final: " + sim.stats.summary())
