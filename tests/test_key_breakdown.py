"""Where an incident is: the key list's rows per scope and per worker equal ground truth, worst first, within the
list's filters; a name's link filters the list to exactly those keys; the overview names the top scope and worker
of the stuck keys; a tab with more keys than the cap is not broken down (it says so)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

from bs4 import BeautifulSoup

from idemdash.dashboard import key_breakdown, key_tabs
from tests.test_keys import insert_key, walk

SCOPES = ("create_order", "refund", "send_invoice", "ship", "notify")
WORKERS = ("api-1", "api-2", "api-4", "batch-1")


def stage_incident(conn) -> list[tuple[str, str, str]]:
    """A bad deploy of capture_payment on api-3: 40 keys stuck there, among a background of stuck keys in other
    scopes and workers, live ones, and finished ones. Returns (scope, key, worker) of every stuck key."""
    rng = random.Random(4)
    stuck = []
    for i in range(40):
        lease = None if i % 5 == 0 else timedelta(minutes=-rng.choice((3, 30, 300)))
        insert_key(
            conn,
            "capture_payment",
            f"bad-{i}",
            claimed_by="api-3",
            locked_until=lease,
            claimed_ago=timedelta(hours=2),
            attempts=rng.choice((1, 2, 6)),
        )
        stuck.append(("capture_payment", f"bad-{i}", "api-3"))
    for i in range(35):
        scope, worker = rng.choice(SCOPES), rng.choice(WORKERS)
        insert_key(conn, scope, f"bg-{i}", claimed_by=worker, locked_until=timedelta(minutes=-rng.choice((2, 90))))
        stuck.append((scope, f"bg-{i}", worker))
    # api-3 also stuck a few elsewhere, and capture_payment has some on another worker: neither is the whole story
    for i in range(3):
        insert_key(conn, "refund", f"api3-{i}", claimed_by="api-3")
        stuck.append(("refund", f"api3-{i}", "api-3"))
    insert_key(conn, "capture_payment", "other-0", claimed_by="api-2")
    stuck.append(("capture_payment", "other-0", "api-2"))
    for i in range(20):  # live leases and finished keys: not stuck
        insert_key(conn, "capture_payment", f"live-{i}", claimed_by="api-3", locked_until=timedelta(minutes=5))
        insert_key(conn, rng.choice(SCOPES), f"done-{i}", status="succeeded", claimed_by=rng.choice(WORKERS))
    return stuck


def worst_first(counter: Counter) -> list[dict]:
    return [{"name": n, "count": c} for n, c in sorted(counter.items(), key=lambda nc: (-nc[1], nc[0]))]


def as_pairs(cells: list[dict], key: str) -> list[dict]:
    return [{"name": c[key], "count": c["count"]} for c in cells]


def test_stuck_breakdown_equals_ground_truth_worst_first(client, conn):
    stuck = stage_incident(conn)
    body = client.get("/api/v1/keys/breakdown?status=stuck").get_json()
    assert body["total"] == len(stuck) and body["too_many"] is False
    assert as_pairs(body["by_scope"], "scope") == worst_first(Counter(s for s, _, _ in stuck))
    assert as_pairs(body["by_worker"], "worker") == worst_first(Counter(w for _, _, w in stuck))
    assert body["by_scope"][0] == {"scope": "capture_payment", "count": 41}
    assert body["by_worker"][0] == {"worker": "api-3", "count": 43}


def test_filters_on_the_list_narrow_the_breakdown(client, conn):
    stuck = stage_incident(conn)
    body = client.get("/api/v1/keys/breakdown?status=stuck&claimed_by=api-3").get_json()
    assert as_pairs(body["by_scope"], "scope") == worst_first(Counter(s for s, _, w in stuck if w == "api-3"))
    assert body["by_worker"] == [{"worker": "api-3", "count": 43}]
    body = client.get("/api/v1/keys/breakdown?status=stuck&scope=capture_payment&overdue=1h").get_json()
    # overdue: the unleased bad keys (claimed 2 h ago, lease 5 min) and those whose lease ended 300 min ago
    listed, _ = walk(client, "/api/v1/keys?status=stuck&scope=capture_payment&overdue=1h")
    assert body["total"] == len(listed) > 0
    assert as_pairs(body["by_worker"], "worker") == worst_first(Counter(k["claimed_by"] for k in listed))
    # a filter that does not apply to the tab is named, not applied
    body = client.get("/api/v1/keys/breakdown?status=succeeded&overdue=1h").get_json()
    assert body["not_applied"][0]["filter"] == "overdue" and body["total"] == 20


def test_page_breakdown_links_filter_the_list_to_exactly_those_keys(client, conn):
    stuck = stage_incident(conn)
    page = BeautifulSoup(client.get("/keys?status=stuck").data, "html.parser")
    box = page.select_one("#breakdown-box")
    assert "capture_payment" in box.summary.text and "api-3" in box.summary.text
    scopes = [(a["data-name"], int(a["data-count"])) for a in box.select("[data-breakdown=scope] a")]
    assert (
        scopes == [(g["name"], g["count"]) for g in worst_first(Counter(s for s, _, _ in stuck))][: key_breakdown.TOP]
    )
    link = box.select_one("[data-breakdown=worker] a[data-name=api-3]")
    assert link["href"] == link["hx-get"]
    query = parse_qs(urlsplit(link["href"]).query)
    assert query == {"status": ["stuck"], "claimed_by": ["api-3"]}
    listed, _ = walk(client, "/api/v1/keys?" + urlsplit(link["href"]).query)
    assert sorted((k["scope"], k["key"]) for k in listed) == sorted((s, k) for s, k, w in stuck if w == "api-3")
    # on the filtered list, the scope link keeps the worker filter: both together
    page = BeautifulSoup(client.get(link["href"]).data, "html.parser")
    link = page.select_one("#breakdown-box [data-breakdown=scope] a[data-name=capture_payment]")
    assert parse_qs(urlsplit(link["href"]).query) == {
        "status": ["stuck"],
        "claimed_by": ["api-3"],
        "scope": ["capture_payment"],
    }
    listed, _ = walk(client, "/api/v1/keys?" + urlsplit(link["href"]).query)
    assert len(listed) == 40
    # the filter in force is marked, and its link takes it off again
    page = BeautifulSoup(client.get(link["href"]).data, "html.parser")
    current = page.select_one("#breakdown-box [data-breakdown=scope] a[aria-current]")
    assert current["data-name"] == "capture_payment" and "scope=" not in current["href"]


def test_more_than_eight_groups_say_how_many_more(client, conn):
    for i in range(11):
        for j in range(i + 1):
            insert_key(conn, f"scope-{i:02d}", f"k{j}", claimed_by="api-1")
    page = BeautifulSoup(client.get("/keys?status=stuck").data, "html.parser")
    names = [a["data-name"] for a in page.select("[data-breakdown=scope] a")]
    assert names == [f"scope-{i:02d}" for i in range(10, 2, -1)]
    assert page.select_one("[data-breakdown=scope] [data-more]").text.strip() == "and 3 more (6 keys)"


def test_overview_names_the_scope_and_the_worker(client, conn):
    assert client.get("/").status_code == 200
    assert BeautifulSoup(client.get("/").data, "html.parser").select_one("#stuck-where") is None  # nothing stuck
    stage_incident(conn)
    page = BeautifulSoup(client.get("/").data, "html.parser")
    where = page.select_one("#stuck-where")
    text = " ".join(where.text.split())
    assert text.startswith("79 stuck: 41 in capture_payment, 43 claimed by api-3."), text
    scope_link, worker_link = where.select_one("[data-top=scope]"), where.select_one("[data-top=worker]")
    assert parse_qs(urlsplit(scope_link["href"]).query) == {"status": ["stuck"], "scope": ["capture_payment"]}
    listed, _ = walk(client, "/api/v1/keys?" + urlsplit(worker_link["href"]).query)
    assert len(listed) == 43 and {k["claimed_by"] for k in listed} == {"api-3"}


def test_a_tab_past_the_cap_is_not_broken_down(client, conn, monkeypatch):
    monkeypatch.setattr(key_breakdown, "CAP", 15)
    stage_incident(conn)  # 20 succeeded keys: more than a cap of 15
    body = client.get("/api/v1/keys/breakdown?status=succeeded").get_json()
    assert body == {**body, "too_many": True, "total": 0, "by_scope": [], "by_worker": [], "cap": 15}
    page = BeautifulSoup(client.get("/keys?status=succeeded").data, "html.parser")
    assert "Too many to break down" in page.select_one("#breakdown-box summary").text
    assert page.select_one("[data-too-many]") is not None
    # narrowed under the cap, it is broken down again
    body = client.get("/api/v1/keys/breakdown?status=succeeded&claimed_by=api-1").get_json()
    assert body["too_many"] is False and body["total"] == sum(w["count"] for w in body["by_worker"]) > 0


def test_bad_input_is_a_clear_400(client):
    response = client.get("/api/v1/keys/breakdown?status=nope")
    assert response.status_code == 400 and "status" in response.get_data(as_text=True)


def test_a_suggested_filter_breaks_down_the_page_shown_only(client, conn):
    """Each key's suggested outcome costs an outbox lookup: the breakdown is of the page's keys, and says so."""
    stage_incident(conn)
    page = client.get("/api/v1/keys?status=stuck&suggested=safe_to_retry&limit=50").get_json()
    rows = page["items"]
    assert len(rows) == 50 and page["next_cursor"] is not None  # more safe-to-retry keys than a page
    body = client.get("/api/v1/keys/breakdown?status=stuck&suggested=safe_to_retry").get_json()
    assert body["page_only"] is True and body["more"] is True and body["too_many"] is False
    assert body["total"] == 50
    assert as_pairs(body["by_scope"], "scope") == worst_first(Counter(r["scope"] for r in rows))
    assert as_pairs(body["by_worker"], "worker") == worst_first(Counter(r["claimed_by"] for r in rows))
    # the page with a smaller limit breaks down its own 10 rows, and says only the page is counted
    html = client.get("/keys?status=stuck&suggested=safe_to_retry&limit=10").get_data(as_text=True)
    box = BeautifulSoup(html, "html.parser").select_one("#breakdown-box")
    assert box["data-breakdown-total"] == "10"
    assert box.select_one("[data-page-only]") is not None and "other pages are not counted" in box.get_text()
    # without the suggested filter: the whole tab, not a page
    whole = client.get("/api/v1/keys/breakdown?status=stuck").get_json()
    assert whole["page_only"] is False and whole["total"] > 50


def test_matching_is_the_breakdowns_total_for_every_tab(client, conn):
    """The list's ``matching`` is read from its breakdown (one read of the same rows): equal to the rows listed."""
    stage_incident(conn)
    for query in (
        "status=stuck&claimed_by=api-3",
        "status=processing",
        "status=succeeded",
        "status=stuck&min_attempts=6",
    ):
        listed, _ = walk(client, f"/api/v1/keys?{query}")
        body = client.get(f"/api/v1/keys?{query}").get_json()
        assert body["matching"] == {"count": len(listed), "more": False}, query


