"""The workload simulator: live threads against the reference functions, the backfill, and the CLI entry point."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.workload.backfill import backfill
from idemdash.workload.simulator import Simulator
from tests.waiting import wait_until


def _one(conn: psycopg.Connection, query: str, params: object = None) -> int:
    row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


def _sim_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("idemdash-sim-")]


@pytest.mark.system
def test_live_run_produces_every_kind_of_row(database_url, conn):
    sim = Simulator(database_url, rate=300, clients=4, seed=7, lease_seconds=1, publish_interval=0.3)
    sim.start()
    try:
        time.sleep(3.0)
    finally:
        assert sim.stop()
    time.sleep(1.1)  # let the last crashed workers' one-second leases run out
    stats = sim.stats.snapshot()

    def keys(where: str) -> int:
        return _one(conn, f"SELECT count(*) FROM app.idempotency_request WHERE {where}")

    assert keys("status = 'succeeded' AND attempt_count = 1") > 0
    assert keys("status = 'succeeded' AND attempt_count > 1") > 0
    assert keys("status = 'processing' AND locked_until < now() AND claimed_by IS NOT NULL") > 0
    assert (
        keys(
            "status = 'processing' AND locked_until < now() AND EXISTS ("
            " SELECT 1 FROM app.outbox_event o"
            " WHERE o.idempotency_scope = idempotency_request.idempotency_scope"
            "   AND o.idempotency_key = idempotency_request.idempotency_key)"
        )
        > 0
    )
    assert (
        keys(
            "status = 'processing' AND locked_until < now() AND NOT EXISTS ("
            " SELECT 1 FROM app.outbox_event o"
            " WHERE o.idempotency_scope = idempotency_request.idempotency_scope"
            "   AND o.idempotency_key = idempotency_request.idempotency_key)"
        )
        > 0
    )
    assert keys("status = 'failed_retryable'") > 0
    assert keys("status = 'failed_final'") > 0
    assert keys("attempt_count >= 5") > 0
    assert keys("attempt_count >= 5 AND claimed_by = 'worker-7'") > 0
    # keys the dashboard has to escape and route: slashes, spaces, non-ASCII
    assert keys("idempotency_key LIKE 'cart/%/checkout-%'") > 0
    assert keys("idempotency_key ~ ' ' AND idempotency_key ~ '[^[:ascii:]]'") > 0
    assert _one(conn, "SELECT count(DISTINCT idempotency_scope) FROM app.idempotency_request") >= 4
    assert _one(conn, "SELECT count(DISTINCT claimed_by) FROM app.idempotency_request") >= 4

    assert (
        _one(conn, "SELECT count(*) FROM app.outbox_event WHERE status = 'published' AND published_at >= created_at")
        > 0
    )
    assert _one(conn, "SELECT count(*) FROM app.outbox_event WHERE status = 'pending'") > 0
    assert _one(conn, "SELECT count(*) FROM app.outbox_event WHERE status = 'pending' AND attempt_count > 0") > 0
    assert (
        _one(
            conn,
            "SELECT count(*) FROM app.outbox_event WHERE event_type = 'legacy.unroutable' AND status = 'published'",
        )
        == 0
    )
    assert _one(conn, "SELECT count(DISTINCT consumer_name) FROM app.processed_message") >= 3

    for counter in (
        "new_claim",
        "replay_success",
        "in_progress",
        "retry_reclaim",
        "final_failure",
        "payload_mismatch",
        "duplicate_ignored",
        "processed",
        "published",
        "publish_failed",
    ):
        assert stats.get(counter, 0) > 0, counter
    assert stats.get("errors", 0) == 0
    # what the stats counted is what the table holds
    assert _one(conn, "SELECT count(*) FROM app.processed_message") == stats["processed"]
    assert _one(conn, "SELECT count(*) FROM app.outbox_event WHERE status = 'published'") == stats["published"]


def test_stop_returns_promptly_and_ends_every_thread(database_url):
    sim = Simulator(database_url, rate=50, clients=3, seed=1)
    sim.start()
    assert len(_sim_threads()) == 5  # three clients, the publisher, the consumer
    wait_until(lambda: sim.stats["requests"] > 0, timeout=5)
    started = time.monotonic()
    assert sim.stop(timeout=5.0)
    assert time.monotonic() - started < 2.0
    assert not sim.running
    assert _sim_threads() == []


@pytest.mark.system  # about a second or more: the fast loop keeps within its minute
def test_threads_survive_lost_connections(database_url, conn):
    sim = Simulator(database_url, rate=100, clients=2, seed=3, publish_interval=0.2)
    sim.start()
    try:
        sessions = "FROM pg_stat_activity WHERE application_name LIKE 'idemdash-simulate-%'"
        wait_until(lambda: sim.stats["succeeded"] > 10 and _one(conn, f"SELECT count(*) {sessions}") == 4)
        # what a database restart looks like to the clients: every session killed at once
        assert _one(conn, f"SELECT count(pg_terminate_backend(pid)) {sessions}") == 4
        wait_until(lambda: sim.stats["errors"] > 0)
        before = sim.stats.snapshot()
        wait_until(
            lambda: (
                sim.stats["succeeded"] > before["succeeded"] + 20
                and sim.stats["published"] > before.get("published", 0)
            )
        )
        assert len(_sim_threads()) == 4
    finally:
        assert sim.stop()


@pytest.mark.system
@pytest.mark.parametrize("url_fixture", ["database_url", "text_status_database_url"])
def test_backfill_writes_history_of_every_kind(request, url_fixture, tables):
    url = request.getfixturevalue(url_fixture)
    with psycopg.connect(url, autocommit=True) as conn:
        # the window as the backfill saw it: a check's own now() comes later, and by then a row written at the
        # window's edge is older than three days (seen on a loaded machine)
        window_start = conn.execute("SELECT now() - interval '3 days'").fetchone()[0]
        started = time.monotonic()
        written = backfill(conn, tables, days=3)
        assert time.monotonic() - started < 5.0

        def count(query: str) -> int:
            return _one(conn, query)

        total = count("SELECT count(*) FROM app.idempotency_request")
        assert total == written["keys"] == 9000
        for status in ("succeeded", "failed_retryable", "failed_final"):
            n = count(f"SELECT count(*) FROM app.idempotency_request WHERE status = '{status}'")
            assert n == written[status] and n > 0, status
        stuck = count(
            "SELECT count(*) FROM app.idempotency_request WHERE status = 'processing' "
            "AND locked_until < now() AND claimed_by IS NOT NULL AND claimed_at >= created_at"
        )
        assert stuck == written["stuck"] > 0
        assert (
            count(
                "SELECT count(*) FROM app.idempotency_request ir WHERE status = 'processing' AND EXISTS ("
                " SELECT 1 FROM app.outbox_event o WHERE o.idempotency_scope = ir.idempotency_scope"
                " AND o.idempotency_key = ir.idempotency_key)"
            )
            > 0
        )
        # attempts: mostly first-time, some retried, a few hotspots
        ones = count("SELECT count(*) FROM app.idempotency_request WHERE attempt_count = 1")
        assert ones > total * 0.7
        assert count("SELECT count(*) FROM app.idempotency_request WHERE attempt_count BETWEEN 2 AND 4") > 0
        assert count("SELECT count(*) FROM app.idempotency_request WHERE attempt_count >= 5") > 0
        # history is spread over the window, and some terminal rows are already purgeable
        assert count("SELECT count(*) FROM app.idempotency_request WHERE created_at < now() - interval '2 days'") > 0
        assert count("SELECT count(*) FROM app.idempotency_request WHERE created_at > now() - interval '1 day'") > 0
        assert (
            _one(
                conn,
                "SELECT count(*) FROM app.idempotency_request WHERE created_at < %s OR updated_at > now()",
                (window_start,),
            )
            == 0
        )
        assert (
            count(
                "SELECT count(*) FROM app.idempotency_request WHERE status IN ('succeeded', 'failed_final') "
                "AND expires_at < now()"
            )
            > 0
        )
        assert (
            count(
                "SELECT count(*) FROM app.idempotency_request WHERE status IN ('succeeded', 'failed_final') "
                "AND expires_at > now()"
            )
            > 0
        )
        assert count("SELECT count(*) FROM app.idempotency_request WHERE idempotency_key ~ '[/ ]'") > 0
        # outbox: mostly published, a few pending, some of those old
        assert count("SELECT count(*) FROM app.outbox_event WHERE status = 'published'") == written["outbox_published"]
        assert (
            count(
                "SELECT count(*) FROM app.outbox_event WHERE status = 'published' "
                "AND (published_at IS NULL OR published_at < created_at OR published_at > now())"
            )
            == 0
        )
        pending = count("SELECT count(*) FROM app.outbox_event WHERE status = 'pending'")
        assert 0 < pending == written["outbox_pending"] < written["outbox_published"] / 10
        assert (
            count(
                "SELECT count(*) FROM app.outbox_event WHERE status = 'pending' "
                "AND created_at < now() - interval '1 day'"
            )
            > 0
        )
        # inbox over several consumers, none older than the window
        assert count("SELECT count(*) FROM app.processed_message") == written["inbox"] > 0
        assert count("SELECT count(DISTINCT consumer_name) FROM app.processed_message") >= 4
        assert _one(conn, "SELECT count(*) FROM app.processed_message WHERE processed_at < %s", (window_start,)) == 0

        again = backfill(conn, tables, days=3)
        assert again["keys"] == 9000
        assert count("SELECT count(*) FROM app.idempotency_request") == 18000


def test_long_backfill_reaches_past_inbox_retention(conn, tables):
    written = backfill(conn, tables, days=32, keys_per_day=40)
    assert written["keys"] == 32 * 40
    assert _one(conn, "SELECT count(*) FROM app.processed_message WHERE processed_at < now() - interval '30 days'") > 0
    assert _one(conn, "SELECT count(*) FROM app.outbox_event WHERE created_at < now() - interval '30 days'") > 0


def test_cli_without_reference_schema_says_what_to_run(empty_database_url):
    result = CliRunner().invoke(main, ["simulate", "--database-url", empty_database_url, "--duration", "1"])
    assert result.exit_code == 1
    assert "reference schema is missing" in result.output
    assert "idemdash init-app-schema" in result.output
    assert _sim_threads() == []


@pytest.mark.system  # about a second or more: the fast loop keeps within its minute
def test_cli_backfills_then_runs_for_the_duration(database_url, conn):
    started = time.monotonic()
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            "--database-url",
            database_url,
            "--duration",
            "1",
            "--backfill",
            "1",
            "--rate",
            "50",
            "--seed",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 10
    assert "backfilled 1 day in" in result.output
    assert "final: requests=" in result.output
    assert _sim_threads() == []
    # the live rows are the ones newer than the backfill's newest slice
    assert (
        _one(conn, "SELECT count(*) FROM app.idempotency_request WHERE created_at > now() - interval '5 minutes'") > 0
    )
