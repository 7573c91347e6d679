"""The synthetic data generator: exact counts at every size, the distributions the benchmark relies on, speed at S."""

from __future__ import annotations

import math
import time

import psycopg
import pytest

from benchmarks.datagen import CONSUMERS, SCOPES, SIZES, WORKERS, generate, main
from idemdash.queries import Tables
from idemdash.queries.overview import count_keys_by_state
from idemdash.queries.workload import datagen

S = SIZES["S"]


def _one(conn: psycopg.Connection, query: str, params: object = None):
    row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


def _counts(conn: psycopg.Connection, query: str) -> dict[str, int]:
    return {name: count for name, count in conn.execute(query).fetchall()}


@pytest.fixture
def generated(database_url, conn):
    started = time.perf_counter()
    timings = generate(database_url, S, seed=1, jobs=2)
    return timings, time.perf_counter() - started


def test_sizes_follow_the_issue_exactly():
    large = SIZES["L"]
    assert (large.keys, large.inbox, large.outbox) == (10_000_000, 10_000_000, 2_000_000)
    assert large.processing == 100_000 and large.stuck == 20_000
    assert large.outbox_pending == 50_000
    xl = SIZES["XL"]  # an API at about 1,000 requests/s with a day's retention
    assert (xl.keys, xl.inbox, xl.outbox) == (100_000_000, 20_000_000, 5_000_000)
    assert xl.stuck == 200_000 and xl.outbox_pending == 125_000
    for size in SIZES.values():
        assert size.processing * 100 == size.keys
        assert size.stuck * 500 == size.keys
        assert size.outbox_pending * 40 == size.outbox
        assert (size.succeeded + size.processing + size.failed_retryable + size.failed_final) == size.keys
        # the row-number permutations must be bijections
        key_plan, outbox_plan = size.key_plan(), size.outbox_plan()
        assert math.gcd(key_plan.perm, size.keys - (size.processing - size.stuck)) == 1
        assert math.gcd(outbox_plan.perm, size.outbox - outbox_plan.backlog) == 1


def test_small_size_is_fast_and_exact(generated, conn, tables):
    timings, seconds = generated
    assert seconds < 5, f"size S took {seconds:.1f} s"
    assert set(timings.seconds) == {"insert", "vacuum_analyze"}

    statuses = _counts(conn, "SELECT status::text, count(*) FROM app.idempotency_request GROUP BY 1")
    assert statuses == {"processing": 100, "succeeded": 9_400, "failed_retryable": 200, "failed_final": 300}
    # stuck by the dashboard's own definition (the overview's query), not by the generator's
    counts = count_keys_by_state(conn, tables, lease_seconds=300)
    assert (counts.stuck, counts.processing, counts.failed_retryable) == (S.stuck, S.processing, 200)
    assert (
        _one(conn, "SELECT count(*) FROM app.idempotency_request WHERE status = 'processing' AND locked_until IS NULL")
        == S.stuck_null_lease
    )
    # active leases end well after now, so the stuck count holds through a benchmark run
    assert _one(
        conn,
        "SELECT min(locked_until) > now() + interval '115 minutes' FROM app.idempotency_request "
        "WHERE status = 'processing' AND locked_until > now()",
    )

    assert _one(conn, "SELECT count(*) FROM app.processed_message") == S.inbox
    assert _one(conn, "SELECT count(DISTINCT consumer_name) FROM app.processed_message") == CONSUMERS
    outbox = _counts(conn, "SELECT status, count(*) FROM app.outbox_event GROUP BY 1")
    assert outbox == {"pending": 50, "published": 1_949, "failed": 1}
    assert outbox["pending"] / S.outbox == 0.025


