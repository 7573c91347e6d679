"""/workers and its JSON twin against ground truth: owners with known stuck, in flight, failed and succeeded keys in
and out of the window, the order, the links, idemdash's own holder kept apart, the rollup, a bad window."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup

from idemdash.core import settings
from idemdash.core.triage import REVIEW_HOLDER
from idemdash.jobs.rollups import run_rollups
from idemdash.queries.target import Target
from tests.test_hotspots import Key, _now, insert

M = timedelta(minutes=1)


def seed(conn) -> datetime:
    """Each owner's keys, by what they are now: (status, claimed_at, locked_until, updated_at)."""
    now = _now(conn)
    rows: dict[str, list[tuple[str, datetime, datetime | None, datetime]]] = {
        # 2 stuck (lease passed), 1 in flight, 1 failed_final 10 minutes ago, 1 succeeded 2 hours ago
        "w-stuck-2": [
            ("processing", now - 20 * M, now - 5 * M, now - 20 * M),
            ("processing", now - 30 * M, now - 10 * M, now - 30 * M),
            ("processing", now - 2 * M, now + 5 * M, now - 2 * M),
            ("failed_final", now - 12 * M, None, now - 10 * M),
            ("succeeded", now - 121 * M, None, now - 120 * M),
        ],
        # no lease: stuck once claimed over the default lease (300 s) ago, in flight before
        "w-stuck-1": [("processing", now - 10 * M, None, now - 10 * M), ("processing", now - 1 * M, None, now - 1 * M)],
        # 1 stuck and 2 failed_retryable in the window: after w-stuck-2, before w-stuck-1
        "w-stuck-1-failing": [
            ("processing", now - 40 * M, now - 1 * M, now - 40 * M),
            ("failed_retryable", now - 6 * M, None, now - 5 * M),
            ("failed_retryable", now - 8 * M, None, now - 7 * M),
        ],
        # every key succeeded: a worker that is fine, and one the search must find
        "w-done": [
            ("succeeded", now - 3 * M, None, now - 2 * M),
            ("succeeded", now - 4 * M, None, now - 3 * M),
            ("succeeded", now - 50 * M, None, now - 49 * M),
        ],
        "w-alpha": [("succeeded", now - 9 * M, None, now - 8 * M)],
        "w-beta": [("succeeded", now - 9 * M, None, now - 8 * M)],
        # seen 3 days ago only: in the 7-day window, not in the others
        "w-old": [("failed_final", now - 3 * 1440 * M, None, now - 3 * 1440 * M)],
        # idemdash's own holder: not a worker
        REVIEW_HOLDER: [
            ("processing", now - 60 * M, now + 600 * M, now - 1 * M),
            ("processing", now - 60 * M, now + 600 * M, now - 1 * M),
        ],
    }
    keys = [
        Key("scope-a", f"{owner}-{i}", status, owner, 1, claimed, locked, updated)
        for owner, owned in rows.items()
        for i, (status, claimed, locked, updated) in enumerate(owned)
    ]
    # an unowned key is nobody's
    keys.append(Key("scope-a", "nobody", "succeeded", None, 1, now - M, None, now - M))
    insert(conn, keys)
    return now


COLUMNS = ("stuck", "in_flight", "failed_retryable", "failed_final", "succeeded")
# owner -> (stuck, in flight, failed_retryable, failed_final, succeeded) per window
EXPECTED = {
    "1h": {
        "w-stuck-2": (2, 1, 0, 1, 0),
        "w-stuck-1-failing": (1, 0, 2, 0, 0),
        "w-stuck-1": (1, 1, 0, 0, 0),
        "w-alpha": (0, 0, 0, 0, 1),
        "w-beta": (0, 0, 0, 0, 1),
        "w-done": (0, 0, 0, 0, 3),
    },
    "24h": {
        "w-stuck-2": (2, 1, 0, 1, 1),
        "w-stuck-1-failing": (1, 0, 2, 0, 0),
        "w-stuck-1": (1, 1, 0, 0, 0),
        "w-alpha": (0, 0, 0, 0, 1),
        "w-beta": (0, 0, 0, 0, 1),
        "w-done": (0, 0, 0, 0, 3),
    },
    "7d": {
        "w-stuck-2": (2, 1, 0, 1, 1),
        "w-stuck-1-failing": (1, 0, 2, 0, 0),
        "w-stuck-1": (1, 1, 0, 0, 0),
        "w-old": (0, 0, 0, 1, 0),
        "w-alpha": (0, 0, 0, 0, 1),
        "w-beta": (0, 0, 0, 0, 1),
        "w-done": (0, 0, 0, 0, 3),
    },
}


