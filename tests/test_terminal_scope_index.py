"""The terminal and failed tabs filtered by scope: their count and their breakdown by worker read the recommended
index_keys_terminal_scope index-only (at 10M keys, without it, each read 6,500 table pages to test the scope), and
idemdash check proposes that index."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from idemdash.queries import Tables, key_breakdown
from idemdash.queries.indexes import ADVICE, MISSING, OK, list_index_status
from idemdash.queries.keys import KeyFilter

T = Tables()
ADVICE_NAME = "index_keys_terminal_scope"
KEYS = """
INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status, claimed_by,
                                     attempt_count, created_at, updated_at, expires_at)
SELECT 'scope-' || (i % 20), 'k-' || i, 'h', (ARRAY['succeeded', 'failed_final', 'failed_retryable'])[1 + i % 3]::text,
       'worker-' || (i % 7), 1 + i % 4, now() - interval '1 day', now() - i * interval '1 second',
       now() + interval '1 day'
FROM generate_series(1, 3000) i
"""


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _plan_nodes(child))]


def _statements(conn: psycopg.Connection, flt: KeyFilter) -> list[tuple[sql.Composable, dict]]:
    """The breakdown (and so the matching count) as a request runs it: recorded from the cursor, then run."""
    recorded: list[tuple[sql.Composable, dict]] = []

    class Spy(psycopg.Cursor):
        def execute(self, query, params=None, **kwargs):
            recorded.append((query, params))
            return super().execute(query, params, **kwargs)

    conn.cursor_factory = Spy
    try:
        breakdown = key_breakdown.break_down_keys(conn, T, flt, lease_seconds=300, hotspot_min_attempts=5, cap=100)
    finally:
        conn.cursor_factory = psycopg.Cursor
    # the list's matching count is this total: 3,000 keys over 3 statuses and 20 scopes
    assert breakdown.total == 50 and not breakdown.more and {g.name for g in breakdown.by_scope} == {"scope-5"}
    return recorded


def _status(conn: psycopg.Connection) -> str:
    return next(s.state for s in list_index_status(conn, T) if s.advice.name == ADVICE_NAME)


def test_a_scope_filtered_terminal_tab_counts_and_breaks_down_from_the_index_alone(conn):
    conn.execute(KEYS.replace("::text", "::app.idempotency_status"))
    assert _status(conn) == MISSING  # recommended: idemdash check and /health list it with its statement
    assert "INCLUDE (claimed_by, attempt_count)" in ADVICE[ADVICE_NAME].as_text(T)
    conn.execute(ADVICE[ADVICE_NAME].create_statement_in_transaction(T))
    conn.execute("ANALYZE app.idempotency_request")
    assert _status(conn) == OK
    flt = KeyFilter("failed_final", scope="scope-5", min_attempts=2)
    statements = _statements(conn, flt)
    assert len(statements) == 1  # the breakdown; the list's matching count is its total
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    name = ADVICE[ADVICE_NAME].index_name(T)
    for query, params in statements:
        (plan,) = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params, prepare=False).fetchone()[0]
        scans = [n for n in _plan_nodes(plan["Plan"]) if "Index Name" in n]
        assert [(n["Node Type"], n["Index Name"]) for n in scans] == [("Index Only Scan", name)], query
        assert "idempotency_scope" in scans[0]["Index Cond"]


def test_the_health_page_proposes_it(client):
    items = client.get("/api/v1/health/schema").get_json()["items"]
    finding = next(i for i in items if i["id"] == f"index.{ADVICE_NAME}")
    assert finding["status"] != "ok" and "terminal_scope_idemdash_idx" in finding["fix_sql"]
