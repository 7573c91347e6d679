"""/hotspots over a window (1h, 24h, 7d, all): keys seeded at known ages of updated_at, the API, the page, the
rollups per window agreeing with the live answer, a bad window."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup

from idemdash.core import settings
from idemdash.dashboard.openapi import build
from idemdash.jobs.rollups import run_rollups
from idemdash.queries.target import Target
from tests.test_hotspots import BUCKETS, Key, _now, insert

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
# scope -> (age of updated_at, attempts of its hotspot key); each scope also holds one key attempted once
AGES = {
    "fresh": (timedelta(minutes=10), 7),
    "two-hours": (timedelta(hours=2), 8),
    "three-days": (timedelta(days=3), 9),
    "last-month": (timedelta(days=20), 12),
}
IN_WINDOW = {
    "1h": {"fresh"},
    "24h": {"fresh", "two-hours"},
    "7d": {"fresh", "two-hours", "three-days"},
    "all": set(AGES),
}
SPANS = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "all": None}


def seed(conn) -> datetime:
    now = _now(conn)
    keys = []
    for scope, (age, attempts) in AGES.items():
        updated = now - age
        # the hot key failed retryably; its claim began a minute before its last change
        keys.append(
            Key(
                scope,
                f"{scope}-hot",
                "failed_retryable",
                f"worker-{scope}",
                attempts,
                updated - timedelta(minutes=1),
                None,
                updated,
            )
        )
        keys.append(Key(scope, f"{scope}-once", "succeeded", "api-1", 1, updated - timedelta(minutes=1), None, updated))
    insert(conn, keys)
    return now


def histogram_for(window: str) -> dict[str, int]:
    counts = {label: 0 for label, _, _ in BUCKETS}
    for scope in IN_WINDOW[window]:
        attempts = AGES[scope][1]
        counts["1"] += 1
        counts[next(label for label, lo, hi in BUCKETS if lo <= attempts and (hi is None or attempts <= hi))] += 1
    return counts


@pytest.mark.parametrize("window", ["1h", "24h", "7d", "all"])
def test_api_counts_only_the_keys_changed_in_the_window(client, conn, window):
    seed(conn)
    body = client.get(f"/api/v1/hotspots?window={window}").get_json()
    assert body["window"] == window
    assert {r["scope"] for r in body["by_scope"]} == IN_WINDOW[window]
    assert all(r["hotspot_keys"] == 1 and r["failed_retryable"] == 1 for r in body["by_scope"])
    assert {r["claimed_by"] for r in body["by_worker"]} == {f"worker-{s}" for s in IN_WINDOW[window]}
    # most attempts first: the older keys here have more
    assert [k["key"] for k in body["top_keys"]] == [
        f"{s}-hot" for s in sorted(IN_WINDOW[window], key=lambda s: -AGES[s][1])
    ]
    assert {b["bucket"]: b["keys"] for b in body["histogram"]} == histogram_for(window)
    as_of = datetime.fromisoformat(body["as_of"])
    if SPANS[window] is None:
        assert body["since"] is None and "every key in the table" in body["definitions"]["histogram"]
    else:
        assert datetime.fromisoformat(body["since"]) == as_of - SPANS[window]
        assert "updated_at >= since" in body["definitions"]["hotspot"]
    assert "updated_at" in body["definitions"]["window"] or window == "all"


def test_the_default_window_is_24_hours(client, conn):
    seed(conn)
    body = client.get("/api/v1/hotspots").get_json()
    assert body["window"] == "24h" and {r["scope"] for r in body["by_scope"]} == {"fresh", "two-hours"}
    assert "claim function sets updated_at" in body["definitions"]["window"]


@pytest.mark.parametrize("query", ["window=2h", "window=ALL", "window=24", "window=%3Cscript%3E"])
def test_a_bad_window_is_a_400_naming_it(client, conn, query):
    seed(conn)
    api = client.get("/api/v1/hotspots?" + query)
    assert api.status_code == 400
    assert "window must be one of '1h', '24h', '7d' or 'all'" in api.get_json()["error"]
    page = client.get("/hotspots?" + query)
    assert page.status_code == 400
    soup = BeautifulSoup(page.data, "html.parser")
    assert "window must be one of" in soup.select_one("main").get_text()
    assert soup.select_one("#hotspots-panel") is None and not soup.find("script", string=True)


@pytest.mark.parametrize(
    ("window", "headline"),
    [
        ("1h", "Retry hotspots in the last hour"),
        ("24h", "Retry hotspots in the last 24 hours"),
        ("7d", "Retry hotspots in the last 7 days"),
        ("all", "Retry hotspots of all time"),
    ],
)
def test_page_per_window_says_it_and_its_links_keep_the_threshold(client, conn, window, headline):
    seed(conn)
    soup = BeautifulSoup(client.get(f"/hotspots?window={window}&min_attempts=6").data, "html.parser")
    assert soup.select_one("h1").get_text(strip=True) == headline
    tabs = soup.select("nav.tabs a.tab")
    assert [a["data-tab"] for a in tabs] == ["1h", "24h", "7d", "all"]
    assert [a["data-tab"] for a in tabs if a.get("aria-current") == "page"] == [window]
    for a in tabs:
        assert parse_qs(urlsplit(a["href"]).query) == {"window": [a["data-tab"]], "min_attempts": ["6"]}
        assert a["hx-get"] == a["href"]
    assert {tr["data-scope"] for tr in soup.select("#by-scope tbody tr")} == IN_WINDOW[window]
    shown = {
        tr["data-bucket"]: int(tr.select_one('[data-col="keys"]').get_text().replace(",", ""))
        for tr in soup.select("#histogram tbody tr")
    }
    assert shown == histogram_for(window)
    assert soup.select_one("input[name=window]")["value"] == window  # the threshold form keeps the window
    json_link = parse_qs(urlsplit(soup.select_one("#json-link")["href"]).query)
    assert json_link == {"window": [window], "min_attempts": ["6"]}
    since = soup.select_one("#window-since")
    assert (since is None) == (window == "all")
    # a count links to the key list with the threshold
    href = soup.select_one('#by-scope [data-col="failed_retryable"] a')["href"]
    assert parse_qs(urlsplit(href).query)["min_attempts"] == ["6"]


def test_htmx_refresh_keeps_the_window_and_updates_the_headline(client, conn):
    seed(conn)
    response = client.get("/hotspots?window=7d", headers={"HX-Request": "true"})
    soup = BeautifulSoup(response.data, "html.parser")
    panel = soup.select_one("#hotspots-panel")
    assert parse_qs(urlsplit(panel["hx-get"]).query) == {"window": ["7d"]} and "every 30s" in panel["hx-trigger"]
    headline = soup.select_one("h1#hotspots-headline")
    assert headline["hx-swap-oob"] == "true" and headline.get_text() == "Retry hotspots in the last 7 days"
    hidden = soup.select_one("input#filter-window")
    assert hidden["hx-swap-oob"] == "true" and hidden["value"] == "7d"
    assert {tr["data-scope"] for tr in soup.select("#by-scope tbody tr")} == IN_WINDOW["7d"]
    # a whole page has no out-of-band pieces
    full = BeautifulSoup(client.get("/hotspots?window=7d").data, "html.parser")
    assert not full.select("[hx-swap-oob]")


def test_each_window_has_its_rollup_and_it_agrees_with_the_live_answer(client, conn, database_url):
    seed(conn)
    live = {w: client.get(f"/api/v1/hotspots?window={w}").get_json() for w in SPANS}
    done = run_rollups(Target.from_settings(settings.load({}, DATABASE_URL=database_url)), force=True)
    assert {f"hotspot_groups:{w}:5" for w in SPANS} | {f"attempt_histogram:{w}" for w in SPANS} <= set(done)
    # as if computing them had been slow: the pages read them precomputed
    conn.execute("UPDATE idemdash.rollup SET duration_ms = 500 WHERE name IN ('hotspot_groups', 'attempt_histogram')")
    for window, want in live.items():
        got = client.get(f"/api/v1/hotspots?window={window}").get_json()
        assert want["precomputed"] == {} and set(got["precomputed"]) == {"by_scope", "by_worker", "histogram"}
        for section in ("by_scope", "by_worker", "histogram", "truncated"):
            assert got[section] == want[section], (window, section)
        assert {r["scope"] for r in got["by_scope"]} == IN_WINDOW[window]


def test_docs_and_openapi_list_the_window(client):
    spec = build(client.application)
    [param] = [p for p in spec["paths"]["/api/v1/hotspots"]["get"]["parameters"] if p["name"] == "window"]
    assert param["schema"]["enum"] == list(SPANS)
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert "GET /api/v1/hotspots?window=1h|24h|7d|all&min_attempts=5" in api
    concepts = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    assert "sets `updated_at` (and\n`claimed_at`) to the claim's time on every attempt" in concepts
