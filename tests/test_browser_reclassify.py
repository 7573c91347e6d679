"""An operator reclassifies a stuck key from its page; it leaves the stuck list; /audit says who, what, why."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key

pytestmark = pytest.mark.browser


def test_operator_reclassifies_from_the_key_page(live_server, page, conn):
    for key in ("order/1", "order/2"):
        claim_key(conn, Tables(), "create_order", key, "h", "api-3", lock_seconds=0)
    base = live_server()
    page.goto(base + "/keys?status=stuck")
    rows = page.locator("#keys-panel tbody tr")
    expect(rows).to_have_count(2)

    page.locator("a.key", has_text="order/1").click()
    expect(page.locator("main")).to_contain_text("Suggested: safe_to_retry")
    page.locator("input[name=to][value=abandoned]").check()
    page.locator("textarea[name=reason]").fill("INC-42: customer cancelled, never retry")
    page.get_by_role("button", name="Reclassify").click()

    expect(page.locator(".flash.ok")).to_contain_text("Reclassified")
    expect(page.locator("section.history")).to_contain_text("INC-42: customer cancelled")
    expect(page.locator("main p .badge")).to_have_text("failed_final")

    page.goto(base + "/keys?status=stuck")
    expect(rows).to_have_count(1)
    expect(page.locator("#keys-panel")).not_to_contain_text("order/1")

    page.goto(base + "/audit")
    entry = page.locator("main table tbody tr").first
    expect(entry).to_contain_text("order/1")
    expect(entry).to_contain_text("reclassify:abandoned")
    expect(entry).to_contain_text("INC-42: customer cancelled, never retry")
    expect(entry).to_contain_text("anonymous@127.0.0.1")  # AUTH=none: the actor is the client address
