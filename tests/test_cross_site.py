"""A request from another site: a real HTTP server, a browser's session cookie and a good CSRF token, and an
``Origin`` (or only a ``Referer``) of another site. It is refused with 403 and changes nothing."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from urllib.parse import urlencode

import pytest
from bs4 import BeautifulSoup

from tests.test_keys import insert_key

EVIL = "http://evil.example"


def _notes(conn) -> int:
    return conn.execute("SELECT count(*) FROM idemdash.triage_note").fetchone()[0]


def test_a_form_post_from_another_site_is_refused_and_changes_nothing(make_app, live_server, conn):
    insert_key(conn, "refund", "order-7")
    base = live_server(make_app())
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with browser.open(base + "/keys/refund/order-7") as answer:  # every answer closed: its socket with it
        page = BeautifulSoup(answer.read(), "html.parser")
    token = json.loads(page.body["hx-headers"])["X-CSRFToken"]
    form = urlencode({"scope": "refund", "key": "order-7", "text": "from evil", "csrf_token": token}).encode()

    for headers in ({"Origin": EVIL}, {"Referer": EVIL + "/attack.html"}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            browser.open(urllib.request.Request(base + "/keys/notes", data=form, headers=headers, method="POST"))
        with refused.value:
            text = BeautifulSoup(refused.value.read(), "html.parser").get_text()
        assert refused.value.code == 403 and "another site" in text and EVIL in text, text
    with pytest.raises(urllib.error.HTTPError) as api:
        body = json.dumps({"scope": "refund", "key": "order-7", "text": "from evil"}).encode()
        browser.open(
            urllib.request.Request(
                base + "/api/v1/keys/notes",
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "Referer": EVIL + "/attack.html"},
            )
        )
    with api.value:
        assert api.value.code == 403 and "another site" in json.load(api.value)["error"]
    assert _notes(conn) == 0

    # the same form from the dashboard's own page is taken
    with browser.open(
        urllib.request.Request(base + "/keys/notes", data=form, headers={"Origin": base}, method="POST")
    ) as own:
        assert own.status == 200 and _notes(conn) == 1