@pytest.mark.parametrize("window", ["1h", "24h", "7d"])
def test_api_counts_each_worker_worst_first(client, conn, window):
    now = seed(conn)
    body = client.get(f"/api/v1/workers?window={window}").get_json()
    assert body["window"] == window and body["next_cursor"] is None and body["truncated"] is False
    # the order: most stuck, then most failed, then by name; the held-for-review holder is not among them
    assert [w["name"] for w in body["items"]] == list(EXPECTED[window])
    for w in body["items"]:
        assert tuple(w[c] for c in COLUMNS) == EXPECTED[window][w["name"]], w
        assert w["failed"] == w["failed_retryable"] + w["failed_final"]
    assert body["held_for_review"] == {"keys": 2, "holder": REVIEW_HOLDER, "url": "/keys?status=needs_review"}
    by_name = {w["name"]: w for w in body["items"]}
    # the latest claim among its keys: the in-flight one, claimed 2 minutes ago
    assert datetime.fromisoformat(by_name["w-stuck-2"]["last_claim"]) == now - 2 * M
    assert by_name["w-stuck-2"]["links"] == {
        "keys": "/keys?claimed_by=w-stuck-2",
        "stuck": "/keys?status=stuck&claimed_by=w-stuck-2",
        "in_flight": "/keys?status=processing&claimed_by=w-stuck-2",
        "failed_retryable": "/keys?status=failed_retryable&claimed_by=w-stuck-2",
        "failed_final": "/keys?status=failed_final&claimed_by=w-stuck-2",
        "succeeded": "/keys?status=succeeded&claimed_by=w-stuck-2",
    }
    assert (
        datetime.fromisoformat(body["since"])
        == datetime.fromisoformat(body["as_of"])
        - {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}[window]
    )


def test_the_default_window_is_one_hour(client, conn):
    seed(conn)
    body = client.get("/api/v1/workers").get_json()
    assert body["window"] == "1h" and "w-old" not in [w["name"] for w in body["items"]]


@pytest.mark.parametrize("query", ["window=2h", "window=all", "window=1H", "window=%3Cscript%3E"])
def test_a_bad_window_is_a_400_naming_it(client, conn, query):
    seed(conn)
    api = client.get("/api/v1/workers?" + query)
    assert api.status_code == 400 and "window must be one of '1h', '24h' or '7d'" in api.get_json()["error"]
    page = client.get("/workers?" + query)
    assert page.status_code == 400
    soup = BeautifulSoup(page.data, "html.parser")
    assert "window must be one of" in soup.select_one("main").get_text() and soup.select_one("#workers-panel") is None


def test_page_shows_the_numbers_and_each_links_to_its_keys(client, conn):
    seed(conn)
    soup = BeautifulSoup(client.get("/workers").data, "html.parser")
    rows = soup.select("#workers tbody tr")
    assert [tr["data-worker"] for tr in rows] == list(EXPECTED["1h"])
    assert REVIEW_HOLDER not in soup.select_one("#workers").get_text()
    assert "2 keys held for review" in soup.select_one("[data-held]").get_text(" ", strip=True)
    row = soup.select_one('#workers tr[data-worker="w-stuck-2"]')
    assert row.select_one('[data-col="stuck"]').get_text(strip=True) == "2"
    assert row.select_one('[data-col="in_flight"]').get_text(strip=True) == "1"
    assert row.select_one('[data-col="failed"] strong').get_text(strip=True) == "1"
    assert row.select_one('[data-col="last_claim"] time[datetime]') is not None  # the time macro
    # each number is a link to the key list filtered to it, and that list holds exactly those keys
    href = row.select_one('[data-col="stuck"] a')["href"]
    assert parse_qs(urlsplit(href).query) == {"status": ["stuck"], "claimed_by": ["w-stuck-2"]}
    listed = client.get("/api/v1" + href).get_json()["items"]
    assert sorted(k["key"] for k in listed) == ["w-stuck-2-0", "w-stuck-2-1"]
    failing = soup.select_one('#workers tr[data-worker="w-stuck-1-failing"] [data-col="failed"] a')["href"]
    listed = client.get("/api/v1" + failing).get_json()["items"]
    assert sorted(k["key"] for k in listed) == ["w-stuck-1-failing-1", "w-stuck-1-failing-2"]
    assert row.select_one("th a")["href"] == "/keys?claimed_by=w-stuck-2"
    # the nav links the page, with its g-shortcut
    nav = soup.select_one('header nav a[href="/workers"]')
    assert nav is not None and nav["aria-current"] == "page" and nav["data-go"] == "w"


def test_window_tabs_and_the_htmx_fragment(client, conn):
    seed(conn)
    soup = BeautifulSoup(client.get("/workers?window=7d").data, "html.parser")
    tabs = soup.select("#workers-panel nav.tabs a.tab")
    assert [a["data-tab"] for a in tabs] == ["1h", "24h", "7d"]
    assert [a["data-tab"] for a in tabs if a.get("aria-current") == "page"] == ["7d"]
    assert [w["data-worker"] for w in soup.select("#workers tbody tr")] == list(EXPECTED["7d"])
    fragment = client.get("/workers?window=24h", headers={"HX-Request": "true"})
    panel = BeautifulSoup(fragment.data, "html.parser")
    assert panel.select_one("h1") is None  # the panel alone
    refresh = panel.select_one("#workers-panel")
    assert parse_qs(urlsplit(refresh["hx-get"]).query) == {"window": ["24h"]} and "every 30s" in refresh["hx-trigger"]
    assert "Vary" in fragment.headers and "HX-Request" in fragment.headers["Vary"]


