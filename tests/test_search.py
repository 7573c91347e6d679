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
        ("create_order", "cart/42/checkout", "processing", True)]
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
        "capture_payment", "create_order", "refund"]
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
        [("create_order", f"cart/{i:03d}") for i in range(per)] + [("refund", f"cart/r{i}") for i in range(per)])
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


@pytest.mark.parametrize("text", ["create_order/a/b", "create_order a/b",
                                  "https://idemdash.example/keys/create_order/a%2Fb",
                                  "http://127.0.0.1:8000/keys/create_order/a/b"])
def test_scope_slash_key_and_a_pasted_key_address_are_understood(client, conn, text):
    insert_key(conn, "create_order", "a/b")
    insert_key(conn, "refund", "unrelated")
    body = _search(client, q=text)
    assert body["match"] == "exact"
    assert [(i["scope"], i["key"]) for i in body["items"]] == [("create_order", "a/b")]


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
    assert too_long.status_code == 400 and "longer than" in too_long.get_json()["error"]
    nul = client.get("/api/v1/search?q=" + quote("a\x00b"))
    assert nul.status_code == 400


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
