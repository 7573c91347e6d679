"""/purges in a real Chromium: dry run first, then purge now; the history shows what was deleted."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.test_purges_page import add_inbox, count

pytestmark = pytest.mark.browser


def test_operator_dry_runs_then_purges_the_inbox(live_server, page, conn):
    add_inbox(conn, old=9, recent=5)
    base = live_server()
    page.goto(base + "/purges")
    card = page.locator('article[data-table="inbox"]')
    expect(card.locator('button[data-action="purge"]')).to_have_count(0)

    card.locator('button[data-action="dry-run"]').click()
    # the POST answers with the panel (htmx); the dry run finishes and the next refresh shows its count
    expect(page.locator("[data-message]")).to_contain_text("Dry run of inbox")
    expect(card.locator("[data-dry-count]")).to_have_text("9", timeout=15_000)
    assert count(conn, "processed_message") == 14  # counted, nothing deleted

    card.locator('button[data-action="purge"]').click()
    expect(page.locator("[data-message]")).to_contain_text("Purge of inbox")
    finished = page.locator('table.purge-history tbody tr[data-outcome="succeeded"]', has_text="purge")
    expect(finished.first).to_be_visible(timeout=15_000)
    expect(finished.first.locator("[data-rows]")).to_have_text("9")
    expect(card.locator("[data-last-success]")).to_contain_text("9 deleted")
    expect(card.locator('button[data-action="purge"]')).to_have_count(0)  # the dry run is used up
    assert count(conn, "processed_message") == 5
    # the panel was swapped in place: still one page, one panel
    assert page.locator("header.topbar").count() == 1
    assert page.locator("#purges-panel").count() == 1
