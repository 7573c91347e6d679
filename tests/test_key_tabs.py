"""The key list's state tabs (counts exact up to a cap, then the snapshot's number or "10,000+"), its sortable
column, and going back a page as well as forward."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard import key_tabs
from tests.test_keys import insert_key


def _tabs(client, url="/keys"):
    soup = BeautifulSoup(client.get(url).data, "html.parser")
    return {
        a["data-tab"]: (a.select_one(".tab-count").get_text(strip=True) if a.select_one(".tab-count") else None)
        for a in soup.select("nav.tabs a")
    }, soup


def test_each_tab_counts_its_state(client, conn):
    for i in range(3):
        insert_key(conn, "s", f"stuck-{i}")  # lease ran out
    insert_key(conn, "s", "no-lease-old", locked_until=None, claimed_ago=timedelta(hours=1))  # stuck too
    insert_key(conn, "s", "live", locked_until=timedelta(minutes=5))
    insert_key(conn, "s", "held", claimed_by="idemdash:needs_review", locked_until=timedelta(hours=5))
    for i in range(2):
        insert_key(conn, "s", f"retry-{i}", status="failed_retryable", locked_until=None)
    insert_key(conn, "s", "final", status="failed_final", locked_until=None)
    for i in range(4):
        insert_key(conn, "s", f"ok-{i}", status="succeeded", locked_until=None)
    counts, soup = _tabs(client, "/keys?status=failed_final&scope=s")
    assert counts == {
        "stuck": "4",
        "needs_review": "1",
        "processing": "6",
        "succeeded": "4",
        "failed_retryable": "2",
        "failed_final": "1",
    }
    current = soup.select_one('nav.tabs a[aria-current="page"]')
    assert current["data-tab"] == "failed_final"
    # a tab keeps the filters, starts at the first page in the default order
    assert current["href"] == "/keys?status=failed_final&scope=s"
    assert soup.select_one('nav.tabs a[data-tab="stuck"]')["href"] == "/keys?status=stuck&scope=s"
    assert "ignore the filters" in soup.select_one(".tab-note").get_text()
    # the state travels with the filter form; a tab switched in place replaces it out of band
    assert soup.select_one("#filters input[type=hidden][name=status]")["value"] == "failed_final"
    fragment = BeautifulSoup(client.get("/keys?status=succeeded", headers={"HX-Request": "true"}).data, "html.parser")
    oob = fragment.select_one("input#filter-status")
    assert (oob["value"], oob["hx-swap-oob"]) == ("succeeded", "true")

    api = client.get("/api/v1/keys?status=stuck").get_json()
    assert api["counts"]["processing"] == {"count": 6, "more": False, "snapshot": None, "snapshot_at": None}
    assert api["count_cap"] == key_tabs.COUNT_CAP


def test_past_the_cap_a_tab_shows_the_snapshot_or_a_plus(client, conn, monkeypatch):
    monkeypatch.setattr(key_tabs, "COUNT_CAP", 3)
    for i in range(5):
        insert_key(conn, "s", f"stuck-{i}")
        insert_key(conn, "s", f"ok-{i}", status="succeeded", locked_until=None)
    counts, soup = _tabs(client)
    assert counts["stuck"] == "3+" and counts["succeeded"] == "3+" and counts["needs_review"] == "0"
    assert "More than 3" in soup.select_one('[data-count="stuck"]')["title"]

    # the snapshot job counted every stuck key a minute ago: its number stands in, with its age
    conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h)
                    VALUES (now() - interval '1 minute', 5, 5, 0, 0, 0, NULL, 0)""")
    counts, soup = _tabs(client)
    assert counts["stuck"] == "≈5" and counts["processing"] == "≈5"
    assert counts["succeeded"] == "3+"  # the snapshot does not record it
    assert "snapshot job's count, taken 1 min" in soup.select_one('[data-count="stuck"]')["title"]
    api = client.get("/api/v1/keys").get_json()["counts"]
    assert api["stuck"]["count"] == 3 and api["stuck"]["more"] and api["stuck"]["snapshot"] == 5
    assert api["succeeded"] == {"count": 3, "more": True, "snapshot": None, "snapshot_at": None}


