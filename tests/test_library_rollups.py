"""A library database's state counts at scale: the rollup job stores each state's count with how long counting it
took; /tables and /metrics then read the slow ones stored (saying when they were counted) and count the quick ones
live. Only the library rollup runs there; a reference database runs it too (its /tables), beside its own rollups.
A state slower to count than the job's budget is stored as the planner's estimate, and shown as one."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.core import settings
from idemdash.jobs.rollups import run_rollups
from idemdash.queries.migrate import migrate
from idemdash.queries.profile_states import MeasuredState, measure_states
from idemdash.queries.rollup_store import list_rollups, upsert_rollup
from idemdash.queries.target import Target
from tests import library_ddl as ddl
from tests.test_detect import _create_case
from tests.test_profile_pages import SPRING_COUNTS, SPRING_ROWS

SPRING = {
    "PROFILE": "spring-modulith",
    "APP_SCHEMA": "modulith",
    "INBOX_RETENTION_DAYS": 1,
    "OUTBOX_RETENTION_DAYS": 1,
    "DEFAULT_LEASE_SECONDS": 300,
}


def _spring(url: str) -> None:
    _create_case(url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        migrate(conn)


def test_the_job_stores_every_library_state_with_its_time_and_no_reference_rollup(empty_database_url):
    _spring(empty_database_url)
    target = Target.from_settings(settings.load(DATABASE_URL=empty_database_url, **SPRING))
    started = time.perf_counter()
    done = run_rollups(target, force=True)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert list(done) == ["library_states:"]
    with psycopg.connect(empty_database_url) as conn:
        [stored] = list_rollups(conn, [("library_states", "")])
    counts = {(r["role"], r["meaning"]): r["count"] for r in stored.payload}
    assert {meaning: counts[("outbox", meaning)] for meaning in SPRING_COUNTS} == SPRING_COUNTS
    # each state's own time, in milliseconds: taken, and within the round that took them all
    assert all(r["ms"] > 0 for r in stored.payload), stored.payload
    assert sum(r["ms"] for r in stored.payload) <= elapsed_ms


def test_a_slow_state_is_read_stored_with_its_time_and_a_quick_one_counted_now(make_app, empty_database_url):
    _spring(empty_database_url)
    counted_at = datetime.now(timezone.utc)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        # as the job stores them at size: 'done' took 900 ms to count (read stored), 'pending' 2 ms (counted now)
        upsert_rollup(
            conn,
            "library_states",
            "",
            counted_at,
            905.0,
            [MeasuredState("outbox", "done", 1_000_000, 900.0), MeasuredState("outbox", "pending", 777, 2.0)],
        )
    client = make_app(empty_database_url, **SPRING).test_client()
    states = {s["meaning"]: s for s in client.get("/api/v1/tables").get_json()["tables"][0]["states"]}
    assert states["done"]["count"] == 1_000_000 and states["done"]["computed_at"] is not None
    assert states["pending"]["count"] == SPRING_COUNTS["pending"] and states["pending"]["computed_at"] is None
    page = client.get("/tables").data.decode()
    assert "1,000,000" in page and "counted by the scheduler" in page
    scrape = client.get("/metrics").data.decode()
    assert 'state="done",table="event_publication"} 1e+06' in scrape


def test_a_stale_stored_count_is_not_used(make_app, empty_database_url):
    _spring(empty_database_url)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        upsert_rollup(
            conn,
            "library_states",
            "",
            datetime(2026, 1, 1, tzinfo=timezone.utc),
            905.0,
            [MeasuredState("outbox", "done", 1_000_000, 900.0)],
        )
    answer = make_app(empty_database_url, **SPRING).test_client().get("/api/v1/tables").get_json()
    done = {s["meaning"]: s for s in answer["tables"][0]["states"]}["done"]
    assert (done["count"], done["computed_at"]) == (SPRING_COUNTS["done"], None)


def test_a_reference_database_counts_its_states_too_for_its_tables_page(database_url):
    # /tables reads the reference tables as a profile: at 100M keys its live counts took 110 s, so the job stores
    # them for it as for a library's
    target = Target.from_settings(settings.load(DATABASE_URL=database_url))
    done = run_rollups(target, force=True)
    assert "library_states:" in done and "key_windows:" in done
    with psycopg.connect(database_url) as conn:
        [stored] = list_rollups(conn, [("library_states", "")])
    assert {(r["role"], r["meaning"]) for r in stored.payload} >= {
        ("keys", "done"),
        ("keys", "stuck"),
        ("outbox", "pending"),
        ("inbox", "purgeable"),
    }
    assert not any(r["estimated"] for r in stored.payload)


def _succeeded_keys(conn: psycopg.Connection, n: int) -> None:
    conn.execute(
        """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        created_at, updated_at, expires_at)
                    SELECT 'bulk', 'k' || i, 'h', 'succeeded', now(), now(), now() + interval '1 day'
                    FROM generate_series(1, %s) AS i""",
        (n,),
    )
    conn.execute("ANALYZE app.idempotency_request")


@pytest.mark.system  # over a second: writes 300,000 keys
def test_a_state_slower_than_the_budget_is_stored_as_the_planners_estimate_and_shown_as_one(database_url, make_app):
    with psycopg.connect(database_url, autocommit=True) as conn:
        _succeeded_keys(conn, 300_000)
        config = settings.load(DATABASE_URL=database_url)
        with conn.transaction():
            # 1 ms for a state: counting 300,000 keys takes longer; the empty outbox's states do not
            measured = {(m.role, m.meaning): m for m in measure_states(conn, config, budget_ms=1)}
            # the budget is the job's for each count only: the transaction's own timeout is untouched after it
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
        done = measured[("keys", "done")]
        assert done.estimated and done.ms >= 1
        assert 240_000 <= done.count <= 360_000  # the statistics' estimate, not a count
        assert not measured[("outbox", "pending")].estimated and measured[("outbox", "pending")].count == 0
        upsert_rollup(conn, "library_states", "", datetime.now(timezone.utc), 2_000.0, list(measured.values()))
    client = make_app(database_url).test_client()
    listed = client.get("/api/v1/tables").get_json()["tables"]
    tables = {t["role"]: {s["meaning"]: s for s in t["states"]} for t in listed}
    assert tables["keys"]["done"]["estimated"] is True and tables["keys"]["done"]["count"] == done.count
    assert tables["keys"]["done"]["computed_at"] is not None
    assert tables["outbox"]["pending"]["estimated"] is False and tables["outbox"]["pending"]["count"] == 0
    page = BeautifulSoup(client.get("/tables").data, "html.parser")
    cell = page.select_one('tr[data-role="keys"] td[data-meaning="done"] a[data-estimated]')
    assert cell is not None and cell.get_text().startswith("≈") and f"{done.count:,}" in cell.get_text()
    assert "the planner's estimate" in page.get_text()


def test_check_advises_the_incomplete_index_builds_it_and_the_pending_count_reads_it(empty_database_url, monkeypatch):
    from click.testing import CliRunner

    from idemdash.cli import main

    _spring(empty_database_url)
    for name, value in SPRING.items():
        monkeypatch.setenv(f"IDEMDASH_{name}", str(value))
    runner = CliRunner()
    before = runner.invoke(main, ["check", "--database-url", empty_database_url])
    assert before.exit_code == 1, before.output
    assert "[missing] event_publication_incomplete_idemdash_idx on modulith.event_publication" in before.output
    assert (
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS "event_publication_incomplete_idemdash_idx" ON '
        '"modulith"."event_publication" ("publication_date")'
    ) in before.output
    built = runner.invoke(main, ["check", "--apply-indexes", "--database-url", empty_database_url])
    assert "done in" in built.output and built.exit_code == 0, built.output
    assert "[ok] event_publication_incomplete_idemdash_idx" in built.output
    with psycopg.connect(empty_database_url) as conn:
        own = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'modulith' ORDER BY 1").fetchall()
        assert [n for (n,) in own] == [
            "event_publication_by_completion_date_idx",
            "event_publication_incomplete_idemdash_idx",
            "event_publication_pkey",
            "event_publication_serialized_event_hash_idx",
        ] or ("event_publication_incomplete_idemdash_idx",) in own
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            "EXPLAIN SELECT count(*) FROM modulith.event_publication "
            "WHERE (completion_date IS NULL OR status <> 'COMPLETED')"
        ).fetchall()
        assert "event_publication_incomplete_idemdash_idx" in " ".join(r[0] for r in plan)
