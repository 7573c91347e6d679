"""The snapshot job (numbers equal the overview's, rows purged between snapshots, one writer, retention)
and the overview's trend lines drawn from the snapshots."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from bs4 import BeautifulSoup

from idemdash.dashboard.targets import app_settings
from idemdash.jobs import snapshots
from idemdash.jobs.scheduler import register_jobs
from idemdash.queries.target import Target
from tests.test_overview import make_world

EMPTY_TEXT = "trends appear after the snapshot job has run for a few minutes"


@pytest.fixture
def app(make_app):
    return make_app()


def snapshot_rows(conn) -> list[dict]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM idemdash.metric_snapshot ORDER BY taken_at").fetchall()


def add_stuck(conn, n: int, prefix: str) -> None:
    conn.execute(
        """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        claimed_by, claimed_at, locked_until, expires_at)
                    SELECT 's', %s || g, 'h', 'processing', 'w', now() - interval '1 hour',
                           now() - interval '30 minutes', now() + interval '1 day'
                    FROM generate_series(1, %s) g""",
        (prefix, n),
    )


def add_pending(conn, n: int, age: str) -> None:
    conn.execute(
        """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload, status, created_at)
                    SELECT 'e', 'a', gen_random_uuid(), 's', gen_random_uuid()::text, '{}', 'pending',
                           now() - %s::interval
                    FROM generate_series(1, %s)""",
        (age, n),
    )


def add_finished_run(conn, rows: int, *, dry_run: bool = False, ago: str = "1 second", outcome: str = "succeeded"):
    conn.execute(
        """INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, rows_deleted, dry_run,
                                                    outcome, started_by)
                    VALUES ('inbox', now() - %s::interval - interval '1 second', now() - %s::interval, %s, %s, %s,
                            'test')""",
        (ago, ago, rows, dry_run, outcome),
    )


def add_snapshot(conn, ago: str, stuck: int, pending: int = 0, lag: float | None = None, purged: int = 0) -> None:
    conn.execute(
        """INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h, rows_purged)
                    VALUES (now() - %s::interval, %s, %s, 0, 0, %s, %s, 0, %s)""",
        (ago, stuck, stuck, pending, lag, purged),
    )


# -- the job -------------------------------------------------------------------------------------------------------


def test_snapshot_records_exactly_the_overview_numbers(app, conn):
    make_world(conn, 11)
    overview = app.test_client().get("/api/v1/overview").get_json()
    taken = snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert taken is not None
    [row] = snapshot_rows(conn)
    assert row["taken_at"] == taken.taken_at
    assert row["stuck_keys"] == overview["keys"]["stuck"] > 0
    assert row["processing_keys"] == overview["keys"]["processing"]
    assert row["failed_retryable_keys"] == overview["keys"]["failed_retryable"]
    assert row["failed_final_keys_24h"] == overview["keys"]["failed_final_24h"]
    assert row["outbox_pending"] == overview["outbox"]["pending"] > 0
    assert row["outbox_lag_seconds"] == pytest.approx(overview["outbox"]["lag_seconds"], abs=5)
    assert row["inbox_rows_24h"] == overview["inbox"]["rows_24h"] > 0
    assert row["rows_purged"] == 0


def test_rows_purged_counts_real_runs_finished_since_the_previous_snapshot(app, conn):
    add_finished_run(conn, 500, ago="10 minutes")  # before the first snapshot's interval: not counted
    add_finished_run(conn, 7, ago="5 seconds")  # within the first interval (60 s)
    first = snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert first.rows_purged == 7

    add_finished_run(conn, 100, ago="0 seconds")
    add_finished_run(conn, 50, dry_run=True, ago="0 seconds")  # a dry run deletes nothing
    add_finished_run(conn, 30, outcome="budget_exhausted", ago="0 seconds")  # partial, but those rows are gone
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, rows_deleted, dry_run, started_by)
                    VALUES ('keys', 999, false, 'test')""")  # still running: counted once it finishes
    second = snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert second.rows_purged == 130

    third = snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert third.rows_purged == 0  # nothing counted twice
    conn.execute(
        "UPDATE idemdash.purge_run SET outcome = 'succeeded', finished_at = clock_timestamp() WHERE outcome = 'running'"
    )
    assert snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0).rows_purged == 999
    assert [r["rows_purged"] for r in snapshot_rows(conn)] == [7, 130, 0, 999]


