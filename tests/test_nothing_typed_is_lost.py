"""Nothing an operator typed is lost to an outage: a form posted while the database is down answers 503 with what
was sent on the page and a button to send it again; the page never reloads itself (a reload is a GET, and the
POST-only URL would answer 405 with the text gone). htmx actions keep their form and offer to send it again."""

from __future__ import annotations

import time
import urllib.request

import psycopg
import pytest
from bs4 import BeautifulSoup
from playwright.sync_api import expect
from psycopg.conninfo import make_conninfo

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, create_app_schema
from idemdash.queries.migrate import migrate

pytestmark = pytest.mark.system


@pytest.fixture
def outage(own_server, make_app):
    """An app over a server of this test's own, with one stuck key s/k; stop() and start() the server."""
    url, stop, start = own_server
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, Tables())
        claim_key(conn, Tables(), "s", "k", "h", "w", lock_seconds=0)
    app = make_app(make_conninfo(url, connect_timeout=2))
    return url, app, stop, start


def wait_until_ready(base: str, seconds: float = 20) -> None:
    """Until /readyz says the database answers again (the server was started again)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(base + "/readyz", timeout=5).status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{base}/readyz did not answer 200 within {seconds} s")


def _notes(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT note FROM idemdash.triage_note ORDER BY note_id")]


def _form_fields(html: bytes, selector: str) -> dict[str, str]:
    form = BeautifulSoup(html, "html.parser").select_one(selector)
    return {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}


def test_a_note_posted_during_an_outage_comes_back_with_its_text_and_no_reload(outage):
    url, app, stop, start = outage
    client = app.test_client()
    fields = _form_fields(client.get("/keys/s/k").data, "form.note-form")
    stop()
    try:
        failed = client.post("/keys/notes", data=fields | {"text": "INC-9: payments says no charge"})
        assert failed.status_code == 503
        page = BeautifulSoup(failed.data, "html.parser")
        assert page.find("meta", attrs={"http-equiv": "refresh"}) is None  # no reload: it would GET a POST URL
        assert "Retry-After" not in failed.headers or failed.headers["Retry-After"]
        resend = page.select_one("[data-resend] form")
        assert resend["method"] == "post" and resend["action"] == "/keys/notes"
        assert resend.select_one("textarea[name=text]").get_text() == "INC-9: payments says no charge"
        assert {i["name"] for i in resend.select("input[type=hidden]")} >= {"scope", "key", "csrf_token"}
        assert "nothing was saved" in page.get_text()
        # a read during the outage still reloads itself
        read = BeautifulSoup(client.get("/keys/s/k").data, "html.parser")
        assert read.find("meta", attrs={"http-equiv": "refresh"}) is not None
    finally:
        start()
    sent = {i["name"]: i.get("value", "") for i in resend.select("input[type=hidden]")}
    sent["text"] = resend.select_one("textarea[name=text]").get_text()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and client.get("/readyz").status_code != 200:
        time.sleep(0.2)
    again = client.post("/keys/notes", data=sent)
    assert again.status_code == 303
    assert _notes(url) == ["INC-9: payments says no charge"]


def test_a_reclassification_posted_during_an_outage_keeps_its_reason_and_its_compare_and_set(outage):
    url, app, stop, start = outage
    client = app.test_client()
    fields = _form_fields(client.get("/keys/s/k").data, "form.reclassify")
    stop()
    try:
        failed = client.post("/keys/reclassify", data=fields | {"to": "abandoned", "reason": "INC-9: gave up"})
    finally:
        start()
    assert failed.status_code == 503
    resend = BeautifulSoup(failed.data, "html.parser").select_one("[data-resend] form")
    assert resend.select_one("textarea[name=reason]").get_text() == "INC-9: gave up"
    hidden = {i["name"]: i.get("value", "") for i in resend.select("input[type=hidden]")}
    assert hidden["to"] == "abandoned" and hidden["expected_attempt_count"] == fields["expected_attempt_count"]
    assert "expected_locked_until" in hidden


@pytest.mark.browser
def test_in_chromium_a_note_survives_the_outage_and_sends_again(outage, live_server, page, allowed_console_errors):
    url, app, stop, start = outage
    allowed_console_errors.append("503")
    base = live_server(app)
    page.goto(base + "/keys/s/k")
    page.locator("textarea[name=text]").fill("INC-10: typed at 3 a.m.")
    stop()
    try:
        page.get_by_role("button", name="Save note").click()
        expect(page.locator("[data-resend]")).to_be_visible()
        # the point of the test: time passes and the page stays as it is (no reload, no 405)
        page.wait_for_timeout(10_000)
        expect(page.locator("[data-resend] textarea[name=text]")).to_have_value("INC-10: typed at 3 a.m.")
        assert "405" not in page.title() and "Method Not Allowed" not in page.content()
    finally:
        start()
    wait_until_ready(base)
    page.get_by_role("button", name="Send again").click()
    expect(page.locator("[data-noted]")).to_contain_text("Note saved")
    assert _notes(url) == ["INC-10: typed at 3 a.m."]


@pytest.mark.browser
def test_in_chromium_an_htmx_action_that_fails_keeps_its_form_and_offers_to_send_again(
    outage, live_server, page, allowed_console_errors
):
    url, app, stop, start = outage
    allowed_console_errors.append("503")
    base = live_server(app)
    page.goto(base + "/keys?status=stuck&scope=s")
    page.locator("details.bulk summary").click()
    page.locator("details.bulk [name=reason]").fill("INC-11: worker w died")
    stop()
    try:
        page.locator("details.bulk button", has_text="Preview").click()
        banner = page.locator("#status-banner")
        expect(banner).to_contain_text("Not sent")
        expect(banner.locator("[data-banner-resend]")).to_be_visible()
        expect(page.locator("details.bulk [name=reason]")).to_have_value("INC-11: worker w died")
    finally:
        start()
    wait_until_ready(base)
    banner.locator("[data-banner-resend]").click()
    expect(page.locator("[data-bulk-count]")).to_have_text("1")
    expect(banner).to_be_hidden()
