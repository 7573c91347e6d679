"""The outbox in a real Chromium: filter by event type, open the key a row was written under, come back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events, now_of

pytestmark = pytest.mark.browser


def test_filter_open_key_and_back_keeps_the_filter(live_server, page, conn):
    now = now_of(conn)
    events = []
    for i in range(3):
        insert_key(conn, "create_order", f"order-{i}")
        insert_key(conn, "refund", f"refund {i}/x")
        events.append(
            Event("order.created", "pending", now - timedelta(minutes=10 + i), scope="create_order", key=f"order-{i}")
        )
        events.append(
            Event(
                "refund.issued",
                "pending",
                now - timedelta(minutes=20 + i),
                scope="refund",
                key=f"refund {i}/x",
                payload={"note": "<b>not bold</b>"},
            )
        )
    insert_events(conn, events)
    base = live_server()
    page.goto(base + "/outbox")
    rows = page.locator('#outbox-panel table[data-rows="list"] tbody tr')
    expect(rows).to_have_count(6)

    # "f" focuses the event-type filter; Enter swaps the panel through htmx and pushes the URL
    page.keyboard.press("f")
    expect(page.locator("input[name=event_type]")).to_be_focused()
    page.keyboard.type("refund.issued")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{base}/outbox?status=pending&event_type=refund.issued")
    expect(rows).to_have_count(3)
    for i in range(3):
        expect(rows.nth(i)).to_have_attribute("data-event-type", "refund.issued")
    expect(page.locator("#outbox-panel")).not_to_contain_text("order-")
    assert page.locator("header.topbar").count() == 1  # the fragment replaced the panel only
    assert page.locator("#outbox-panel").count() == 1

    # the payload opens in place, as text
    first = rows.first
    first.locator("details summary").click()
    expect(first.locator("pre.json")).to_contain_text('"note": "<b>not bold</b>"')
    # the periodic refresh swaps the panel but leaves an opened payload open
    # wait for htmx to settle a new panel in place of the one on screen now (marked stale); the page's CSP
    # forbids eval, so the listener leaves a mark on <body> for expect() rather than a wait_for_function
    page.evaluate("""() => { document.getElementById("outbox-panel").dataset.stale = "1";
        document.addEventListener("htmx:afterSettle", (e) => {
            const fresh = e.target.id === "outbox-panel" && !e.target.dataset.stale;
            if (fresh) document.body.dataset.settled = "1"; }); }""")
    page.locator("#outbox-panel").dispatch_event("refresh")
    expect(page.locator("body")).to_have_attribute("data-settled", "1")
    expect(page.locator("#outbox-panel").locator("details[open] pre.json")).to_have_count(1)
    expect(rows).to_have_count(3)

    page.locator('table[data-rows="list"] a.key', has_text="refund 1/x").click()
    expect(page.locator("h1 .mono")).to_have_text("refund 1/x")

    page.go_back()
    expect(page).to_have_url(f"{base}/outbox?status=pending&event_type=refund.issued")
    expect(page.locator("input[name=event_type]")).to_have_value("refund.issued")
    expect(rows).to_have_count(3)
    expect(page.locator("#outbox-panel")).not_to_contain_text("order-")


def test_status_select_swaps_the_list(live_server, page, conn):
    now = now_of(conn)
    insert_events(
        conn,
        [
            Event("order.created", "pending", now - timedelta(minutes=1)),
            Event("order.created", "published", now - timedelta(minutes=2), published_at=now),
            Event("order.created", "published", now - timedelta(minutes=3), published_at=now),
        ],
    )
    base = live_server()
    page.goto(base + "/outbox")
    rows = page.locator('#outbox-panel table[data-rows="list"] tbody tr')
    expect(rows).to_have_count(1)
    page.locator("select[name=status]").select_option("published")
    expect(page).to_have_url(f"{base}/outbox?status=published")
    expect(rows).to_have_count(2)
    expect(page.locator("#rows h2")).to_contain_text("newest first")
