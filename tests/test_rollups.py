"""Rollups: the scheduler precomputes what a page cannot count live at scale; pages use a stored value only when
it is fresh and was slow to compute, and say when it was computed."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup
from psycopg.types.json import Jsonb

from benchmarks.datagen import SIZES, generate
from idemdash.core import settings
from idemdash.jobs.rollups import run_rollups
from idemdash.queries import rollup_store, rollups
from idemdash.queries.hotspots import AttemptBucket, HotspotGroupRow
from idemdash.queries.inbox import CONSUMERS_SHOWN, ConsumerVolume
from idemdash.queries.overview import OutboxBacklog, ProcessingCounts, WindowCounts
from idemdash.queries.profile_states import MeasuredState
from idemdash.queries.rollups import FRESH_FACTOR, LIVE_BUDGET_MS, ROLLUPS
from idemdash.queries.suppression import WINDOWS, ScopeSuppression
from idemdash.queries.target import Target
from idemdash.queries.workers import Owner

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)


def _config(url: str) -> dict:
    return settings.load({}, DATABASE_URL=url)


def _store(
    conn: psycopg.Connection,
    name: str,
    variant: str,
    rows,
    *,
    duration_ms: float = 500.0,
    age: timedelta = timedelta(seconds=5),
) -> None:
    conn.execute(
        "INSERT INTO idemdash.rollup (name, variant, computed_at, duration_ms, payload) "
        "VALUES (%s, %s, now() - %s, %s, %s) ON CONFLICT (name, variant) DO UPDATE "
        "SET computed_at = EXCLUDED.computed_at, duration_ms = EXCLUDED.duration_ms, "
        "payload = EXCLUDED.payload",
        (name, variant, age, duration_ms, Jsonb(rows)),
    )


def _rows(*rows) -> list[dict]:
    return rollup_store.encode_rows(rows)


def _suppression(scope: str, keys: int) -> list[dict]:
    row = ScopeSuppression(False, scope, 1, keys, keys - 1, 1, 100.0 / keys, keys + 1, 1, 2, keys, 0, 0, 0, NOW)
    return _rows(row, replace(row, is_total=True, scope=None))


def _volume(name: str) -> ConsumerVolume:
    return ConsumerVolume(name, 1, 2, 3, NOW, 60.0, False, NOW, 1.0)


def test_rows_round_trip_through_json_as_their_row_type():
    cases = {
        "suppression": [ScopeSuppression(False, "x/y", 1, 7, 6, 1, 14.2, 8, 1, 2, 7, 0, 0, 0, NOW)],
        "hotspot_groups": [HotspotGroupRow(True, "s", None, 3, 1, 1, 1, 0, 1, 9)],
        "attempt_histogram": [AttemptBucket("1", 1, 1, 10), AttemptBucket("20+", 20, None, 1)],
        "inbox_consumers": [_volume("billing"), ConsumerVolume("idle", 0, 0, 0, None, None, False, None, None)],
        "key_windows": [WindowCounts(1, 2, 2, 3)],
        "key_processing": [ProcessingCounts(4, 9, 1, NOW), ProcessingCounts(0, 0, 0, None)],
        "outbox_backlog": [OutboxBacklog(3, NOW, 61.5, 1, NOW, 3600.0), OutboxBacklog(0, None, None, 0, None, None)],
        "library_states": [MeasuredState("outbox", "done", 12, 3.5), MeasuredState("archive", "purgeable", None, 0.1)],
        "workers": [Owner("worker-7", NOW, 1, 2, 3, 4, 5), Owner("<b>w</b>", None, 0, 0, 0, 0, 1)],
    }
    for name, rows in cases.items():
        assert rollups.decode_rows(ROLLUPS[name], rollup_store.encode_rows(rows)) == rows
    assert set(cases) | {"inbox_volume", "inbox_totals", "outbox_event_types"} == set(ROLLUPS)


@pytest.mark.parametrize(
    "payload",
    [
        {"failed_retryable": 1},  # not a list of rows
        [{"failed_retryable": 1, "failed_final_24h": 2}],  # a field missing
        [{"failed_retryable": 1, "failed_final_24h": 2, "succeeded_24h": 3, "x": 4}],  # a field it does not have
        [{"__class__": "subprocess:Popen", "args": ["true"]}],  # an old tagged value: data, not code
    ],
)
def test_rows_that_do_not_fit_their_type_are_refused(payload):
    with pytest.raises(rollups.RollupDecodeError, match="key_windows"):
        rollups.decode_rows(ROLLUPS["key_windows"], payload)


def test_a_stored_rollup_that_does_not_decode_is_logged_and_read_live(client, conn, caplog):
    _store(conn, "key_windows", "", [{"failed_retryable": 777}])
    body = client.get("/api/v1/overview").get_json()
    assert body["keys"]["failed_retryable"] == 0 and body["precomputed"] == {}
    assert "rollup 'key_windows': a stored row has ['failed_retryable']" in caplog.text
    assert "computing it live" in caplog.text


@pytest.mark.system
def test_job_stores_every_rollup_and_skips_fresh_ones(database_url, conn):
    generate(database_url, SIZES["S"])
    config = _config(database_url)
    done = run_rollups(Target.from_settings(config))
    expected = {f"{r.name}:{v}" for r in ROLLUPS.values() if rollups.applies(r, config) for v in r.variants(config)}
    assert set(done) == expected
    assert "suppression:7d" in done and "hotspot_groups:5" not in done
    assert {f"hotspot_groups:{w}:5" for w in ("1h", "24h", "7d", "all")} <= set(done)
    assert {f"attempt_histogram:{w}" for w in ("1h", "24h", "7d", "all")} <= set(done)
    stored = {
        (r.name, r.variant): r for r in rollup_store.list_rollups(conn, [tuple(k.split(":", 1)) for k in expected])
    }
    [windows] = rollups.decode_rows(ROLLUPS["key_windows"], stored[("key_windows", "")].payload)
    assert windows == WindowCounts(200, windows.failed_final, windows.failed_final_24h, windows.succeeded_24h)
    assert all(r.duration_ms > 0 and r.age_seconds < 60 for r in stored.values())

    assert run_rollups(Target.from_settings(config)) == {}  # all fresh: nothing to do
    assert set(run_rollups(Target.from_settings(config), force=True)) == expected


def test_one_writer_at_a_time(database_url):
    config = _config(database_url)
    with psycopg.connect(database_url, autocommit=True) as other:
        assert rollup_store.try_rollup_lock(other)
        assert run_rollups(Target.from_settings(config), force=True) == {}
        rollup_store.release_rollup_lock(other)
    assert run_rollups(Target.from_settings(config), force=True)


def test_page_shows_a_fresh_slow_rollup_and_says_so(client, conn):
    _store(conn, "suppression", "24h", _suppression("precomputed-scope", 7))
    page = BeautifulSoup(client.get("/suppression?window=24h").data, "html.parser")
    assert "precomputed-scope" in page.get_text()
    note = page.select_one("[data-precomputed]")
    assert note is not None and "precomputed by the scheduler" in note.get_text()
    assert "500 ms" in note.get_text()
    body = client.get("/api/v1/suppression?window=24h").get_json()
    assert [s["scope"] for s in body["scopes"]] == ["precomputed-scope"]
    assert body["precomputed"]["scopes"]["computed_ms"] == 500.0
    # another window has no rollup: computed live, and the answer says nothing is precomputed
    live = client.get("/api/v1/suppression?window=1h").get_json()
    assert live["scopes"] == [] and live["precomputed"] == {}


@pytest.mark.parametrize(
    ("duration_ms", "age"),
    [
        (LIVE_BUDGET_MS / 2, timedelta(seconds=5)),  # cheap to compute: read live
        (500.0, timedelta(seconds=FRESH_FACTOR * ROLLUPS["suppression"].every_seconds + 60)),  # stale: read live
    ],
)
def test_cheap_or_stale_rollups_are_not_shown(client, conn, duration_ms, age):
    _store(conn, "suppression", "24h", _suppression("precomputed-scope", 7), duration_ms=duration_ms, age=age)
    body = client.get("/api/v1/suppression?window=24h").get_json()
    assert body["scopes"] == [] and body["precomputed"] == {}
    page = BeautifulSoup(client.get("/suppression?window=24h").data, "html.parser")
    assert page.select_one("[data-precomputed]") is None


def test_overview_counts_stuck_live_when_only_the_counts_by_window_are_precomputed(client, conn):
    _store(conn, "key_windows", "", _rows(WindowCounts(777, 55, 55, 4242)))
    conn.execute("""INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        claimed_by, claimed_at, locked_until, created_at, updated_at, expires_at)
                    VALUES ('s', 'stuck-now', 'h', 'processing', 'api-1', now() - interval '1 hour',
                            now() - interval '50 minutes', now() - interval '1 hour', now() - interval '1 hour',
                            now() + interval '1 day')""")
    body = client.get("/api/v1/overview").get_json()
    assert body["keys"]["stuck"] == 1 and body["keys"]["processing"] == 1
    assert (body["keys"]["failed_retryable"], body["keys"]["failed_final_24h"], body["keys"]["succeeded_24h"]) == (
        777,
        55,
        4242,
    )
    assert set(body["precomputed"]) == {"keys"}
    page = BeautifulSoup(client.get("/").data, "html.parser")
    assert page.select_one('[data-metric="failed_retryable"]').get_text() == "777"
    assert page.select_one('[data-metric="stuck"]').get_text() == "1"
    assert "Key counts" in page.select_one("[data-precomputed]").get_text()


def test_hotspot_threshold_or_window_other_than_the_precomputed_one_is_live(client, conn):
    _store(
        conn, "hotspot_groups", "24h:5", _rows(HotspotGroupRow(True, "precomputed-scope", None, 3, 0, 0, 0, 0, 3, 9))
    )
    assert [s["scope"] for s in client.get("/api/v1/hotspots").get_json()["by_scope"]] == ["precomputed-scope"]
    assert client.get("/api/v1/hotspots?min_attempts=6").get_json()["by_scope"] == []
    # a window's rollup serves only that window
    assert client.get("/api/v1/hotspots?window=7d").get_json()["by_scope"] == []
    _store(conn, "hotspot_groups", "7d:5", _rows(HotspotGroupRow(True, "seven-days", None, 4, 0, 0, 0, 0, 4, 9)))
    body = client.get("/api/v1/hotspots?window=7d").get_json()
    assert [s["scope"] for s in body["by_scope"]] == ["seven-days"] and set(body["precomputed"]) == {
        "by_scope",
        "by_worker",
    }
    assert [s["scope"] for s in client.get("/api/v1/hotspots?window=24h").get_json()["by_scope"]] == [
        "precomputed-scope"
    ]


def test_suppression_windows_are_all_precomputed():
    assert ROLLUPS["suppression"].variants({}) == list(WINDOWS)


def test_inbox_consumer_filter_reads_the_precomputed_list(client, conn):
    _store(conn, "inbox_consumers", "", _rows(_volume("billing.eu"), _volume("shipping")))
    body = client.get("/api/v1/inbox?consumer=BILL").get_json()
    assert [c["consumer_name"] for c in body["consumers"]] == ["billing.eu"]
    assert "consumers" in body["precomputed"]
    # a truncated precomputed list may lack the consumer asked for: read live instead
    _store(conn, "inbox_consumers", "", _rows(*(_volume(f"shipping-{i}") for i in range(CONSUMERS_SHOWN + 1))))
    assert client.get("/api/v1/inbox?consumer=bill").get_json()["consumers"] == []


def test_metrics_read_precomputed_counts_and_live_stuck(client, conn):
    _store(conn, "key_windows", "", _rows(WindowCounts(777, 55, 55, 4242)))
    text = client.get("/metrics").get_data(as_text=True)
    assert 'idemdash_failed_retryable_keys{database="default"} 777.0' in text
    assert 'idemdash_failed_final_keys_24h{database="default"} 55.0' in text
    assert 'idemdash_stuck_keys_total{database="default"} 0.0' in text


def test_a_rollup_panel_that_times_out_live_asks_about_the_scheduler(make_app, database_url):
    import threading

    client = make_app(STATEMENT_TIMEOUT_MS=300).test_client()
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        with psycopg.connect(database_url) as other:
            other.execute("LOCK TABLE app.idempotency_request IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(5)
        page = BeautifulSoup(client.get("/suppression?window=7d").data, "html.parser")
    finally:
        release.set()
        holder.join(10)
    problem = page.select_one(".panel-problem.timeout").get_text(" ", strip=True)
    assert "is `idemdash scheduler` running?" in problem
    assert problem.index("idemdash scheduler") < problem.index("This index would make it fast")
    assert "CREATE INDEX CONCURRENTLY" in problem


def test_a_costly_rollup_is_recomputed_less_often_and_shown_as_long(database_url, client, conn):
    # 40 s to compute (the all-time hotspot groups at 100M keys): recomputed every COST_FACTOR x 40 s, not every
    # 120 s, and shown while within FRESH_FACTOR of that interval, where a cheap one would already be read live
    interval = rollups.interval_seconds(ROLLUPS["suppression"], 40_000.0)
    assert interval == rollups.COST_FACTOR * 40 > ROLLUPS["suppression"].every_seconds
    config = _config(database_url)
    run_rollups(Target.from_settings(config), force=True)
    _store(
        conn,
        "suppression",
        "24h",
        _suppression("costly-scope", 7),
        duration_ms=40_000.0,
        age=timedelta(seconds=interval - 60),
    )
    assert "suppression:24h" not in run_rollups(Target.from_settings(config), force=False)
    age = timedelta(seconds=FRESH_FACTOR * ROLLUPS["suppression"].every_seconds + 60)  # stale for a cheap one
    _store(conn, "suppression", "24h", _suppression("costly-scope", 7), duration_ms=40_000.0, age=age)
    assert [s["scope"] for s in client.get("/api/v1/suppression?window=24h").get_json()["scopes"]] == ["costly-scope"]
    assert "suppression:24h" in run_rollups(Target.from_settings(config), force=False)  # but due again


def test_the_job_recomputes_the_most_overdue_first(database_url, conn):
    config = _config(database_url)
    run_rollups(Target.from_settings(config), force=True)
    conn.execute("DELETE FROM idemdash.rollup WHERE name = 'hotspot_groups' AND variant = '1h:5'")  # never computed
    conn.execute(
        "UPDATE idemdash.rollup SET computed_at = now() - interval '65 seconds', duration_ms = 1 "
        "WHERE name = 'key_windows'"
    )  # 1.08 x its 60 s
    conn.execute(
        "UPDATE idemdash.rollup SET computed_at = now() - interval '200 seconds', duration_ms = 1 "
        "WHERE name = 'suppression' AND variant = '24h'"
    )  # 1.67 x its 120 s
    done = run_rollups(Target.from_settings(config))
    assert list(done) == ["hotspot_groups:1h:5", "suppression:24h", "key_windows:"]


@pytest.mark.system  # sleeps 2.5 s
def test_a_cheap_rollup_due_again_during_a_long_one_is_recomputed_in_the_same_round(database_url, conn, monkeypatch):
    # at 100M keys a round that meets the costly rollups lasts minutes: the 60 s ones must not wait for the next
    config = _config(database_url)
    run_rollups(Target.from_settings(config), force=True)
    slow = ROLLUPS["suppression"]

    def fetch_slowly(c, tables, s, v):
        time.sleep(2.5)  # what a costly rollup takes at size, on data set S
        return slow.fetch(c, tables, s, v)

    monkeypatch.setitem(ROLLUPS, "suppression", replace(slow, fetch=fetch_slowly))
    conn.execute(
        "UPDATE idemdash.rollup SET computed_at = now() - interval '200 seconds', duration_ms = 1 "
        "WHERE name = 'suppression' AND variant = '24h'"
    )  # due now
    conn.execute(
        "UPDATE idemdash.rollup SET computed_at = now() - interval '54 seconds', duration_ms = 1 "
        "WHERE name = 'key_windows'"
    )  # due in a second
    done = run_rollups(Target.from_settings(config))
    assert list(done) == ["suppression:24h", "key_windows:"]
    [windows] = rollup_store.list_rollups(conn, [("key_windows", "")])
    assert windows.age_seconds < 5


def test_the_job_computes_without_parallel_workers_so_pages_keep_a_core(database_url, conn):
    """A background count over 100M keys with parallel workers takes every core of a small server from the pages
    and the application: the job's transactions run serially, and the setting ends with them."""
    from dataclasses import dataclass

    from idemdash.jobs.rollups import _compute_and_store
    from idemdash.queries import Tables

    @dataclass(frozen=True)
    class Setting:
        value: str

    seen = []

    def fetch(c, tables, s, v):
        seen.append(c.execute("SHOW max_parallel_workers_per_gather").fetchone()[0])
        return [Setting(seen[-1])]

    probe = rollups.Rollup("parallel_probe", Setting, fetch, lambda rows: rows, lambda s: [""], None, 60)
    config = settings.load(DATABASE_URL=database_url)
    with psycopg.connect(database_url, autocommit=True) as job:
        default = job.execute("SHOW max_parallel_workers_per_gather").fetchone()[0]
        _compute_and_store(job, Tables(), config, probe, "")
        assert seen == ["0"]
        assert job.execute("SHOW max_parallel_workers_per_gather").fetchone()[0] == default  # transaction-local
    assert default != "0"
