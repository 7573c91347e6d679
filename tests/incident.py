"""An incident staged through the reference schema's own claim, complete and fail functions, with its ground truth
kept apart from anything idemdash computes: a bad deploy of capture_payment on api-3 leaves 40 keys stuck among a
background of workers that claim, finish, fail and sometimes stick too; 120 poison outbox rows of one event type
wait among healthy pending ones. The system test checks every page and API against it; the browser test shows it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key, fail_key
from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events, now_of

T = Tables()
BAD_SCOPE, BAD_WORKER = "capture_payment", "api-3"
POISON_TYPE = "legacy.unroutable"
# (worker, scope, keys claimed, of which completed, failed retryable, failed final, left stuck, left in flight)
BACKGROUND = (
    ("api-1", "create_order", 30, 24, 2, 1, 2, 1),
    ("api-2", "refund", 18, 14, 1, 0, 1, 2),
    ("api-2", BAD_SCOPE, 6, 5, 0, 0, 1, 0),  # capture_payment on another worker: one stuck
    ("api-4", "send_invoice", 12, 9, 0, 2, 0, 1),
    ("batch-1", "ship", 25, 20, 3, 0, 2, 0),
    (BAD_WORKER, "refund", 8, 5, 0, 0, 3, 0),  # api-3 also stuck a few elsewhere
    (BAD_WORKER, BAD_SCOPE, 47, 5, 0, 2, 40, 0),  # the bad deploy: 40 claimed and never finished
)


@dataclass
class Truth:
    stuck: list[tuple[str, str, str]] = field(default_factory=list)  # (scope, key, worker)
    in_flight: Counter = field(default_factory=Counter)  # worker -> keys with a live lease
    succeeded: Counter = field(default_factory=Counter)  # worker -> keys, in this hour
    failed_retryable: Counter = field(default_factory=Counter)
    failed_final: Counter = field(default_factory=Counter)
    claims: int = 0  # since the baseline snapshot
    completions: int = 0
    failures: int = 0

    def stuck_by(self, what: str) -> Counter:
        return Counter(s if what == "scope" else w for s, _, w in self.stuck)


def stage_history(conn) -> None:
    """Before the baseline snapshot: finished keys of yesterday (not in the window, not a claim since) and the
    outbox: 120 poison rows 2 to 3 days old, healthy pending rows up to 40 s old (some failed once or twice),
    poison of no other type, published rows."""
    for i in range(10):
        insert_key(
            conn,
            "create_order",
            f"old-{i}",
            status="succeeded",
            locked_until=None,
            claimed_by="api-1",
            claimed_ago=timedelta(days=1),
            updated_ago=timedelta(days=1),
        )
    now = now_of(conn)
    events = [
        Event(POISON_TYPE, "pending", now - timedelta(days=3) + timedelta(minutes=10 * i), attempt_count=3 + i % 40)
        for i in range(120)
    ]
    events += [
        Event("order.created", "pending", now - timedelta(seconds=40 - i), attempt_count=i % 3) for i in range(30)
    ]
    events += [
        Event("order.created", "published", now - timedelta(days=1), published_at=now - timedelta(days=1))
        for _ in range(5)
    ]
    insert_events(conn, events)


def stage_traffic(conn) -> Truth:
    """After the baseline snapshot: each worker claims its keys, finishes most, fails some, leaves some stuck (a
    lease of 0 s: run out at once) and some in flight (a lease of 10 minutes)."""
    truth = Truth()
    for worker, scope, claimed, done, retryable, final, stuck, live in BACKGROUND:
        assert done + retryable + final + stuck + live == claimed
        outcomes = ["done"] * done + ["retryable"] * retryable + ["final"] * final + ["stuck"] * stuck + ["live"] * live
        for i, outcome in enumerate(outcomes):
            key = f"{worker}/{scope}/{i:03d}"
            lease = 0 if outcome == "stuck" else 600
            claim = claim_key(conn, T, scope, key, "h", worker, lock_seconds=lease)
            truth.claims += 1
            if outcome == "done":
                complete_key(conn, T, scope, key, None, None, {"ok": True}, attempt=claim.attempt_count)
                truth.succeeded[worker] += 1
                truth.completions += 1
            elif outcome in ("retryable", "final"):
                fail_key(
                    conn,
                    T,
                    scope,
                    key,
                    outcome == "retryable",
                    "boom",
                    "the deploy broke it",
                    attempt=claim.attempt_count,
                )
                (truth.failed_retryable if outcome == "retryable" else truth.failed_final)[worker] += 1
                truth.failures += 1
            elif outcome == "stuck":
                truth.stuck.append((scope, key, worker))
            else:
                truth.in_flight[worker] += 1
    return truth