def test_rows_satisfy_the_reference_constraints_and_look_real(generated, conn):
    # the CHECK constraints held on insert; these are the relations the pages reason about
    assert (
        _one(
            conn,
            """
        SELECT count(*) FROM app.idempotency_request
        WHERE NOT (expires_at > created_at AND claimed_at >= created_at AND updated_at >= claimed_at
                   AND created_at > now() - interval '30 days 1 minute' AND created_at < now()
                   AND attempt_count >= 1)""",
        )
        == 0
    )
    assert (
        _one(
            conn,
            "SELECT count(*) FROM app.idempotency_request "
            "WHERE status::text <> 'processing' AND locked_until IS NOT NULL",
        )
        == 0
    )
    assert (
        _one(
            conn,
            "SELECT count(*) FROM app.idempotency_request WHERE status::text = 'succeeded' "
            "AND (response_body IS NULL OR result_ref_id IS NULL)",
        )
        == 0
    )
    assert (
        _one(
            conn,
            "SELECT count(*) FROM app.idempotency_request WHERE status::text LIKE 'failed%' AND failure_code IS NULL",
        )
        == 0
    )
    assert (
        _one(
            conn,
            "SELECT count(*) FROM app.outbox_event WHERE (status = 'published') <> "
            "(published_at IS NOT NULL) OR published_at < created_at",
        )
        == 0
    )

    assert _one(conn, "SELECT count(DISTINCT idempotency_scope) FROM app.idempotency_request") == SCOPES
    busiest, quietest = conn.execute("""
        SELECT max(n), min(n) FROM (SELECT count(*) AS n FROM app.idempotency_request GROUP BY idempotency_scope) s
    """).fetchone()
    assert busiest > 10 * quietest, "scopes should be skewed"
    workers = _one(conn, "SELECT count(DISTINCT claimed_by) FROM app.idempotency_request")
    assert WORKERS - 5 <= workers <= WORKERS
    assert _one(conn, "SELECT count(*) FROM app.idempotency_request WHERE claimed_by IS NULL") > 0
    first = _one(conn, "SELECT avg((attempt_count = 1)::int) FROM app.idempotency_request")
    assert 0.88 < first < 0.94
    assert _one(conn, "SELECT max(attempt_count) FROM app.idempotency_request") >= 20
    # one worker claims a large share of the hotspots
    assert (
        _one(conn, "SELECT avg((claimed_by = 'worker-07')::int) FROM app.idempotency_request WHERE attempt_count >= 5")
        > 0.3
    )
    # keys of mixed shapes: a browser-hostile path, spaces, non-ASCII, long ones; scopes with '/'
    for pattern in ("cart/%/checkout/%", "% rüge %", "invoice #% für Müller", "batch-%"):
        assert (
            _one(conn, "SELECT count(*) FROM app.idempotency_request WHERE idempotency_key LIKE %s", (pattern,)) > 0
        ), pattern
    assert _one(conn, "SELECT count(*) FROM app.idempotency_request WHERE idempotency_scope LIKE '%%/%%'") > 0
    # stuck keys with and without outbox evidence, as the key page's suggestions need
    evidence = """
        SELECT count(*) FROM app.idempotency_request k
        WHERE status = 'processing' AND locked_until < now() AND {} EXISTS (
            SELECT 1 FROM app.outbox_event o
            WHERE o.idempotency_scope = k.idempotency_scope AND o.idempotency_key = k.idempotency_key)"""
    assert _one(conn, evidence.format("")) > 0
    assert _one(conn, evidence.format("NOT")) > 0
    # a few inbox consumers are past a 30-day retention; the rest are not
    overdue = _one(
        conn,
        "SELECT count(*) FROM (SELECT consumer_name FROM app.processed_message GROUP BY 1 "
        "HAVING min(processed_at) < now() - interval '30 days') c",
    )
    assert 0 < overdue < CONSUMERS
    assert _one(conn, "SELECT count(*) FROM app.outbox_event WHERE status = 'pending' AND attempt_count >= 3") > 0