def test_no_worker_yet_says_so(client):
    soup = BeautifulSoup(client.get("/workers").data, "html.parser")
    assert "No worker holds a processing key" in soup.select_one("#workers-panel").get_text()
    assert client.get("/api/v1/workers").get_json()["items"] == []


def test_the_rollup_agrees_with_the_live_answer(client, conn, database_url):
    seed(conn)
    live = {w: client.get(f"/api/v1/workers?window={w}").get_json() for w in EXPECTED}
    done = run_rollups(Target.from_settings(settings.load({}, DATABASE_URL=database_url)), force=True)
    assert {f"workers:{w}" for w in EXPECTED} <= set(done)
    # as if computing it had been slow: the page reads it precomputed
    conn.execute("UPDATE idemdash.rollup SET duration_ms = 500 WHERE name = 'workers'")
    for window, want in live.items():
        got = client.get(f"/api/v1/workers?window={window}").get_json()
        assert want["precomputed"] == {} and set(got["precomputed"]) == {"items"}
        assert got["items"] == want["items"] and got["truncated"] == want["truncated"]
    soup = BeautifulSoup(client.get("/workers").data, "html.parser")
    assert soup.select_one("[data-precomputed]") is not None


def test_more_owners_than_the_limit_are_cut_and_said(client, conn, monkeypatch):
    from idemdash.queries import workers

    seed(conn)
    monkeypatch.setattr(workers, "OWNER_LIMIT", 3)
    body = client.get("/api/v1/workers").get_json()
    assert [w["name"] for w in body["items"]] == list(EXPECTED["1h"])[:3] and body["truncated"] is True
    soup = BeautifulSoup(client.get("/workers").data, "html.parser")
    assert "Only the 3 worst workers" in soup.select_one("[data-truncated]").get_text()


def test_a_library_database_that_records_no_owner_says_so_by_its_name(make_app, empty_database_url):
    from tests import library_ddl as ddl
    from tests.test_detect import _create_case

    _create_case(empty_database_url, "public", [ddl.BRANDUR])
    client = make_app(empty_database_url, PROFILE="brandur").test_client()
    api = client.get("/api/v1/workers")
    assert api.status_code == 200 and api.get_json()["items"] == []
    note = "who holds a row is not recorded by Brandur-style idempotency keys for its keys table"
    assert [t["owner"]["note"] for t in api.get_json()["tables"] if t["role"] == "keys"] == [note]
    page = client.get("/workers")
    assert page.status_code == 200 and note[1:] in BeautifulSoup(page.data, "html.parser").get_text()
    nav = BeautifulSoup(client.get("/tables").data, "html.parser").select_one("header nav")
    assert nav.select_one('a[href="/workers"]') is not None


def test_the_hotspots_by_worker_section_links_the_workers_page(client, conn):
    seed(conn)
    section = BeautifulSoup(client.get("/hotspots").data, "html.parser").select_one(
        'section[aria-label="Hotspots by worker"]'
    )
    assert section.select_one('a[href="/workers"]') is not None


def test_a_plain_text_status_column_counts_the_same(make_app, text_status_database_url):
    import psycopg

    with psycopg.connect(text_status_database_url, autocommit=True) as text_conn:
        seed(text_conn)
    client = make_app(text_status_database_url).test_client()
    body = client.get("/api/v1/workers?window=7d").get_json()
    assert {w["name"]: tuple(w[c] for c in COLUMNS) for w in body["items"]} == EXPECTED["7d"]
    assert client.get("/api/v1/search?q=w-done").get_json()["workers"] == ["w-done"]


@pytest.mark.system
def test_each_database_of_a_config_has_its_workers_and_links_stay_in_it(
    make_app, conn, database_url, tmp_path, monkeypatch
):
    from tests.test_databases import write_config

    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)
    seed(conn)
    path = write_config(tmp_path / "idemdash.toml", {"orders": {"url": database_url}})
    client = make_app(None, CONFIG=path, DATABASE_URL="").test_client()
    body = client.get("/api/v1/db/orders/workers").get_json()
    assert [w["name"] for w in body["items"]] == list(EXPECTED["1h"])
    assert body["items"][0]["links"]["stuck"] == "/db/orders/keys?status=stuck&claimed_by=w-stuck-2"
    soup = BeautifulSoup(client.get("/db/orders/workers").data, "html.parser")
    href = soup.select_one('#workers tr[data-worker="w-stuck-2"] [data-col="stuck"] a')["href"]
    assert href == "/db/orders/keys?status=stuck&claimed_by=w-stuck-2"