def test_a_second_replica_does_not_double_the_snapshots(app, conn, database_url):
    target = Target.from_settings(app_settings(app))
    assert snapshots.run_snapshot(target) is not None
    assert snapshots.run_snapshot(target) is None  # within half an interval of the last one
    # a writer holding the lock right now: skip, do not wait
    with psycopg.connect(database_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(hashtextextended('idemdash.snapshot', 0))")
        assert snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0) is None
    assert len(snapshot_rows(conn)) == 1


def test_old_snapshots_are_dropped_in_bounded_batches(app, conn, monkeypatch):
    for days in range(31, 38):
        add_snapshot(conn, f"{days} days", stuck=1)
    add_snapshot(conn, "29 days", stuck=2)
    monkeypatch.setattr(snapshots, "DELETE_BATCH", 5)
    snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    rows = snapshot_rows(conn)
    assert len(rows) == 2 + 1 + 1  # 7 old - 5 dropped, the 29-day one, the new one
    snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    rows = snapshot_rows(conn)
    assert [r["stuck_keys"] for r in rows][:1] == [2]  # every snapshot past 30 days is gone, the 29-day one stays
    assert len(rows) == 3


def test_snapshot_retention_follows_the_setting(make_app, conn):
    add_snapshot(conn, "3 days", stuck=1)
    add_snapshot(conn, "1 day", stuck=2)
    app = make_app(SNAPSHOT_RETENTION_DAYS=2)
    snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert [r["stuck_keys"] for r in snapshot_rows(conn)][:1] == [2]


def test_the_job_is_registered_with_the_interval_and_survives_an_outage(app, caplog):
    scheduler = BackgroundScheduler()
    register_jobs(scheduler, Target.from_settings(replace(app_settings(app), snapshot_interval_seconds=45)))
    jobs = {job.id: job for job in scheduler.get_jobs()}
    assert {"snapshot", "purge_keys", "purge_inbox", "purge_outbox"} <= set(jobs)
    assert jobs["snapshot"].trigger.interval == timedelta(seconds=45)
    # a database that does not answer: logged, no exception into the scheduler
    snapshots.snapshot_job(
        Target.from_settings(
            replace(app_settings(app), database_url="postgresql://127.0.0.1:1/nothing?connect_timeout=1")
        )
    )
    # the cause, once (the target says it; the job's own line would repeat it every interval)
    assert caplog.text.count("database: connection refused by 127.0.0.1 port 1") == 1


# -- the trends on the overview --------------------------------------------------------------------------------------


def _polylines(response) -> dict[str, list[tuple[float, float]]]:
    soup = BeautifulSoup(response.data, "html.parser")
    lines = {}
    for figure in soup.select("figure[data-trend]"):
        line = figure.select_one("svg polyline")
        if line is None:  # a rate the snapshots did not count
            assert figure.select_one(".spark-empty") is not None
            continue
        pairs = [tuple(map(float, p.split(","))) for p in line["points"].split()]
        assert int(line["data-points"]) == len(pairs)
        lines[figure["data-trend"]] = pairs
    return lines


def test_trends_draw_one_point_per_snapshot_from_the_job(app, conn):
    client = app.test_client()
    for stuck, pending in ((0, 0), (3, 2), (8, 5)):
        add_stuck(
            conn, stuck - conn.execute("SELECT count(*) FROM app.idempotency_request").fetchone()[0], f"k{stuck}-"
        )
        add_pending(conn, pending - conn.execute("SELECT count(*) FROM app.outbox_event").fetchone()[0], "2 minutes")
        snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    response = client.get("/")
    lines = _polylines(response)
    assert set(lines) == {
        "claims_per_minute",
        "completions_per_minute",
        "failures_per_minute",
        "stuck_keys",
        "outbox_pending",
        "outbox_lag_seconds",
        "rows_purged",
    }
    assert all(len(points) == 3 for points in lines.values())
    stuck = lines["stuck_keys"]
    # left to right in time; higher values are drawn higher (smaller y), zero on the baseline
    assert stuck[0][0] < stuck[1][0] < stuck[2][0]
    assert stuck[0][1] > stuck[1][1] > stuck[2][1]
    assert stuck[0][1] == 66 and stuck[2][1] == 14
    soup = BeautifulSoup(response.data, "html.parser")
    assert soup.select_one("#trend-stuck_keys .spark-now").get_text() == "8"
    assert soup.select_one("[data-trends-empty]") is None
    assert 'style="' not in response.get_data(as_text=True)  # the CSP forbids inline styles

    body = client.get("/api/v1/overview").get_json()
    points = body["trends"]["points"]
    assert [p["stuck_keys"] for p in points] == [0, 3, 8]
    assert [p["outbox_pending"] for p in points] == [0, 2, 5]
    assert points[0]["outbox_lag_seconds"] is None and points[2]["outbox_lag_seconds"] >= 120
    assert body["trends"]["window_hours"] == 24 and body["trends"]["problem"] is None


