"""A key's page reads its own key, at any size: every statement of `/keys/<scope>/<key>`, `/key?scope=&key=` and
their JSON twins is a probe of an index on the key (the keys' primary key, the outbox's (scope, key) index, the
audit log's and the notes' key indexes), and reads a handful of rows and pages.

The guard behind docs/benchmarks.md (a key's page at 2M and 20M keys: benchmarks/results/page-2026-11-28-sizes.md):
the page once listed the scope's latest stored responses through the (status, updated_at) index, walking every
succeeded key of every other scope newer than this scope's last success: nothing at the generated data sets, whose
scopes all succeed every minute, and 651 ms at 2M keys on data with a scope that went quiet. Here the scope went
quiet 50 days ago and 3,000 keys of another scope succeeded since; the plans are asked with EXPLAIN (ANALYZE,
BUFFERS), so a statement that reads more than its key fails whatever the planner estimated.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

from idemdash.queries import Tables
from idemdash.queries.indexes import ADVICE

T = Tables()
SCOPE, KEY = "monthly_statement", "statement/2026-11/stuck"
# the tables a key page reads, and the columns an index probe on one key names in its Index Cond
KEY_COLUMNS = {
    T.keys: ("idempotency_scope", "idempotency_key"),
    T.outbox: ("idempotency_scope", "idempotency_key"),
    "audit_log": ("scope", "key"),
    "triage_note": ("scope", "key"),
}
MAX_ROWS = 25  # per scan: the neighbours' read is 2 x 10 keys at most; the key's own rows are a few
MAX_BUFFERS = 60  # per statement, shared blocks hit or read (the walk this guards against read 20,459 at 2M)


@pytest.fixture
def quiet_scope(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        # another scope, busy: 3,000 keys succeeded in the last hour, each with its response
        conn.execute("""INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                            result_ref_type, result_ref_id, response_body, claimed_by, claimed_at, attempt_count,
                            created_at, updated_at, expires_at)
                        SELECT 'create_order', 'order-' || g, md5(g::text), 'succeeded', 'order', gen_random_uuid(),
                               jsonb_build_object('id', gen_random_uuid(), 'amount', g), 'api-1',
                               now() - g * interval '1 s', 1, now() - g * interval '1 s', now() - g * interval '1 s',
                               now() + interval '1 day'
                        FROM generate_series(1, 3000) g""")
        # this scope went quiet 50 days ago; one key of it is stuck now, with the outbox row of its effect
        conn.execute(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                            result_ref_type, result_ref_id, response_body, claimed_by, claimed_at, attempt_count,
                            created_at, updated_at, expires_at)
                        SELECT %s, 'statement/2026-09/' || g, md5(g::text), 'succeeded', 'statement',
                               gen_random_uuid(), jsonb_build_object('id', gen_random_uuid(), 'total', g), 'api-2',
                               now() - interval '50 days', 1, now() - interval '50 days', now() - interval '50 days',
                               now() + interval '30 days'
                        FROM generate_series(1, 40) g""",
            (SCOPE,),
        )
        conn.execute(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                            claimed_by, claimed_at, locked_until, attempt_count, created_at, updated_at, expires_at)
                        VALUES (%s, %s, 'h', 'processing', 'api-2', now() - interval '1 hour',
                                now() - interval '30 minutes', 1, now() - interval '1 hour',
                                now() - interval '1 hour', now() + interval '1 day')""",
            (SCOPE, KEY),
        )
        conn.execute(
            """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                            idempotency_key, payload)
                        VALUES ('statement.created', 'statement', gen_random_uuid(), %s, %s, '{"total": 7}')""",
            (SCOPE, KEY),
        )
        for advice in ADVICE.values():
            conn.execute(advice.create_statement(T))
        conn.execute("VACUUM (ANALYZE)")
    return database_url


def _nodes(plan: dict[str, Any]):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _reads_of_the_key(conn: psycopg.Connection, query: sql.Composable, params: Any) -> list[str]:
    """What is wrong with one statement's plan, run: [] when it only probes indexes on the key, within bounds."""
    explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + query
    (result,) = conn.execute(explain, params, prepare=False).fetchone()[0]
    problems = []
    for node in _nodes(result["Plan"]):
        table = node.get("Relation Name")
        if table not in KEY_COLUMNS:
            continue
        kind, cond = node["Node Type"], node.get("Index Cond", "")
        if kind not in ("Index Scan", "Index Only Scan") or not all(f"{c} " in cond for c in KEY_COLUMNS[table]):
            problems.append(
                f"{kind} on {table} ({node.get('Index Name')}, Index Cond {cond or 'none'}): not a "
                "probe of an index on the key"
            )
        rows = node.get("Actual Rows", 0) * node.get("Actual Loops", 1) + node.get("Rows Removed by Filter", 0)
        if rows > MAX_ROWS:
            problems.append(f"{kind} on {table} read {rows:g} rows")
    buffers = result["Plan"].get("Shared Hit Blocks", 0) + result["Plan"].get("Shared Read Blocks", 0)
    if buffers > MAX_BUFFERS:
        problems.append(f"{buffers} shared buffers")
    return problems


@pytest.mark.system  # three thousand keys and the recommended indexes: over a second
def test_every_statement_of_a_key_page_probes_the_keys_own_indexes(quiet_scope, make_app, monkeypatch):
    client = make_app(quiet_scope).test_client()
    path = f"{quote(SCOPE, safe='')}/{quote(KEY, safe='/')}"
    by_query = f"scope={quote(SCOPE)}&key={quote(KEY, safe='')}"
    pages = [f"/keys/{path}", f"/api/v1/keys/{path}", f"/key?{by_query}", f"/api/v1/key?{by_query}"]
    recorded: list[tuple[str, sql.Composable, Any]] = []
    real_execute = psycopg.Cursor.execute
    page = ""

    def spy(self, query, params=None, **kwargs):
        if isinstance(query, sql.Composable) and any(t in query.as_string(None) for t in KEY_COLUMNS):
            recorded.append((page, query, params))
        return real_execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    for page in pages:
        assert client.get(page).status_code == 200, page
    # held for review: the hold's audit row is looked up too, and the form is still offered
    held = client.post(
        "/api/v1/keys/reclassify",
        json={"scope": SCOPE, "key": KEY, "to": "needs_review", "reason": "INC-9: look at the statement run"},
    )
    assert held.status_code == 200, held.get_json()
    recorded.clear()
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
    monkeypatch.undo()
    assert "Use this" in client.get(pages[0]).get_data(as_text=True)  # the held key's form reads its fill-ins
    assert len(recorded) >= 4 * 4, [(p, q.as_string(None)[:60]) for p, q, _ in recorded]

    problems = []
    with psycopg.connect(quiet_scope) as conn:
        # the outbox, the audit log and the notes are a few pages here, where reading them whole is cheapest: ask
        # which index the plan takes when it must take one (as at size, where it does)
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        for page, query, params in recorded:
            problems += [
                f"{page}: {' '.join(query.as_string(None).split())[:90]}…: {p}"
                for p in _reads_of_the_key(conn, query, params)
            ]
    assert not problems, "\n".join(problems)
