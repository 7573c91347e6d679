"""Hotspots and suppression in a real Chromium: the filter swaps the table, pushes the URL, breaks no CSP rule."""
from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from tests.test_suppression import Key, _now, insert

pytestmark = pytest.mark.browser


def test_suppression_window_select_swaps_the_table_and_pushes_the_url(live_server, page, conn):
    now = _now(conn)
    insert(conn, [Key("create_order", "recent", "succeeded", 1, now - timedelta(minutes=20)),
                  Key("create_order", "today", "succeeded", 3, now - timedelta(hours=5)),
                  Key("refund", "this-week", "failed_final", 2, now - timedelta(days=3))])
    base = live_server()
    page.goto(base + "/suppression?window=24h")
    keys_total = page.locator('#totals [data-col="keys"]')
    expect(keys_total).to_have_text("2")
    expect(page.locator("#suppression-table tbody tr")).to_have_count(1)

    page.locator("select[name=window]").select_option("7d")
    expect(page).to_have_url(f"{base}/suppression?window=7d")
    expect(keys_total).to_have_text("3")
    expect(page.locator('#suppression-table tbody tr[data-scope="refund"] [data-col="retried"]')).to_have_text("1")
    expect(page.locator("#window-note")).to_contain_text("7 days")
    assert page.locator("header.topbar").count() == 1  # only the panel was swapped
    assert page.locator("#suppression-panel").count() == 1

    page.locator("select[name=window]").select_option("1h")
    expect(page).to_have_url(f"{base}/suppression?window=1h")
    expect(keys_total).to_have_text("1")
    # the polling panel now asks for the new window
    expect(page.locator("#suppression-panel")).to_have_attribute("hx-get", "/suppression?window=1h")

    page.go_back()
    expect(page).to_have_url(f"{base}/suppression?window=7d")
    expect(keys_total).to_have_text("3")
    expect(page.locator("select[name=window]")).to_have_value("7d")


def test_hotspots_filter_and_histogram_bars(live_server, page, conn):
    from tests.test_hotspots import Key as HotKey
    from tests.test_hotspots import insert as insert_hot

    now = _now(conn)
    insert_hot(conn, [HotKey("create_order", f"k-{i}", "processing", "api-1", attempts, now - timedelta(hours=1),
                             now - timedelta(minutes=30), now - timedelta(seconds=i))
                      for i, attempts in enumerate([1, 1, 1, 2, 6, 8, 25])])
    base = live_server()
    page.goto(base + "/hotspots")
    top = page.locator("#top-keys tbody tr")
    expect(top).to_have_count(3)
    # the bars are SVG rects sized by attribute (no inline style under the CSP) and actually drawn
    full = page.locator('#histogram tr[data-bucket="1"] svg rect')
    assert full.bounding_box()["width"] > 100
    assert page.locator('#histogram tr[data-bucket="20+"] svg rect').bounding_box()["width"] < full.bounding_box()["width"]

    page.keyboard.press("f")
    expect(page.locator("input[name=min_attempts]")).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("2")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{base}/hotspots?min_attempts=2")
    expect(top).to_have_count(4)
    expect(page.locator('#by-scope tr[data-scope="create_order"] [data-col="stuck"]')).to_have_text("4")
    assert page.locator("header.topbar").count() == 1
