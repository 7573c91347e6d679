"""Hotspots and suppression in a real Chromium: the filter swaps the table, pushes the URL, breaks no CSP rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from tests.test_suppression import Key, _now, insert

pytestmark = pytest.mark.browser


def test_suppression_window_select_swaps_the_table_and_pushes_the_url(live_server, page, conn):
    now = _now(conn)
    insert(
        conn,
        [
            Key("create_order", "recent", "succeeded", 1, now - timedelta(minutes=20)),
            Key("create_order", "today", "succeeded", 3, now - timedelta(hours=5)),
            Key("refund", "this-week", "failed_final", 2, now - timedelta(days=3)),
        ],
    )
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
    insert_hot(
        conn,
        [
            HotKey(
                "create_order",
                f"k-{i}",
                "processing",
                "api-1",
                attempts,
                now - timedelta(hours=1),
                now - timedelta(minutes=30),
                now - timedelta(seconds=i),
            )
            for i, attempts in enumerate([1, 1, 1, 2, 6, 8, 25])
        ],
    )
    base = live_server()
    page.goto(base + "/hotspots")
    top = page.locator("#top-keys tbody tr")
    expect(top).to_have_count(3)
    # the bars are SVG rects sized by attribute (no inline style under the CSP) and actually drawn
    full = page.locator('#histogram tr[data-bucket="1"] svg rect')
    assert full.bounding_box()["width"] > 100
    most = page.locator('#histogram tr[data-bucket="20+"] svg rect')
    assert most.bounding_box()["width"] < full.bounding_box()["width"]

    page.keyboard.press("f")
    expect(page.locator("input[name=min_attempts]")).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("2")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{base}/hotspots?min_attempts=2")
    expect(top).to_have_count(4)
    expect(page.locator('#by-scope tr[data-scope="create_order"] [data-col="stuck"]')).to_have_text("4")
    assert page.locator("header.topbar").count() == 1


SHOTS = __import__("os").environ.get("IDEMDASH_SCREENSHOTS")  # a directory: keep screenshots to look at


def test_hotspot_window_tabs_swap_the_panel_and_keep_the_threshold(live_server, page, conn):
    from tests.test_hotspots import Key as HotKey
    from tests.test_hotspots import insert as insert_hot

    now = _now(conn)
    # one hot key per age: 10 minutes, 2 hours, 3 days, 20 days since its last change
    ages = {
        "fresh": timedelta(minutes=10),
        "two-hours": timedelta(hours=2),
        "three-days": timedelta(days=3),
        "last-month": timedelta(days=20),
    }
    insert_hot(
        conn,
        [
            HotKey(scope, f"{scope}-{i}", "failed_retryable", f"worker-{i}", 6 + i, now - age, None, now - age)
            for i, (scope, age) in enumerate(ages.items())
        ],
    )
    base = live_server()
    page.goto(base + "/hotspots?min_attempts=6")
    rows = page.locator("#by-scope tbody tr")
    headline = page.locator("h1")
    expect(headline).to_have_text("Retry hotspots in the last 24 hours")
    expect(rows).to_have_count(2)

    page.locator('nav.tabs a[data-tab="7d"]').click()
    expect(page).to_have_url(f"{base}/hotspots?window=7d&min_attempts=6")
    expect(rows).to_have_count(3)
    expect(headline).to_have_text("Retry hotspots in the last 7 days")  # swapped in out of band
    expect(page.locator("#hotspots-panel")).to_have_attribute("hx-get", "/hotspots?window=7d&min_attempts=6")
    assert page.locator("header.topbar").count() == 1 and page.locator("h1").count() == 1

    # the threshold form keeps the window
    page.locator("input[name=min_attempts]").fill("7")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{base}/hotspots?window=7d&min_attempts=7")
    expect(rows).to_have_count(2)  # three-days (8 attempts) and two-hours (7)
    expect(page.locator('nav.tabs a[data-tab="1h"]')).to_have_attribute("href", "/hotspots?window=1h&min_attempts=7")
    # the links outside the panel follow it
    expect(page.locator("#json-link")).to_have_attribute("href", "/api/v1/hotspots?min_attempts=7&window=7d")
    expect(page.locator("#back-default a")).to_have_attribute("href", "/hotspots?window=7d")
    # Enter sent the form twice (change, then submit): let both answers land before the panel is swapped again
    page.wait_for_load_state("networkidle")

    page.locator('nav.tabs a[data-tab="1h"]').click()
    expect(page).to_have_url(f"{base}/hotspots?window=1h&min_attempts=7")
    expect(page.locator("#hotspots-panel p.empty").first).to_contain_text("No key changed in the last hour")
    page.go_back()
    expect(page).to_have_url(f"{base}/hotspots?window=7d&min_attempts=7")
    expect(rows).to_have_count(2)

    if SHOTS:
        from pathlib import Path

        page.goto(base + "/hotspots?window=all&min_attempts=6")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                page.screenshot(path=str(Path(SHOTS) / f"hotspots-{width}-{scheme}.png"), full_page=True)
    # no tab row pushes a phone-width page sideways
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base + "/hotspots?window=all&min_attempts=6")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
