"""Triage notes on a key: `POST /api/v1/keys/notes` and the key page's form; each note is in the key's history and
in /audit, written in the same statement as its audit row."""

from __future__ import annotations

import threading

import psycopg
from bs4 import BeautifulSoup

from tests.test_auth import OPERATOR_HEADERS, VIEWER_HEADERS
from tests.test_keys import insert_key

API = "/api/v1/keys/notes"


def _rows(conn):
    notes = conn.execute("SELECT scope, key, author, note FROM idemdash.triage_note ORDER BY note_id").fetchall()
    audit = conn.execute(
        "SELECT actor, action, scope, key, reason, detail FROM idemdash.audit_log ORDER BY audit_id"
    ).fetchall()
    return notes, audit


def test_a_note_is_stored_with_its_audit_row_and_shows_in_history_and_audit(client, conn):
    insert_key(conn, "create_order", "cart/42 x")
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "cart/42 x",
            "text": "  INC-7: orders table has no row; waiting for payments  ",
        },
    )
    assert response.status_code == 201, response.get_json()
    note = response.get_json()
    assert (note["scope"], note["key"], note["text"]) == (
        "create_order",
        "cart/42 x",
        "INC-7: orders table has no row; waiting for payments",
    )
    assert note["author"] == "anonymous@127.0.0.1" and note["at"] and note["audit_id"]
    notes, audit = _rows(conn)
    assert notes == [
        ("create_order", "cart/42 x", "anonymous@127.0.0.1", "INC-7: orders table has no row; waiting for payments")
    ]
    assert audit == [
        (
            "anonymous@127.0.0.1",
            "note",
            "create_order",
            "cart/42 x",
            "INC-7: orders table has no row; waiting for payments",
            {"note_id": note["note_id"]},
        )
    ]

    detail = client.get("/api/v1/keys/create_order/cart/42 x").get_json()
    assert [n["text"] for n in detail["notes"]] == ["INC-7: orders table has no row; waiting for payments"]
    assert [(a["action"], a["reason"]) for a in detail["audit"]] == [
        ("note", "INC-7: orders table has no row; waiting for payments")
    ]

    page = BeautifulSoup(client.get("/keys/create_order/cart/42 x").data, "html.parser")
    row = page.select_one("section.history tr[data-note]")
    assert "INC-7: orders table has no row" in row.get_text() and "anonymous@127.0.0.1" in row.get_text()

    log = BeautifulSoup(client.get("/audit?action=note").data, "html.parser")
    (line,) = log.select("#audit-panel tbody tr")
    assert "INC-7: orders table has no row" in line.get_text() and line.select_one(".badge.note")
    assert client.get("/api/v1/audit?action=reclassify").get_json()["items"] == []


def test_the_key_page_form_writes_a_note_and_comes_back_to_the_history(client, conn):
    insert_key(conn, "refund", "r-1", status="succeeded")
    form = BeautifulSoup(client.get("/keys/refund/r-1").data, "html.parser").select_one("form.note-form")
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    assert (fields["scope"], fields["key"]) == ("refund", "r-1")
    response = client.post(form["action"], data=fields | {"text": "<b>checked</b> the ledger"})
    assert response.status_code == 303
    assert response.headers["Location"].endswith("#history")
    page = client.get(response.headers["Location"])
    soup = BeautifulSoup(page.data, "html.parser")
    assert soup.select_one("[data-noted]") is not None
    assert "<b>checked</b> the ledger" in soup.select_one("section.history tr[data-note]").get_text()  # as text
    assert "<b>checked</b>" not in page.get_data(as_text=True)


def test_bad_notes_are_refused_and_nothing_is_written(client, conn):
    insert_key(conn, "s", "k")
    for body, status, words in (
        ({"scope": "s", "key": "k", "text": "   "}, 400, "text is required: it must say something"),
        ({"scope": "s", "key": "k", "text": "x", "author": "mallory"}, 400, "author is not a field"),
        ({"scope": "s", "key": "k"}, 400, "text is required"),
        ({"scope": "s", "text": "x"}, 400, "key is required"),
        ({"scope": "s", "key": "k", "text": "x" * 4001}, 400, "at most 4000"),
        ({"scope": "s", "key": "k", "text": 7}, 400, "must be a string"),
        (["not", "an", "object"], 400, "JSON object"),
        ({"scope": "s", "key": "nope", "text": "x"}, 404, "needs a key that exists"),
    ):
        response = client.post(API, json=body)
        assert response.status_code == status, (body, response.get_json())
        assert words in response.get_json()["error"], (body, response.get_json())
    assert client.post(API, data="text=x").status_code == 415
    assert _rows(conn) == ([], [])


def test_viewers_read_only_mode_and_other_origins_cannot_write_notes(make_app, conn):
    insert_key(conn, "s", "k")
    body = {"scope": "s", "key": "k", "text": "x"}
    proxied = make_app(AUTH="proxy").test_client()
    viewer = proxied.post(API, json=body, headers=VIEWER_HEADERS)
    assert viewer.status_code == 403 and "viewer" in viewer.get_json()["error"]
    cross = proxied.post(API, json=body, headers=OPERATOR_HEADERS | {"Origin": "https://evil.example"})
    assert cross.status_code == 403
    read_only = make_app(READ_ONLY=True).test_client()
    assert read_only.post(API, json=body).status_code == 403
    page = BeautifulSoup(read_only.get("/keys/s/k").data, "html.parser")
    assert page.select_one("form.note-form") is None
    assert _rows(conn) == ([], [])
    operator = proxied.post(API, json=body, headers=OPERATOR_HEADERS)
    assert operator.status_code == 201 and operator.get_json()["author"] == "alice@example.com"


def test_a_note_and_its_audit_row_commit_together(client, conn, database_url):
    """While another transaction holds the audit log's lock, the note waits and then fails as a whole (lock
    timeout: 409): neither row is left behind."""
    insert_key(conn, "s", "k")
    locked, release = threading.Event(), threading.Event()

    def hold():
        with psycopg.connect(database_url) as other:
            other.execute("LOCK TABLE idemdash.audit_log IN EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(5)
        response = client.post(API, json={"scope": "s", "key": "k", "text": "blocked"})
    finally:
        release.set()
        holder.join(10)
    assert response.status_code == 409
    assert _rows(conn) == ([], [])
    assert client.post(API, json={"scope": "s", "key": "k", "text": "after"}).status_code == 201
    assert [n[3] for n in _rows(conn)[0]] == ["after"]
