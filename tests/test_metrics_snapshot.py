"""/metrics reads the reference tables' counts from the snapshot job's latest snapshot while it is fresh (one row,
whatever the tables' size), says how old they are (idemdash_counts_timestamp_seconds), and counts live otherwise."""

from __future__ import annotations

import time

from idemdash.core import settings
from idemdash.core.statuses import REVIEW_HOLDER
from idemdash.jobs.snapshots import run_snapshot
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key
from idemdash.queries.target import Target
from tests.test_metrics import scrape

T = Tables()
NUMBERS = (
    ("idemdash_stuck", (("profile", "reference"),)),
    ("idemdash_in_progress", (("profile", "reference"),)),
    ("idemdash_needs_review", (("profile", "reference"),)),
    ("idemdash_failed", (("profile", "reference"),)),
    ("idemdash_outbox_pending", (("profile", "reference"),)),
    ("idemdash_outbox_poison", (("profile", "reference"),)),
    ("idemdash_stuck_keys", (("scope", "create_order"),)),
    ("idemdash_stuck_keys", (("scope", "refund"),)),
    ("idemdash_stuck_keys_total", ()),
    ("idemdash_processing_keys", ()),
    ("idemdash_needs_review_keys", ()),
    ("idemdash_failed_retryable_keys", ()),
    ("idemdash_failed_final_keys_24h", ()),
)


def _seed(conn) -> None:
    for i in range(3):
        claim_key(conn, T, "create_order", f"c{i}", "h", "w", lock_seconds=0)
    claim_key(conn, T, "refund", "r0", "h", "w", lock_seconds=0)
    claim_key(conn, T, "refund", "live", "h", "w", lock_seconds=600)
    conn.execute("UPDATE app.idempotency_request SET claimed_by = %s WHERE idempotency_key = 'c2'", (REVIEW_HOLDER,))
    conn.execute(
        "UPDATE app.idempotency_request SET status = 'failed_retryable', locked_until = NULL "
        "WHERE idempotency_key = 'c1'"
    )
    conn.execute("""INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload, attempt_count)
                    VALUES ('e', 'a', gen_random_uuid(), 'refund', 'r0', '{}', 0),
                           ('e2', 'a', gen_random_uuid(), 'refund', 'r0', '{}', 4)""")


def _numbers(samples: dict) -> dict:
    return {name: samples.get((name, labels)) for name, labels in NUMBERS}


def _snapshot(database_url: str):
    snapshot = run_snapshot(Target.from_settings(settings.load({}, DATABASE_URL=database_url)), min_gap_seconds=0)
    assert snapshot is not None
    return snapshot


def test_metrics_serve_the_latest_snapshot_and_say_when_it_was_taken(make_app, database_url, conn):
    _seed(conn)
    client = make_app(METRICS_CACHE_SECONDS=0).test_client()
    before = time.time()
    live = scrape(client)
    assert before - 1 <= live[("idemdash_counts_timestamp_seconds", ())] <= time.time() + 1  # no snapshot: now
    truth = _numbers(live)
    assert truth["idemdash_stuck_keys_total"] == 3 and truth["idemdash_needs_review_keys"] == 1
    assert truth["idemdash_outbox_poison"] == 1 and truth["idemdash_failed"] == 1
    snapshot = _snapshot(database_url)
    # what the job did not see: a scrape that counted live would show it, one that reads the snapshot does not
    claim_key(conn, T, "refund", "r-late", "h", "w", lock_seconds=0)
    conn.execute("DELETE FROM app.outbox_event")
    served = scrape(client)
    assert _numbers(served) == truth  # every number as the job counted it, equal to what a live count said then
    assert served[("idemdash_counts_timestamp_seconds", ())] == snapshot.taken_at.timestamp()
    assert served[("idemdash_snapshot_last_timestamp_seconds", ())] == snapshot.taken_at.timestamp()


def test_a_stale_snapshot_or_one_without_the_metrics_numbers_is_not_served(make_app, database_url, conn):
    _seed(conn)
    client = make_app(METRICS_CACHE_SECONDS=0).test_client()
    _snapshot(database_url)
    claim_key(conn, T, "refund", "r-late", "h", "w", lock_seconds=0)
    # taken by an idemdash from before the snapshot recorded what /metrics serves: counted live
    conn.execute("UPDATE idemdash.metric_snapshot SET failed_keys = NULL")
    assert scrape(client)[("idemdash_stuck_keys_total", ())] == 4
    conn.execute("UPDATE idemdash.metric_snapshot SET failed_keys = 0, taken_at = taken_at - interval '181 seconds'")
    samples = scrape(client)  # older than three snapshot intervals: the scheduler is not running, counted live
    assert samples[("idemdash_stuck_keys_total", ())] == 4
    assert samples[("idemdash_counts_timestamp_seconds", ())] >= time.time() - 5
