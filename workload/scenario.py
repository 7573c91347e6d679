"""The simulated world: scopes and their events, workers, consumers, what a client request does and how often,
the counters every thread adds to, and what the threads of one run share (``Run``)."""

from __future__ import annotations

import hashlib
import json
import queue
import random
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from idemdash.queries import Tables
from idemdash.workload.incidents import Incidents


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
    "billing": "ledger_entry",
    "shipping": "shipment",
    "notifications": "email",
    "fraud-check": "risk_score",
    "analytics": None,
}

# Relative weights of what one client request does.
SCENARIOS: Mapping[str, float] = {
    "success": 60,
    "replay": 10,  # client retry of an earlier finished key
    "crash_after_claim": 2,  # worker dies holding the lease: a stuck key
    "crash_after_effect": 2,  # dies after its outbox row committed: a stuck key with evidence
    "retryable_failure": 7,
    "retry_failed": 5,  # a later retry of a failed_retryable key
    "final_failure": 3,
    "payload_mismatch": 2,  # same key, different request
    "flaky": 2,  # retried until attempt_count reaches 5-9
    "impatient_retry": 2,  # retry of a crashed key: in_progress, or stale_reclaim once the lease ran out
}
# The demo's mix: crashes are rare outside an incident (workload/incidents.py) and clients retry a crashed key
# less eagerly, so stuck keys stay a handful that the simulated on-call keeps up with, instead of piling up by
# the hundred.
STEADY_SCENARIOS: Mapping[str, float] = {
    **SCENARIOS,
    "crash_after_claim": 0.25,
    "crash_after_effect": 0.25,
    "impatient_retry": 1,
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
class Delivery:
    message_id: str
    event_type: str


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()


@dataclass
class Run:
    """What the threads of one simulator run share: the settings, the stop signal, the counters and the broker."""

    database_url: str
    tables: Tables
    rate: float
    clients: int
    seed: int | None
    lease_seconds: tuple[int, int]
    publish_interval: float
    run_tag: str  # keys differ between runs even with a fixed seed, so two runs never collide
    key_salt: int
    scenarios: Mapping[str, float] = field(default_factory=lambda: SCENARIOS)
    incidents: Incidents | None = None
    stats: Stats = field(default_factory=lambda: Stats())
    stop: threading.Event = field(default_factory=threading.Event)
    # published events travel to the inbox consumer as a broker would deliver them
    deliveries: queue.Queue[Delivery] = field(default_factory=lambda: queue.Queue(maxsize=10_000))

    def rng(self, name: str) -> random.Random:
        """A per-thread generator derived from the seed, so a seeded run makes the same choices."""
        return random.Random(f"{self.seed}:{name}") if self.seed is not None else random.Random()
