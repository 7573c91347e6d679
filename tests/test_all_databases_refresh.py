"""The all-databases overview never waits for the fleet: a background refresh per app (a bounded pool of threads,
each database asked on a short-lived connection with a connect deadline, failed hosts backed off) keeps every
row, and a request shows what is there with how old it is.

Real databases on the session's server, a refusing host (a closed port) and a hung host (a socket that accepts and
never answers, so only the connect deadline ends the wait)."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard.all_databases import APPLICATION_NAME, THREAD_PREFIX
from tests.fleet import LIVE, HungHost, make_fleet
from tests.test_databases import answered, row_of, write_config
from tests.waiting import wait_until

# an upper bound, not a benchmark: half the hung host's 2 s connect deadline, with room for a busy machine (a request
# takes milliseconds here)
SOON = 1.0


@pytest.fixture
def hung_host():
    host = HungHost()
    yield host
    host.close()


@pytest.fixture
def fleet(pg_templates, clone_of, tmp_path, hung_host):
    return make_fleet(pg_templates["enum"], clone_of, tmp_path, hung_host)


def refresh_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def refresh_sessions(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (APPLICATION_NAME,)
        ).fetchone()[0]


def timed_get(client, path: str):
    started = time.perf_counter()
    response = client.get(path)
    return response, time.perf_counter() - started


def test_no_thread_starts_before_the_first_request(database_url, make_app, tmp_path):
    config = write_config(tmp_path / "two.toml", {name: {"url": database_url} for name in ("alpha", "beta", "gamma")})
    before = len(refresh_threads())
    app = make_app(CONFIG=config, FLEET_REFRESH_THREADS=2)
    assert len(refresh_threads()) == before  # building the app (or importing it) starts nothing
    app.test_client().get("/healthz")  # with several databases the first request of any kind starts the refresh
    assert len(refresh_threads()) == before + 2


@pytest.mark.system
def test_the_page_answers_at_once_and_fills_in_as_the_databases_answer(fleet, make_app, pg_server_dsn):
    threads = 3
    client = make_app(CONFIG=fleet["config"], FLEET_REFRESH_THREADS=threads, FLEET_REFRESH_SECONDS=60).test_client()
    first, took = timed_get(client, "/databases")
    # the hung host's connect deadline is 2 s: a page that waited for it could not answer this soon
    assert first.status_code == 200 and took < SOON, took
    page = BeautifulSoup(first.data, "html.parser")
    hung = page.select_one('tr[data-database="hung"]')
    status = hung.select_one('[role="status"]').get_text()
    assert hung.has_attr("data-pending") and status in ("asking…", "not asked yet"), status
    assert page.select_one("#databases-panel")["hx-trigger"] == "every 1s, refresh"  # polls while a row is pending

    slowest = 0.0

    def all_answered():
        nonlocal slowest
        response, took = timed_get(client, "/api/v1/databases")
        slowest = max(slowest, took)
        items = response.get_json()["items"]
        assert len(refresh_threads()) <= threads  # never more threads than the setting, whatever the fleet
        return None if any(item["pending"] for item in items) else items

    rows = {row["name"]: row for row in wait_until(all_answered, timeout=20, what="every row's first answer")}
    assert slowest < SOON, slowest  # no request waited while the hung host was being asked
    for i in range(LIVE):
        row = rows[f"live{i}"]
        assert (row["reachable"], row["stuck"], row["failures"], row["pending"]) == (True, i + 1, 0, False)
        assert row["age_seconds"] is not None and row["age_seconds"] < 20
    hung, refusing = rows["hung"], rows["refusing"]
    assert not hung["reachable"] and "stuck" not in hung
    assert f"no answer from 127.0.0.1 port {fleet['hung'].port} within the connect timeout" in hung["problem"], hung
    assert not refusing["reachable"] and "connection refused" in refusing["problem"], refusing
    for row in (hung, refusing):  # backed off: asked again after twice the interval
        assert row["failures"] == 1 and row["next_ask_at"] is not None
        wait = datetime.fromisoformat(row["next_ask_at"]) - datetime.fromisoformat(row["as_of"])
        assert 100 < wait.total_seconds() <= 121, wait

    page = BeautifulSoup(client.get("/databases").data, "html.parser")
    assert page.select_one("#databases-panel")["hx-trigger"] == "every 15s, refresh"  # nothing pending: slow again
    assert page.select_one('tr[data-database="live2"] [data-metric="stuck"]').get_text() == "3"
    assert "ago" in page.select_one('tr[data-database="live2"] [data-age]').get_text()
    hung_row = page.select_one('tr[data-database="hung"]')
    assert "unreachable" in hung_row["class"] and "within the connect timeout" in hung_row.get_text()
    assert "asked again in" in hung_row.select_one("[data-age]").get_text()
    # at rest (every row answered, the next asks a minute away) the refresh holds no connection, and no page of a
    # database was asked for, so no web pool is open either (dashboard/targets.py: pools open when used)
    assert wait_until(lambda: refresh_sessions(pg_server_dsn) == 0, timeout=5, what="the refresh's sessions to end")
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        held = dict(
            conn.execute(
                "SELECT datname, count(*) FROM pg_stat_activity WHERE datname = ANY(%s) GROUP BY 1",
                ([psycopg.conninfo.conninfo_to_dict(fleet["urls"][f"live{i}"])["dbname"] for i in range(LIVE)],),
            ).fetchall()
        )
    assert held == {}, held


@pytest.mark.system
def test_hung_and_refusing_hosts_are_backed_off_and_leave_the_threads_to_the_others(fleet, make_app):
    app = make_app(CONFIG=fleet["config"], FLEET_REFRESH_THREADS=2, FLEET_REFRESH_SECONDS=1)
    app.extensions["idemdash_overview"].backoff_max = 4  # BACKOFF_MAX_SECONDS, made short
    client = app.test_client()
    first = {row["name"]: row for row in answered(client, timeout=20)}
    started = time.monotonic()
    time.sleep(7)
    # the live databases were asked again and again (every second), the hung one held one thread 2 s at a time
    for i in range(LIVE):
        row = row_of(client, f"live{i}")
        assert row["reachable"] and row["as_of"] > first[f"live{i}"]["as_of"] and row["age_seconds"] < 3.5, row
    # without the back-off the refusing host would have failed about 8 times by now (at 1 s, 2 s, then 4 s apart)
    refusing = row_of(client, "refusing")
    assert 2 <= refusing["failures"] <= 5, refusing
    if not refusing["asking"]:
        wait = datetime.fromisoformat(refusing["next_ask_at"]) - datetime.fromisoformat(refusing["as_of"])
        assert abs(wait.total_seconds() - min(2 ** refusing["failures"], 4)) < 0.5, (wait, refusing)
    # the refresh connected to the hung host once every 2 s + its back-off, not once a second per thread
    asked = fleet["hung"].asked_by(APPLICATION_NAME)
    assert 1 <= asked <= 3, (asked, time.monotonic() - started)