def test_a_state_a_fresh_snapshot_puts_far_past_the_cap_is_not_counted_again(client, conn, monkeypatch):
    monkeypatch.setattr(key_tabs, "COUNT_CAP", 3)
    for i in range(2):
        insert_key(conn, "s", f"stuck-{i}")  # live: 2, under the cap
    snapshot = """INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                      failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h)
                  VALUES (now() - %s::interval, %s, 0, 0, 0, 0, NULL, 0)"""
    conn.execute(snapshot, ("10 minutes", 700))  # older than 3 snapshot intervals: not trusted to skip
    assert _tabs(client)[0]["stuck"] == "2"
    conn.execute(snapshot, ("30 seconds", 900))  # fresh and far past the cap: the tab shows it, uncounted
    counts, soup = _tabs(client)
    assert counts["stuck"] == "≈900" and counts["processing"] == "2"
    assert "taken 30 s ago" in soup.select_one('[data-count="stuck"]')["title"]


def _walk(client, url, start_cursor=None, key="next_cursor"):
    items, cursor, pages = [], start_cursor, 0
    while True:
        body = client.get(url + (f"&cursor={cursor}" if cursor else "")).get_json()
        items.append([(i["scope"], i["key"]) for i in body["items"]])
        cursor = body[key]
        pages += 1
        assert pages < 100
        if cursor is None:
            return items, body


@pytest.mark.system
@pytest.mark.parametrize("status", ["stuck", "processing", "succeeded"])
def test_both_orders_and_back_again_list_every_key_once(client, conn, status):
    rng = random.Random(5)
    for i in range(23):
        if status == "succeeded":
            insert_key(
                conn,
                rng.choice(["a", "b"]),
                f"k{i}",
                status="succeeded",
                locked_until=None,
                updated_ago=timedelta(minutes=rng.choice([1, 2, 3])),
            )  # ties in the sort column
        else:
            insert_key(
                conn,
                rng.choice(["a", "b"]),
                f"k{i}",
                locked_until=None if i % 5 == 0 else timedelta(minutes=-rng.choice([1, 2, 3])),
            )
    url = f"/api/v1/keys?status={status}&limit=5"
    forward, last = _walk(client, url)
    flat = [k for page in forward for k in page]
    assert len(flat) == len(set(flat)) == 23

    other = "asc" if status == "succeeded" else "desc"
    reverse, _ = _walk(client, url + f"&order={other}")
    assert [k for page in reverse for k in page] == flat[::-1]

    # from the last page, prev_cursor leads back through the same pages to the first
    body = client.get(url).get_json()
    cursor, pages = body["next_cursor"], [body]
    while cursor:
        pages.append(client.get(url + f"&cursor={cursor}").get_json())
        cursor = pages[-1]["next_cursor"]
    assert pages[0]["prev_cursor"] is None and all(p["prev_cursor"] for p in pages[1:])
    back = pages[-1]["prev_cursor"]
    seen = []
    while back:
        page = client.get(url + f"&cursor={back}").get_json()
        seen.insert(0, [(i["scope"], i["key"]) for i in page["items"]])
        assert page["next_cursor"] is not None  # came back from a later page: there is one after
        back = page["prev_cursor"]
    assert seen == forward[:-1]


