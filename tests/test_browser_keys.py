"""The on-call flow in a real Chromium: stuck list, filter, open a key, come back."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.test_keys import insert_key

pytestmark = pytest.mark.browser


def test_filter_open_key_and_back_keeps_the_filter(live_server, page, conn):
    for i in range(3):
        insert_key(conn, "create_order", f"order-{i}")
        insert_key(conn, "refund", f"refund {i}/x")
    base = live_server()
    page.goto(base + "/keys?status=stuck")
    rows = page.locator("#keys-panel tbody tr")
    expect(rows).to_have_count(6)

    # "f" focuses the filter ("/" the header search); typing a scope and pressing Enter swaps the table and pushes
    # the URL
    page.keyboard.press("f")
    expect(page.locator("#filters input[name=scope]")).to_be_focused()
    page.keyboard.type("refund")
    page.keyboard.press("Enter")
    expect(rows).to_have_count(3)
    expect(page).to_have_url(f"{base}/keys?status=stuck&scope=refund")
    assert page.locator("header.topbar").count() == 1  # the fragment replaced the table only

    page.locator("a.key", has_text="refund 1/x").click()
    expect(page.locator("h1 .mono")).to_have_text("refund 1/x")
    expect(page.locator("main")).to_contain_text("Suggested: safe_to_retry")

    page.go_back()
    expect(page).to_have_url(f"{base}/keys?status=stuck&scope=refund")
    expect(page.locator("#filters input[name=scope]")).to_have_value("refund")
    expect(rows).to_have_count(3)
    expect(page.locator("#keys-panel")).not_to_contain_text("order-")


def test_live_toggle_pauses_polling(live_server, page, conn):
    insert_key(conn, "s", "first")
    page.goto(live_server() + "/keys?status=stuck")
    rows = page.locator("#keys-panel tbody tr")
    expect(rows).to_have_count(1)
    page.locator("#live-toggle").uncheck()
    insert_key(conn, "s", "second")
    # htmx asks before every request (htmx:beforeRequest, synchronously on the trigger): <body> records the answers
    page.evaluate("""() => { document.addEventListener("htmx:beforeRequest", (e) => {
        const answer = e.defaultPrevented ? "refused" : "sent";
        document.body.dataset.requests = (document.body.dataset.requests || "") + answer; }); }""")
    page.locator("#keys-panel").dispatch_event("refresh")
    expect(page.locator("body")).to_have_attribute("data-requests", "refused")  # paused: the refresh was not sent
    expect(rows).to_have_count(1)
    page.locator("#live-toggle").check()  # switching Live back on refreshes at once
    expect(rows).to_have_count(2)