def test_trends_show_only_the_last_24_hours(client, conn):
    add_snapshot(conn, "30 hours", stuck=100)
    for minutes in (50, 40, 30, 20, 10):
        add_snapshot(conn, f"{minutes} minutes", stuck=minutes)
    lines = _polylines(client.get("/"))
    assert len(lines["stuck_keys"]) == 5
    points = client.get("/api/v1/overview").get_json()["trends"]["points"]
    assert [p["stuck_keys"] for p in points] == [50, 40, 30, 20, 10]


def test_many_snapshots_are_merged_keeping_peaks_and_sums(client, conn):
    conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h, rows_purged)
                    SELECT now() - g * interval '1 minute', CASE WHEN g = 700 THEN 999 ELSE 1 END, 0, 0, 0, g % 7,
                           NULL, 0, 10
                    FROM generate_series(1, 1400) g""")
    body = client.get("/api/v1/overview").get_json()["trends"]
    points = body["points"]
    assert len(points) == body["max_points"] == 240
    assert sum(p["snapshots"] for p in points) == 1400
    assert max(p["stuck_keys"] for p in points) == 999
    assert sum(p["rows_purged"] for p in points) == 14000
    assert len(_polylines(client.get("/"))["stuck_keys"]) == 240


def test_no_snapshots_yet_shows_the_empty_state(client, conn):
    response = client.get("/")
    soup = BeautifulSoup(response.data, "html.parser")
    assert EMPTY_TEXT in soup.select_one("[data-trends-empty]").get_text(" ", strip=True)
    assert soup.select("svg.spark") == []
    add_snapshot(conn, "1 minute", stuck=1)  # one point is not a line yet
    assert EMPTY_TEXT in BeautifulSoup(client.get("/").data, "html.parser").get_text(" ", strip=True)
    assert client.get("/api/v1/overview").get_json()["trends"]["points"][0]["stuck_keys"] == 1


def test_trends_degrade_alone_when_idemdash_schema_is_missing(client, conn):
    conn.execute("DROP TABLE idemdash.metric_snapshot")
    response = client.get("/")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    assert "idemdash migrate" in soup.select_one("section.trends .panel-problem").get_text()
    assert soup.select_one('[data-metric="stuck"]') is not None
    body = client.get("/api/v1/overview").get_json()
    assert body["trends"]["points"] == [] and body["trends"]["problem"]["problem"] == "schema"


def test_the_polling_fragment_carries_the_trends(client, conn):
    response = client.get("/", headers={"HX-Request": "true"})
    soup = BeautifulSoup(response.data, "html.parser")
    assert soup.select_one("header.topbar") is None
    assert EMPTY_TEXT in soup.select_one("[data-trends-empty]").get_text(" ", strip=True)
    add_snapshot(conn, "2 minutes", stuck=1)
    add_snapshot(conn, "1 minute", stuck=4)
    assert len(_polylines(client.get("/", headers={"HX-Request": "true"}))["stuck_keys"]) == 2


def test_a_snapshot_takes_the_precomputed_counts_instead_of_counting_again(app, conn):
    """At scale the rollup job counts keys by status and window and the inbox volume; the snapshot reuses those."""
    from psycopg.types.json import Jsonb

    from idemdash.queries.overview import InboxVolume, WindowCounts
    from idemdash.queries.rollup_store import encode_rows

    for name, row in (("key_windows", WindowCounts(777, 55, 55, 4242)), ("inbox_volume", InboxVolume(9001, 3))):
        conn.execute(
            "INSERT INTO idemdash.rollup (name, variant, computed_at, duration_ms, payload) "
            "VALUES (%s, '', now(), 900, %s)",
            (name, Jsonb(encode_rows([row]))),
        )
    taken = snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert (taken.failed_retryable_keys, taken.failed_final_keys_24h, taken.inbox_rows_24h) == (777, 55, 9001)
    assert taken.stuck_keys == 0  # stuck and processing stay live