def test_the_sort_column_links_the_other_order_and_says_which(client, conn):
    insert_key(conn, "s", "early", locked_until=timedelta(minutes=-30))
    insert_key(conn, "s", "late", locked_until=timedelta(minutes=-1))
    soup = BeautifulSoup(client.get("/keys?status=stuck").data, "html.parser")
    th = soup.select_one("th.sortable")
    assert th["aria-sort"] == "ascending" and th.a["href"] == "/keys?status=stuck&order=desc"
    assert [a.get_text() for a in soup.select("#keys-panel a.key")] == ["early", "late"]
    soup = BeautifulSoup(client.get("/keys?status=stuck&order=desc").data, "html.parser")
    assert soup.select_one("th.sortable")["aria-sort"] == "descending"
    assert [a.get_text() for a in soup.select("#keys-panel a.key")] == ["late", "early"]
    assert client.get("/keys?order=sideways").status_code == 400


def test_the_pager_offers_previous_and_next(client, conn):
    for i in range(7):
        insert_key(conn, "s", f"k{i}", locked_until=timedelta(minutes=-10 - i))
    first = BeautifulSoup(client.get("/keys?limit=3").data, "html.parser")
    assert first.select_one("a[rel=prev]") is None
    second_url = first.select_one("a[rel=next]")["href"]
    second = BeautifulSoup(client.get(second_url).data, "html.parser")
    assert second.select_one("a[rel=prev]") is not None and second.select_one("a[rel=next]") is not None
    back = BeautifulSoup(client.get(second.select_one("a[rel=prev]")["href"]).data, "html.parser")
    assert [a.get_text() for a in back.select("#keys-panel a.key")] == [
        a.get_text() for a in first.select("#keys-panel a.key")
    ]


def test_an_exact_filter_that_matches_nothing_offers_the_names_that_exist(client, conn):
    insert_key(conn, "capture_payment", "k1", claimed_by="pay-worker-3")
    insert_key(conn, "refund", "k2")
    soup = BeautifulSoup(client.get("/keys?status=stuck&scope=cap").data, "html.parser")
    hint = soup.select_one('[data-suggest="scope"]')
    assert "No scope is named cap" in hint.get_text(" ", strip=True)
    assert [a.get_text() for a in hint.select("a") if a.get_text() != "search"] == ["capture_payment"]
    assert [o["value"] for o in soup.select("#scope-list option")] == ["capture_payment", "refund"]
    assert "pay-worker-3" in [o["value"] for o in soup.select("#worker-list option")]
    worker = BeautifulSoup(client.get("/keys?status=stuck&claimed_by=worker").data, "html.parser")
    assert [a.get_text() for a in worker.select('[data-suggest="claimed_by"] a')] == ["pay-worker-3"]
    labels = [m.get_text() for m in soup.select("#filters .match")]
    assert labels == ["exact name", "exact name"]


def test_the_overviews_24_h_cards_open_a_list_and_a_tab_that_count_the_same_keys(client, conn):
    """ "Failed, final, 24 h 389" opened a list whose tab said 545: every failed_final key, of any age."""
    for i in range(3):
        insert_key(
            conn, "s", f"final-new-{i}", status="failed_final", locked_until=None, updated_ago=timedelta(hours=2)
        )
    for i in range(2):
        insert_key(conn, "s", f"final-old-{i}", status="failed_final", locked_until=None, updated_ago=timedelta(days=3))
    insert_key(conn, "s", "ok-new", status="succeeded", locked_until=None, updated_ago=timedelta(hours=1))
    insert_key(conn, "s", "ok-old", status="succeeded", locked_until=None, updated_ago=timedelta(days=2))
    overview = BeautifulSoup(client.get("/").data, "html.parser")
    for card, status, number in (("card-failed-final", "failed_final", "3"), ("card-succeeded", "succeeded", "1")):
        link = overview.select_one(f"#{card}")
        assert link.select_one(".number").get_text(strip=True) == number
        counts, soup = _tabs(client, link["href"])
        assert counts[status] == number, (card, link["href"], counts)
        shown = [a.get_text(strip=True) for a in soup.select("table.keys td.keycell a")]
        assert len(shown) == int(number) and all("new" in key for key in shown), shown
        assert "changed in the last 24 h" in soup.select_one(".tab-note").get_text(" ", strip=True)

    api = client.get("/api/v1/keys?status=failed_final&updated_within=24h").get_json()
    assert sorted(item["key"] for item in api["items"]) == ["final-new-0", "final-new-1", "final-new-2"]
    assert api["counts"]["failed_final"]["count"] == 3 and api["counts"]["succeeded"]["count"] == 1
    assert api["matching"] == {"count": 3, "more": False} and api["not_applied"] == []
    # on a processing tab the window is not applied (and said so), the windowed tabs still count by it
    stuck = client.get("/api/v1/keys?status=stuck&updated_within=24h").get_json()
    assert stuck["not_applied"] == [
        {"filter": "updated_within", "applies_to": ["succeeded", "failed_retryable", "failed_final"]}
    ]
    assert stuck["counts"]["failed_final"]["count"] == 3
    assert client.get("/api/v1/keys").get_json()["counts"]["failed_final"]["count"] == 5
    assert client.get("/api/v1/keys?status=failed_final&updated_within=soon").status_code == 400


