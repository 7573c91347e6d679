"""The audit log in a real Chromium: filter in place, follow a key, and nothing breaks the CSP."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from tests.test_audit_page import BASE, insert_audit
from tests.test_keys import insert_key

pytestmark = pytest.mark.browser


def test_filter_the_audit_log_in_place(live_server, page, conn):
    insert_key(conn, "refund", "refund 7/x")
    insert_audit(conn, at=BASE, actor="alice", scope="create_order", key="order-1", reason="worker OOM")
    insert_audit(
        conn,
        at=BASE - timedelta(minutes=1),
        actor="bob",
        scope="refund",
        key="refund 7/x",
        action="reclassify:abandoned",
        to_status="failed_final",
        reason="<b>customer gave up</b>",
    )
    base = live_server()
    page.goto(base + "/audit")
    rows = page.locator("#audit-panel tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#audit-panel")).to_contain_text("<b>customer gave up</b>")  # shown as text

    page.keyboard.press("f")
    expect(page.locator("#filters input[name=scope]")).to_be_focused()
    page.keyboard.type("refund")
    page.keyboard.press("Enter")
    expect(rows).to_have_count(1)
    expect(page).to_have_url(f"{base}/audit?scope=refund")
    assert page.locator("header.topbar").count() == 1  # only the panel was swapped

    page.locator("#audit-panel a.key", has_text="refund 7/x").click()
    expect(page.locator("h1 .mono")).to_have_text("refund 7/x")
    page.go_back()
    expect(page).to_have_url(f"{base}/audit?scope=refund")
    expect(page.locator("#filters input[name=scope]")).to_have_value("refund")
    expect(rows).to_have_count(1)
