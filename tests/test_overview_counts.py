"""The overview's counts at scale: every one of them precomputed by the rollup job where counting it per request
was measured slow (the processing keys and the outbox backlog too, not only the 24-hour counts), equal to what the
tables hold when the job counted them, and said to be as of then."""

from __future__ import annotations

import psycopg
from bs4 import BeautifulSoup

from idemdash.core import settings
from idemdash.jobs.rollups import run_rollups
from idemdash.queries.target import Target

KEYS = """
INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status, claimed_by, claimed_at,
                                     locked_until, attempt_count, created_at, updated_at, expires_at)
SELECT 'scope-' || (i % 3), 'k-' || i, 'h', s.status::app.idempotency_status, c.claimed_by, now() - interval '1 hour',
       c.locked_until, 1 + i % 7, now() - interval '2 hours', now() - (i % 40) * interval '1 hour',
       now() + interval '1 day'
FROM generate_series(1, 240) i
CROSS JOIN LATERAL (SELECT (ARRAY['processing', 'succeeded', 'failed_retryable', 'failed_final'])[1 + i % 4]
                           AS status) s
CROSS JOIN LATERAL (SELECT CASE WHEN i % 8 = 0 THEN 'idemdash:needs_review' ELSE 'worker-' || (i % 5) END AS claimed_by,
                           CASE WHEN i % 3 = 0 THEN now() - interval '10 minutes'
                                WHEN i % 3 = 1 THEN now() + interval '10 minutes' END AS locked_until) c
"""
OUTBOX = """
INSERT INTO app.outbox_event (outbox_id, event_type, aggregate_type, aggregate_id, idempotency_scope, idempotency_key,
                              payload, status, attempt_count, created_at)
SELECT gen_random_uuid(), 'e', 'a', gen_random_uuid(), 'scope-1', 'k-' || i, '{}', CASE WHEN i % 2 = 0 THEN 'pending'
       ELSE 'published' END, i % 5, now() - i * interval '1 minute'
FROM generate_series(1, 30) i
"""
TRUTH = """
SELECT
  (SELECT count(*) FROM app.idempotency_request WHERE status = 'processing'
     AND (locked_until < now() OR (locked_until IS NULL AND claimed_at < now() - interval '300 seconds'))) AS stuck,
  (SELECT count(*) FROM app.idempotency_request WHERE status = 'processing') AS processing,
  (SELECT count(*) FROM app.idempotency_request WHERE status = 'processing'
     AND claimed_by = 'idemdash:needs_review') AS needs_review,
  (SELECT count(*) FROM app.idempotency_request WHERE status = 'failed_retryable') AS failed_retryable,
  (SELECT count(*) FROM app.idempotency_request WHERE status = 'failed_final'
     AND updated_at >= now() - interval '24 hours') AS failed_final_24h,
  (SELECT count(*) FROM app.idempotency_request WHERE status = 'succeeded'
     AND updated_at >= now() - interval '24 hours') AS succeeded_24h,
  (SELECT count(*) FROM app.outbox_event WHERE status = 'pending') AS pending,
  (SELECT count(*) FROM app.outbox_event WHERE status = 'pending' AND attempt_count >= 3) AS poison
"""


def _seed(conn: psycopg.Connection) -> dict[str, int]:
    from idemdash.core.statuses import REVIEW_HOLDER

    conn.execute(KEYS.replace("idemdash:needs_review", REVIEW_HOLDER))
    conn.execute(OUTBOX)
    row = conn.execute(TRUTH.replace("idemdash:needs_review", REVIEW_HOLDER)).fetchone()
    names = ("stuck", "processing", "needs_review", "failed_retryable", "failed_final_24h", "succeeded_24h")
    truth = dict(zip((*names, "pending", "poison"), row, strict=True))
    assert all(truth.values())  # every number is tested against something other than 0
    return truth


def _as_if_slow(conn: psycopg.Connection) -> None:
    """What the job measured at 100M keys: every count took longer than a page may spend on it."""
    conn.execute("UPDATE idemdash.rollup SET duration_ms = 250")


def test_the_overview_reads_every_count_the_job_stored_and_they_equal_the_tables(database_url, conn, client):
    truth = _seed(conn)
    run_rollups(Target.from_settings(settings.load({}, DATABASE_URL=database_url)), force=True)
    _as_if_slow(conn)
    # rows the job did not count yet: a page that read live would show them, one reading the job's counts does not
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status, claimed_at, "
        "locked_until, created_at, updated_at, expires_at) VALUES ('late', 'late', 'h', 'processing', "
        "now() - interval '1 hour', now() - interval '1 minute', now(), now(), now() + interval '1 day')"
    )
    body = client.get("/api/v1/overview").get_json()
    keys = body["keys"]
    assert {name: keys[name] for name in list(truth)[:6]} == {name: truth[name] for name in list(truth)[:6]}
    assert (body["outbox"]["pending"], body["outbox"]["poison"]) == (truth["pending"], truth["poison"])
    assert set(body["precomputed"]) == {"keys", "outbox", "inbox"}
    assert body["precomputed"]["keys"]["computed_ms"] == 500.0  # the processing counts' 250 ms and the windows'
    # the definitions are the same words: what is counted did not change, only when (precomputed says)
    assert body["definitions"]["stuck"].startswith("status = 'processing' and locked_until < now()")
    page = BeautifulSoup(client.get("/").data, "html.parser")
    assert page.select_one('[data-metric="stuck"]').get_text() == f"{truth['stuck']:,}"
    notes = " ".join(n.get_text() for n in page.select("[data-precomputed]"))
    assert "Key counts: as of" in notes and "Outbox backlog: as of" in notes


def test_cheap_counts_stay_live(database_url, conn, client):
    truth = _seed(conn)
    run_rollups(Target.from_settings(settings.load({}, DATABASE_URL=database_url)), force=True)
    conn.execute("UPDATE idemdash.rollup SET duration_ms = 1")  # a small table: counting per request is cheap
    conn.execute("DELETE FROM app.outbox_event WHERE status = 'pending'")
    body = client.get("/api/v1/overview").get_json()
    assert body["keys"]["stuck"] == truth["stuck"] and body["outbox"]["pending"] == 0
    assert body["precomputed"] == {}
