"""The header's search (`/search`) and `GET /api/v1/search`: a key pasted whole, whatever its scope; by prefix; by
scope or worker name; against keys the tests write themselves."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote, unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from idemdash.queries import search
from tests.test_keys import NASTY_KEYS, insert_key


def _search(client, **query):
    response = client.get("/api/v1/search", query_string=query)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_a_key_in_one_scope_is_found_and_the_page_goes_to_it(client, conn):
    insert_key(conn, "create_order", "cart/42/checkout")
    insert_key(conn, "refund", "other-key", status="succeeded")
    body = _search(client, q="cart/42/checkout")
    assert body["match"] == "exact"
    assert [(i["scope"], i["key"], i["status"], i["stuck"]) for i in body["items"]] == [
        ("create_order", "cart/42/checkout", "processing", True)
    ]
    assert body["items"][0]["url"] == "/keys/create_order/cart/42/checkout"
    assert body["scopes_searched"] == 2 and body["scopes_truncated"] is False

    response = client.get("/search?q=cart/42/checkout")
    assert response.status_code == 302
    assert urlsplit(response.headers["Location"]).path == "/keys/create_order/cart/42/checkout"


def test_the_same_key_in_several_scopes_is_listed_not_guessed(client, conn):
    for scope in ("create_order", "refund", "capture_payment"):
        insert_key(conn, scope, "ord-7", status="succeeded")
    insert_key(conn, "send_invoice", "ord-70")
    body = _search(client, q="ord-7")
    assert body["match"] == "exact"
    assert [i["scope"] for i in body["items"]] == ["capture_payment", "create_order", "refund"]

    response = client.get("/search?q=ord-7")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    assert [tr["data-scope"] for tr in soup.select("table.search-results tbody tr")] == [
        "capture_payment",
        "create_order",
        "refund",
    ]
    assert "3 keys named" in soup.select_one("#results-title").get_text()
    # naming the scope narrows it to one, and then the page goes there
    assert client.get("/search?q=ord-7&scope=refund").status_code == 302


def test_nothing_found_says_so_and_where_it_looked(client, conn):
    insert_key(conn, "create_order", "a")
    insert_key(conn, "refund", "b")
    body = _search(client, q="zzz-not-there")
    assert (body["match"], body["items"], body["scopes_searched"]) == ("none", [], 2)
    soup = BeautifulSoup(client.get("/search?q=zzz-not-there").data, "html.parser")
    assert soup.select_one("section[data-match=none]") is not None
    assert "No key" in soup.select_one("#results-title").get_text()
    assert "Looked in 2 scopes" in soup.select_one("[data-searched]").get_text()


def test_prefix_search_within_a_scope_and_across_scopes(client, conn):
    for i in range(60):
        insert_key(conn, "create_order", f"cart/{i:03d}", status="succeeded")
    for i in range(8):
        insert_key(conn, "refund", f"cart/r{i}", status="succeeded")
    insert_key(conn, "refund", "carton-x", status="succeeded")
    insert_key(conn, "refund", "other")

    within = _search(client, q="cart/", scope="create_order")
    assert within["match"] == "prefix"
    assert [i["key"] for i in within["items"]] == [f"cart/{i:03d}" for i in range(search.PREFIX_LIMIT)]
    assert within["prefix_limited"] is True  # 60 match, 50 shown: type more

    exact_prefix = _search(client, q="cart/05", scope="create_order")
    assert [i["key"] for i in exact_prefix["items"]] == [f"cart/05{i}" for i in range(10)]
    assert exact_prefix["prefix_limited"] is False

    across = _search(client, q="cart")
    per = search.PREFIX_PER_SCOPE_ACROSS
    assert [(i["scope"], i["key"]) for i in across["items"]] == (
        [("create_order", f"cart/{i:03d}") for i in range(per)] + [("refund", f"cart/r{i}") for i in range(per)]
    )
    assert across["prefix_limited"] is True


def test_scope_and_worker_names_containing_the_text(client, conn):
    insert_key(conn, "capture_payment", "k1", claimed_by="pay-worker-3")
    insert_key(conn, "recapture", "k2", claimed_by="api-1")
    insert_key(conn, "refund", "k3", claimed_by="worker-9", locked_until=timedelta(minutes=5))
    body = _search(client, q="CAP")
    assert body["scopes"] == ["capture_payment", "recapture"]
    assert _search(client, q="worker")["workers"] == ["pay-worker-3", "worker-9"]
    soup = BeautifulSoup(client.get("/search?q=cap").data, "html.parser")
    links = [a.get_text() for a in soup.select("[data-scopes] a") if "processing" not in a.get_text()]
    assert links == ["capture_payment", "recapture"]


@pytest.mark.parametrize(
    "text",
    [
        "create_order/a/b",
        "create_order a/b",
        "https://idemdash.example/keys/create_order/a%2Fb",
        "http://127.0.0.1:8000/keys/create_order/a/b",
    ],
)
def test_scope_slash_key_and_a_pasted_key_address_are_understood(client, conn, text):
    insert_key(conn, "create_order", "a/b")
    insert_key(conn, "refund", "unrelated")
    body = _search(client, q=text)
    assert body["match"] == "exact"
    assert [(i["scope"], i["key"]) for i in body["items"]] == [("create_order", "a/b")]


@pytest.mark.system
def test_every_nasty_key_is_found_and_its_link_opens_it(client, conn):
    insert_key(conn, "refund", "decoy")
    for key in NASTY_KEYS:
        insert_key(conn, "create_order", key)
    for key in NASTY_KEYS:
        body = _search(client, q=key)
        assert [i["key"] for i in body["items"]] == [key], key
        url = body["items"][0]["url"]
        page = client.get(url)
        assert page.status_code == 200, (key, url)
        title = BeautifulSoup(page.data, "html.parser").select_one("h1 .mono").get_text()
        assert title == key


def test_the_page_without_a_query_explains_and_bad_input_is_a_400(client, conn):
    page = client.get("/search")
    assert page.status_code == 200
    assert "Paste a key" in BeautifulSoup(page.data, "html.parser").select_one("main").get_text()
    missing = client.get("/api/v1/search")
    assert missing.status_code == 400 and "q is required" in missing.get_json()["error"]
    too_long = client.get("/api/v1/search?q=" + "x" * 10_001)
    assert too_long.status_code == 400 and "q must be at most 10000 characters" in too_long.get_json()["error"]
    nul = client.get("/api/v1/search?q=" + quote("a\x00b"))
    assert nul.status_code == 400


@pytest.mark.system
def test_the_header_box_is_on_every_page_and_keeps_the_query(client, conn):
    insert_key(conn, "create_order", "x")
    for path in ("/", "/keys", "/audit", "/outbox", "/health"):
        box = BeautifulSoup(client.get(path).data, "html.parser").select_one("header form[role=search] input[name=q]")
        assert box is not None and box.get("value", "") == "", path
    box = BeautifulSoup(client.get("/search?q=nope").data, "html.parser").select_one("header input[name=q]")
    assert unquote(box["value"]) == "nope"


def test_more_scopes_than_the_cap_are_said_to_be_left_out(client, conn, monkeypatch):
    monkeypatch.setattr(search, "MAX_SCOPES", 3)
    for scope in ("a", "b", "c", "d"):
        insert_key(conn, scope, "k" + scope)
    body = _search(client, q="kd")
    assert (body["match"], body["scopes_searched"], body["scopes_truncated"]) == ("none", 3, True)
    assert _search(client, q="kd", scope="d")["match"] == "exact"


# -- forgiving search: white space, case, other ids, nearest keys -------------------------------------------------


def _outbox_row(conn, scope, key, aggregate_id="0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55") -> str:
    return conn.execute(
        """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                               idempotency_key, payload)
                           VALUES ('order.created', 'order', %s, %s, %s, '{}') RETURNING outbox_id::text""",
        (aggregate_id, scope, key),
    ).fetchone()[0]


@pytest.mark.parametrize(
    "pasted", ["cart/42/checkout ", "  cart/42/checkout", "cart/42/checkout\n", "\tcart/42/checkout "]
)
def test_white_space_around_a_pasted_key_is_ignored(client, conn, pasted):
    insert_key(conn, "create_order", "cart/42/checkout")
    body = _search(client, q=pasted)
    assert body["q"] == "cart/42/checkout" and body["match"] == "exact"
    assert [i["key"] for i in body["items"]] == ["cart/42/checkout"]
    assert client.get("/search", query_string={"q": pasted}).status_code == 302


def test_a_key_that_really_ends_in_a_space_is_still_found(client, conn):
    insert_key(conn, "create_order", "odd ")
    assert [i["key"] for i in _search(client, q="odd ")["items"]] == ["odd "]


def test_a_uuid_key_is_found_in_either_case(client, conn):
    key = "7f3c2b1a-9d8e-4f6a-b5c4-d3e2f1a0b9c8"
    insert_key(conn, "create_order", key)
    insert_key(conn, "refund", key.upper())
    for pasted in (key.upper(), key, " " + key.upper() + " "):
        body = _search(client, q=pasted)
        assert {(i["scope"], i["key"]) for i in body["items"]} == {("create_order", key), ("refund", key.upper())}
    # text that is not a UUID keeps its case
    insert_key(conn, "create_order", "Cart-9")
    assert _search(client, q="cart-9")["match"] != "exact"


def test_an_outbox_id_finds_its_row_and_the_page_goes_there(client, conn):
    insert_key(conn, "create_order", "k1")
    outbox_id = _outbox_row(conn, "create_order", "k1")
    body = _search(client, q=outbox_id.upper())
    assert [(o["outbox_id"], o["matched"], o["key"]) for o in body["outbox"]] == [(outbox_id, "outbox_id", "k1")]
    response = client.get("/search", query_string={"q": outbox_id})
    assert response.status_code == 302 and response.headers["Location"].endswith(f"/outbox/{outbox_id}")


def test_an_aggregate_id_lists_the_outbox_rows_of_that_aggregate(client, conn):
    order = "5d0c9a2e-1f3b-4e7a-8c6d-2b1a0f9e8d7c"
    insert_key(conn, "create_order", "k1")
    insert_key(conn, "send_invoice", "k2")
    ids = {_outbox_row(conn, "create_order", "k1", order), _outbox_row(conn, "send_invoice", "k2", order)}
    _outbox_row(conn, "create_order", "k3")  # another aggregate
    body = _search(client, q=order)
    assert {o["outbox_id"] for o in body["outbox"]} == ids
    assert {o["matched"] for o in body["outbox"]} == {"aggregate_id"}
    soup = BeautifulSoup(client.get("/search", query_string={"q": order}).data, "html.parser")
    assert len(soup.select("[data-outbox-hits] tbody tr")) == 2


def test_an_inbox_message_id_finds_every_consumer_that_processed_it(client, conn):
    for consumer in ("billing", "shipping"):
        conn.execute(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash) VALUES (%s, 'msg-123', 'h')",
            (consumer,),
        )
    conn.execute(
        "INSERT INTO app.processed_message (consumer_name, message_id, message_hash) VALUES ('billing', 'msg-999', 'h')"
    )
    body = _search(client, q=" msg-123 ")
    assert sorted((m["consumer"], m["message_id"]) for m in body["messages"]) == [
        ("billing", "msg-123"),
        ("shipping", "msg-123"),
    ]
    soup = BeautifulSoup(client.get("/search", query_string={"q": "msg-123"}).data, "html.parser")
    assert len(soup.select("[data-message-hits] tbody tr")) == 2


def test_when_nothing_matches_the_nearest_keys_are_offered(client, conn):
    insert_key(conn, "create_order", "cart/42/checkout")
    insert_key(conn, "create_order", "zebra")
    body = _search(client, q="cart/43")
    assert body["match"] == "none"
    nearest = body["nearest"]
    assert nearest[0]["key"] == "cart/42/checkout" and nearest[0]["common_prefix"] == "cart/4"
    assert all(n["common_prefix"] for n in nearest)
    soup = BeautifulSoup(client.get("/search?q=cart/43").data, "html.parser")
    offered = soup.select_one("[data-nearest]")
    assert offered is not None and "cart/42/checkout" in offered.get_text()
    assert "live lease" not in soup.get_text()


def test_an_empty_or_blank_query_is_a_400_in_the_api(client, conn):
    for blank, words in (("", "q is empty"), ("   ", "q is required: it must say something")):
        response = client.get("/api/v1/search", query_string={"q": blank})
        assert response.status_code == 400 and words in response.get_json()["error"], response.get_json()


def test_a_worker_whose_keys_all_succeeded_is_found_by_its_name_and_linked(client, conn):
    # the top hotspot worker of the on-call round: every key it claimed is finished, none holds a lease
    for i in range(3):
        insert_key(conn, "capture_payment", f"done-{i}", status="succeeded", claimed_by="worker-7", locked_until=None)
    insert_key(conn, "refund", "k-live", claimed_by="worker-70", locked_until=timedelta(minutes=5))
    insert_key(conn, "refund", "k-held", claimed_by="idemdash:needs_review", locked_until=timedelta(hours=5))
    body = _search(client, q="worker-7")
    assert body["match"] == "none" and body["workers"] == ["worker-7", "worker-70"]  # the exact name first
    assert "whatever their keys' state" in body["definitions"]["workers"]
    assert _search(client, q="needs_review")["workers"] == []  # idemdash's holder is not a worker
    soup = BeautifulSoup(client.get("/search?q=worker-7").data, "html.parser")
    exact = soup.select_one("[data-worker-exact]")
    assert "Worker worker-7" in exact.get_text(" ", strip=True)
    hrefs = [a["href"] for a in exact.select("a")]
    assert "/keys?claimed_by=worker-7" in hrefs and "/keys?status=succeeded&claimed_by=worker-7" in hrefs
    assert "/workers" in hrefs
    names = soup.select_one("[data-workers]")
    assert [a["href"] for a in names.select("a")] == [
        "/keys?claimed_by=worker-7",
        "/keys?claimed_by=worker-70",
        "/workers",
    ]
    # the succeeded list it links to holds its keys
    listed = client.get("/api/v1/keys?status=succeeded&claimed_by=worker-7").get_json()["items"]
    assert sorted(k["key"] for k in listed) == ["done-0", "done-1", "done-2"]
    # a name nobody has is no worker
    assert _search(client, q="worker-77")["workers"] == []


def test_every_owner_of_a_failed_key_is_found_however_old_and_by_exact_name_past_the_limit(client, conn, monkeypatch):
    insert_key(
        conn,
        "refund",
        "old-failure",
        status="failed_final",
        claimed_by="batch-runner",
        locked_until=None,
        updated_ago=timedelta(days=20),
    )
    for i in range(3):
        insert_key(conn, "refund", f"recent-{i}", status="failed_retryable", claimed_by="api-1", locked_until=None)
    for i in range(3):
        insert_key(conn, "refund", f"done-{i}", status="succeeded", claimed_by="api-2", locked_until=None)
    monkeypatch.setattr(search, "OWNER_SAMPLE", 1)  # one succeeded key, one processing key at each end
    # the owners of failed keys are read whole (a loose scan of the failures index), however old their keys
    assert _search(client, q="batch")["workers"] == ["batch-runner"]
    assert _search(client, q="api")["workers"] == ["api-1", "api-2"]
    monkeypatch.setattr(search, "MAX_FAILING_OWNERS", 1)  # the loose scan stops at api-1
    assert _search(client, q="batch")["workers"] == []  # containing: only among the names read
    assert _search(client, q="batch-runner")["workers"] == ["batch-runner"]  # one probe of the failures index