def test_succeeded_keys_the_rollup_job_counted_far_past_the_cap_are_not_counted_on_each_view(client, conn, monkeypatch):
    """At 100M keys the job stores the succeeded keys' count (too slow to count live): the tab says "more" from it
    instead of reading COUNT_CAP index entries on every view; within a window (which the job does not count) it
    counts, and a stored count that is not far past the cap does not stand in."""
    from datetime import datetime, timezone

    from idemdash.queries.profile_states import MeasuredState
    from idemdash.queries.rollup_store import upsert_rollup
    from idemdash.queries.rollups import LIVE_BUDGET_MS

    monkeypatch.setattr(key_tabs, "COUNT_CAP", 3)
    for i in range(2):
        insert_key(conn, "s", f"ok-{i}", status="succeeded", locked_until=None)  # 2 live: under the cap

    def store(count: int) -> None:
        done = MeasuredState("keys", "done", count, LIVE_BUDGET_MS + 1.0, estimated=True)
        upsert_rollup(conn, "library_states", "", datetime.now(timezone.utc), 2_000.0, [done])

    store(4)  # past the cap, not far past it: counted
    assert _tabs(client)[0]["succeeded"] == "2"
    store(900)
    assert _tabs(client)[0]["succeeded"] == "3+"
    api = client.get("/api/v1/keys?status=succeeded").get_json()
    assert api["counts"]["succeeded"] == {"count": 3, "more": True, "snapshot": None, "snapshot_at": None}
    assert api["matching"]["more"] is True  # the breakdown agrees with the tab, without reading the keys
    assert _tabs(client, "/keys?status=succeeded&updated_within=1d")[0]["succeeded"] == "2"


def test_failed_final_keys_the_rollup_job_counted_far_past_the_cap_are_not_counted_on_each_view(
    client, conn, monkeypatch
):
    """At 100M keys (3M failed finally) the failed_final tab read 10,001 index entries on every view of any tab: the
    rollup job's stored count stands in when it is fresh and far past the cap; within a window it counts."""
    from datetime import datetime, timezone

    from idemdash.queries.overview import WindowCounts
    from idemdash.queries.rollup_store import upsert_rollup

    monkeypatch.setattr(key_tabs, "COUNT_CAP", 3)
    for i in range(2):
        insert_key(conn, "s", f"final-{i}", status="failed_final", locked_until=None)  # 2 live: under the cap
    upsert_rollup(conn, "key_windows", "", datetime.now(timezone.utc), 250.0, [WindowCounts(0, 900, 0, 0)])
    assert _tabs(client)[0]["failed_final"] == "3+"
    assert _tabs(client, "/keys?status=failed_final&updated_within=1d")[0]["failed_final"] == "2"
    upsert_rollup(conn, "key_windows", "", datetime.now(timezone.utc), 1.0, [WindowCounts(0, 900, 0, 0)])
    assert _tabs(client)[0]["failed_final"] == "2"  # stored but quick to count live: counted (as a page reads it)
