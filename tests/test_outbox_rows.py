"""One outbox row's page and its JSON twin, the likely poison rows (oldest first), and the outbox backlog runbook."""

from __future__ import annotations

import uuid
from dataclasses import fields
from datetime import timedelta
from urllib.parse import unquote

from bs4 import BeautifulSoup

from idemdash.dashboard.schemas.outbox import Backlog, OutboxPage, OutboxRowPage, PoisonPage
from idemdash.queries.outbox import OutboxRow
from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events, now_of

HOSTILE = {
    "note": '</pre><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">',
    "nested": {"html": "<a href='javascript:alert(1)'>x</a>", "quote": "'\"&"},
}


def test_a_row_page_shows_its_columns_key_and_payload_as_text(client, conn):
    now = now_of(conn)
    insert_key(conn, "create_order", "cart/7 x", status="succeeded")
    row = Event(
        "order.created",
        "pending",
        now - timedelta(minutes=90),
        attempt_count=5,
        scope="create_order",
        key="cart/7 x",
        payload=HOSTILE,
    )
    insert_events(conn, [row])
    response = client.get(f"/outbox/{row.outbox_id}")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "<script>window.pwned" not in html and "<img src=x" not in html  # escaped, never markup
    soup = BeautifulSoup(html, "html.parser")
    payload = soup.select_one("pre[data-payload]").get_text()
    assert "</pre><script>window.pwned = 1</script>" in payload and "javascript:alert(1)" in payload
    assert soup.select_one("[data-attempts]").get_text() == "5"
    assert soup.select_one("[data-poison]") is not None  # 5 attempts, pending: likely poison
    key_link = soup.select_one("section a.key")
    assert unquote(key_link["href"]) == "/keys/create_order/cart/7 x" and key_link.get_text() == "cart/7 x"

    body = client.get(f"/api/v1/outbox/{row.outbox_id}").get_json()
    assert body["payload"] == HOSTILE and body["attempt_count"] == 5 and body["likely_poison"] is True
    assert body["key_exists"] is True and unquote(body["key_url"]) == "/keys/create_order/cart/7 x"
    assert body["outbox_id"] == str(row.outbox_id)
    assert set(body) == set(OutboxRowPage.model_fields)  # the documented answer, no more and no less

    listed = client.get("/api/v1/outbox").get_json()
    assert set(listed) == set(OutboxPage.model_fields)
    assert set(listed["items"][0]) == {f.name for f in fields(OutboxRow)}
    assert set(listed["backlog"]) == set(Backlog.model_fields)
    poison = client.get("/api/v1/outbox/poison").get_json()
    assert set(poison) == set(PoisonPage.model_fields) and [i["outbox_id"] for i in poison["items"]] == [
        str(row.outbox_id)
    ]


def test_the_key_page_and_the_outbox_list_link_to_the_row(client, conn):
    now = now_of(conn)
    insert_key(conn, "create_order", "k")
    row = Event("order.created", "pending", now - timedelta(minutes=1), scope="create_order", key="k")
    insert_events(conn, [row])
    key_page = BeautifulSoup(client.get("/keys/create_order/k").data, "html.parser")
    outbox_page = BeautifulSoup(client.get("/outbox").data, "html.parser")
    for soup in (key_page, outbox_page):
        assert soup.select_one(f'a[href="/outbox/{row.outbox_id}"]') is not None


def test_a_purged_key_and_unknown_rows_say_so(client, conn):
    now = now_of(conn)
    row = Event("order.created", "published", now - timedelta(days=1), published_at=now, key="gone")
    insert_events(conn, [row])
    soup = BeautifulSoup(client.get(f"/outbox/{row.outbox_id}").data, "html.parser")
    assert "no longer in the key table" in " ".join(soup.select_one("main").get_text().split())
    assert soup.select_one("[data-poison]") is None
    missing = client.get(f"/api/v1/outbox/{uuid.uuid4()}")
    assert missing.status_code == 404 and "no outbox row" in missing.get_json()["error"]
    assert client.get(f"/outbox/{uuid.uuid4()}").status_code == 404
    assert client.get("/outbox/not-a-uuid").status_code == 404