def test_a_tab_the_request_knows_is_past_the_cap_is_not_read_again(client, conn, monkeypatch):
    """A fresh snapshot far past the cap (the tab shows its number, uncounted): the breakdown agrees with the tab
    without reading the keys; a filter, which the snapshot does not count, is read."""
    monkeypatch.setattr(key_tabs, "COUNT_CAP", 3)
    monkeypatch.setattr(key_breakdown, "CAP", 3)
    for i in range(2):
        insert_key(conn, "s", f"stuck-{i}", claimed_by="api-1")  # 2 stuck: under the cap, were they read
    conn.execute(
        """INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
               failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h)
           VALUES (now() - interval '30 seconds', 900, 900, 0, 0, 0, NULL, 0)"""
    )
    body = client.get("/api/v1/keys/breakdown?status=stuck").get_json()
    assert body["too_many"] is True and body["total"] == 0
    page = client.get("/api/v1/keys?status=stuck").get_json()
    assert page["counts"]["stuck"]["more"] is True and page["matching"] == {"count": 3, "more": True}
    narrowed = client.get("/api/v1/keys/breakdown?status=stuck&claimed_by=api-1").get_json()
    assert narrowed["too_many"] is False and narrowed["total"] == 2


def test_a_filter_on_a_big_processing_tab_is_tested_on_the_oldest_keys_only_and_says_so(client, conn, monkeypatch):
    """At 200,000 stuck keys a filter that matches few would read them all: the breakdown (and the matching count)
    tests it on the cap + 1 oldest of each index range, and says the numbers are a lower bound."""
    monkeypatch.setattr(key_breakdown, "CAP", 10)
    stuck = stage_incident(conn)
    # ground truth: the 11 leased stuck keys whose lease ended first, and the unleased ones (8: under the cap)
    examined = conn.execute(
        """(SELECT claimed_by FROM app.idempotency_request WHERE status = 'processing' AND locked_until < now()
            ORDER BY locked_until NULLS FIRST LIMIT 11)
           UNION ALL
           (SELECT claimed_by FROM app.idempotency_request WHERE status = 'processing' AND locked_until IS NULL
              AND claimed_at < now() - interval '300 seconds' ORDER BY claimed_at LIMIT 11)"""
    ).fetchall()
    truth = Counter(w for _, _, w in stuck)
    seen = Counter(w for (w,) in examined)
    # a worker the filter finds among the examined keys, under the cap, with more of its keys past them
    worker = next(w for w in sorted(truth) if 0 < seen[w] <= 10 and seen[w] < truth[w])
    expected = seen[worker]
    url = f"status=stuck&claimed_by={worker}"
    body = client.get(f"/api/v1/keys/breakdown?{url}").get_json()
    assert body["too_many"] is False and body["more"] is True and body["page_only"] is False
    assert body["total"] == expected and body["by_worker"] == [{"worker": worker, "count": expected}]
    assert client.get(f"/api/v1/keys?{url}").get_json()["matching"] == {"count": expected, "more": True}
    page = BeautifulSoup(client.get(f"/keys?{url}").data, "html.parser")
    assert page.select_one("[data-matching]").get_text(strip=True).startswith(f"{expected}+")
    assert "others may match too" in page.select_one("[data-lower-bound]").get_text()
    # under the cap nothing is cut: exact, as before
    monkeypatch.setattr(key_breakdown, "CAP", 1000)
    body = client.get(f"/api/v1/keys/breakdown?{url}").get_json()
    assert body["more"] is False and body["total"] == truth[worker]


def test_the_overviews_own_count_decides_whether_the_stuck_keys_are_broken_down(client, conn, monkeypatch):
    """The overview has counted the stuck keys for its card: far past the cap, it says so without reading the keys
    or anything else to learn it (a snapshot, the stored counts)."""
    monkeypatch.setattr(key_breakdown, "CAP", 3)
    stage_incident(conn)  # 79 stuck: past twice the cap

    def not_read(*args, **kwargs):
        raise AssertionError("read although the overview's count says it is past the cap")

    monkeypatch.setattr(key_breakdown.key_breakdown, "break_down_keys", not_read)
    monkeypatch.setattr(key_tabs, "far_past_cap", not_read)
    where = BeautifulSoup(client.get("/").data, "html.parser").select_one("#stuck-where")
    assert " ".join(where.text.split()).startswith("More than 3 keys are stuck"), where.text