@pytest.mark.system  # about a second or more: the fast loop keeps within its minute
def test_same_seed_same_data_and_refuses_to_mix(generated, database_url, conn):
    digest = (
        "SELECT md5(string_agg(idempotency_scope || idempotency_key || status::text || attempt_count, ',' "
        "ORDER BY idempotency_scope, idempotency_key)) FROM app.idempotency_request"
    )
    first = _one(conn, digest)
    with pytest.raises(RuntimeError, match="already hold rows"):
        generate(database_url, S)
    generate(database_url, S, replace=True, seed=1)
    assert _one(conn, digest) == first
    generate(database_url, S, replace=True, seed=2)
    assert _one(conn, digest) != first
    assert _one(conn, "SELECT count(*) FROM app.idempotency_request") == S.keys


@pytest.mark.system
def test_text_status_column_and_command_line(text_status_database_url, capsys):
    assert main(["--size", "S", "--database-url", text_status_database_url, "--jobs", "1"]) == 0
    assert "size S generated in" in capsys.readouterr().out
    with psycopg.connect(text_status_database_url) as conn:
        assert (
            _one(
                conn,
                "SELECT data_type FROM information_schema.columns "
                "WHERE table_name = 'idempotency_request' AND column_name = 'status'",
            )
            == "text"
        )
        counts = count_keys_by_state(conn, Tables(), lease_seconds=300)
        assert (counts.stuck, counts.processing) == (S.stuck, S.processing)


def test_creates_the_reference_schema_when_absent(empty_database_url):
    generate(empty_database_url, S, status_type="text", vacuum=False)
    with psycopg.connect(empty_database_url) as conn:
        assert _one(conn, "SELECT count(*) FROM app.outbox_event") == S.outbox


CONSTRAINTS = (
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = 'app'::regnamespace AND contype IN ('p', 'u') ORDER BY 1, 2"
)


@pytest.mark.system
def test_a_load_with_its_constraints_deferred_writes_the_same_rows_and_adds_every_constraint_back(
    generated, database_url, conn
):
    digest = (
        "SELECT md5(string_agg(idempotency_scope || idempotency_key || status::text || attempt_count, ',' "
        "ORDER BY idempotency_scope, idempotency_key)) FROM app.idempotency_request"
    )
    first, constraints = _one(conn, digest), conn.execute(CONSTRAINTS).fetchall()
    assert len(constraints) >= 3  # each table's primary key, the outbox's unique event per key
    timings = generate(database_url, S, replace=True, seed=1, defer_constraints=True)
    assert "constraints" in timings.seconds
    assert conn.execute(CONSTRAINTS).fetchall() == constraints
    assert _one(conn, digest) == first
    with pytest.raises(psycopg.errors.UniqueViolation):  # the primary key holds again
        conn.execute("INSERT INTO app.idempotency_request SELECT * FROM app.idempotency_request LIMIT 1")


@pytest.mark.system
def test_a_load_interrupted_after_dropping_its_constraints_is_repaired_by_the_next(generated, database_url, conn):
    # a killed XL benchmark dropped the primary keys for its load; the next load found none to drop, so it added
    # none back, and the tables were left without them
    constraints = conn.execute(CONSTRAINTS).fetchall()
    deferred = datagen.list_deferrable_constraints(conn, Tables())
    datagen.record_deferred(conn, Tables(), deferred)
    for constraint in deferred:
        datagen.drop_constraint(conn, constraint)
    assert conn.execute(CONSTRAINTS).fetchall() == []
    lines: list[str] = []
    generate(database_url, S, replace=True, seed=1, defer_constraints=True, log=lines.append)
    assert conn.execute(CONSTRAINTS).fetchall() == constraints
    assert sum("restored: an interrupted load had dropped it" in line for line in lines) == len(deferred)
    assert sum("added back in" in line for line in lines) == len(deferred)  # and deferred again for this load
    assert datagen.list_deferred_record(conn, Tables()) == []
    assert _one(conn, "SELECT to_regclass('app.datagen_deferred_constraints')") is None
