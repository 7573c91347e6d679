"""A table mostly due is purged in heap order (docs/concepts.md, Purge orders): page ranges read by a TID Range
Scan, each page once. The same rows go as in due order, and never one the purge must keep."""

from __future__ import annotations

import threading

import psycopg
import pytest

from idemdash.jobs.purge_run import run_purge
from idemdash.queries import Tables, purge_batches
from idemdash.queries.indexes import ADVICE
from tests.test_purge_partitions import make_target

# 3,000 terminal expired keys among 1,000 that must stay: processing, failed_retryable, not yet expired, and
# expired but reclassified by an operator within the replay horizon
ROWS = """
INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status, created_at,
                                     updated_at, expires_at, locked_until)
SELECT 's', 'k' || g, 'h',
       (CASE WHEN g % 4 <> 0 THEN (ARRAY['succeeded', 'failed_final'])[1 + g % 2]
             WHEN g % 16 = 0 THEN 'processing' WHEN g % 16 = 4 THEN 'failed_retryable'
             ELSE 'succeeded' END)::app.idempotency_status,
       now() - interval '3 days', now() - interval '3 days',
       CASE WHEN g % 16 = 8 THEN now() + interval '1 day' ELSE now() - interval '1 day' END,
       CASE WHEN g % 16 = 0 THEN now() + interval '1 hour' END
FROM generate_series(1, 4000) g
"""
# the keys g % 16 = 12: expired and terminal, but an operator reclassified them an hour ago
DECIDED = """
INSERT INTO idemdash.audit_log (actor, action, scope, key, reason, at)
SELECT 'alice', 'reclassify', 's', 'k' || g, 'worker confirmed done', now() - interval '1 hour'
FROM generate_series(12, 4000, 16) g
"""


def _load(conn: psycopg.Connection) -> None:
    conn.execute(ROWS)
    conn.execute(DECIDED)
    conn.execute("ANALYZE app.idempotency_request")


def _left(conn: psycopg.Connection) -> set[str]:
    return {k for (k,) in conn.execute("SELECT idempotency_key FROM app.idempotency_request")}


def _kept() -> set[str]:
    return {f"k{g}" for g in range(1, 4001) if g % 4 == 0}


@pytest.mark.system  # over a second: a purge over a mostly-due table
def test_a_table_mostly_due_goes_in_heap_order_and_keeps_every_row_it_must(conn, database_url):
    _load(conn)
    dry = run_purge(make_target(database_url, PURGE_BATCH_SIZE=200), "keys", dry_run=True, started_by="test")
    assert (dry.outcome, dry.rows, dry.method) == ("succeeded", 3000, purge_batches.HEAP)
    assert len(_left(conn)) == 4000
    result = run_purge(make_target(database_url, PURGE_BATCH_SIZE=200), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows, result.method) == ("succeeded", 3000, purge_batches.HEAP)
    assert result.batches > 5  # page ranges of about 200 rows each, not one sweep
    assert _left(conn) == _kept()
    recorded = conn.execute(
        "SELECT method, rows_deleted FROM idemdash.purge_run WHERE run_id = %s", (result.run_id,)
    ).fetchone()
    assert recorded == ("heap", 3000)


def test_a_row_another_transaction_holds_is_skipped_and_goes_at_the_next_run(conn, database_url):
    _load(conn)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # an application transaction on one due key, open through the whole run
        with psycopg.connect(database_url) as other:
            other.execute("SELECT 1 FROM app.idempotency_request WHERE idempotency_key = 'k1' FOR UPDATE")
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        first = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
        assert (first.outcome, first.rows, first.method) == ("succeeded", 2999, purge_batches.HEAP)
        assert "k1" in _left(conn)
    finally:
        release.set()
        holder.join(10)
    second = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert second.rows == 1
    assert _left(conn) == _kept()


def test_a_table_mostly_live_keeps_due_order(conn, database_url):
    conn.execute(ADVICE["index_keys_due"].as_text(Tables()))
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
        " created_at, expires_at) SELECT 's', 'k' || g, 'h', 'succeeded', now() - interval '3 days',"
        " now() + CASE WHEN g % 10 = 1 THEN interval '-1 day' ELSE interval '1 day' END"
        " FROM generate_series(1, 20000) g"
    )  # a tenth due
    conn.execute("ANALYZE app.idempotency_request")
    result = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert result.method == purge_batches.DUE
    assert result.rows == 2000