def test_poison_rows_oldest_first_one_page_at_a_time(client, conn):
    now = now_of(conn)
    poison = [
        Event("e", "pending", now - timedelta(minutes=m), attempt_count=a)
        for m, a in ((50, 3), (40, 9), (30, 4), (20, 3), (10, 12))
    ]
    others = [
        Event("e", "pending", now - timedelta(minutes=60), attempt_count=2),
        Event("e", "failed", now - timedelta(minutes=70), attempt_count=30),
        Event("e", "published", now - timedelta(minutes=80), attempt_count=7, published_at=now),
    ]
    insert_events(conn, poison + others)
    oldest_first = [str(e.outbox_id) for e in poison]

    seen, cursor = [], None
    while True:
        body = client.get("/api/v1/outbox/poison?limit=2" + (f"&cursor={cursor}" if cursor else "")).get_json()
        seen += [i["outbox_id"] for i in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == oldest_first
    at_least_4 = client.get("/api/v1/outbox/poison?min_attempts=4").get_json()
    assert [i["attempt_count"] for i in at_least_4["items"]] == [9, 4, 12]

    soup = BeautifulSoup(client.get("/outbox/poison").data, "html.parser")
    assert [tr["data-outbox-id"] for tr in soup.select("table[data-rows=poison] tbody tr")] == oldest_first
    assert client.get("/outbox/poison?min_attempts=2").status_code == 400  # below the poison threshold
    below = client.get("/api/v1/outbox/poison?min_attempts=2")
    assert below.status_code == 400 and below.get_json()["fields"] == [
        {"field": "min_attempts", "message": 'must be at least 3 (got "2")'}
    ]
    assert client.get("/api/v1/outbox/poison?cursor=bad!").status_code == 400
    outbox = BeautifulSoup(client.get("/outbox").data, "html.parser")
    assert outbox.select_one('a#card-many-attempts[href="/outbox/poison"]') is not None


def test_the_outbox_runbook_sits_beside_the_stuck_key_runbook(client, conn):
    soup = BeautifulSoup(client.get("/runbook/outbox-backlog").data, "html.parser")
    assert "outbox backlog" in soup.select_one("h1").get_text()
    sqls = [pre.get_text() for pre in soup.select("pre.sql")]
    assert len(sqls) == 4 and all('"app"."outbox_event"' in s for s in sqls)
    assert soup.select_one('a[href="/runbook/stuck-keys"]') is not None
    stuck = BeautifulSoup(client.get("/runbook/stuck-keys").data, "html.parser")
    assert stuck.select_one('a[href="/runbook/outbox-backlog"]') is not None
    outbox = BeautifulSoup(client.get("/outbox").data, "html.parser")
    assert outbox.select_one('a[href="/runbook/outbox-backlog"]') is not None


def test_the_runbook_setting_can_point_either_runbook_elsewhere(make_app, conn):
    insert_key(conn, "s", "k")
    stuck_only = make_app(RUNBOOK_URL="https://wiki.example/stuck?key={key}").test_client()
    assert (
        BeautifulSoup(stuck_only.get("/outbox").data, "html.parser").select_one('a[href="/runbook/outbox-backlog"]')
        is not None
    )  # written for stuck keys: the outbox keeps its own
    assert stuck_only.get("/api/v1/keys/s/k").get_json()["runbook_url"] == "https://wiki.example/stuck?key=k"
    both = make_app(RUNBOOK_URL="https://wiki.example/{runbook}?key={key}").test_client()
    assert (
        BeautifulSoup(both.get("/outbox").data, "html.parser").select_one(
            'a[href="https://wiki.example/outbox-backlog?key="]'
        )
        is not None
    )
    assert both.get("/api/v1/keys/s/k").get_json()["runbook_url"] == "https://wiki.example/stuck-keys?key=k"
