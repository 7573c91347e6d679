"""/workers in a real Chromium: the window tabs swap the panel in place and push the URL, a number leads to its
keys, the navigation reaches it by its shortcut, and a phone-width page does not scroll sideways."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.test_workers import EXPECTED, seed

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("IDEMDASH_SCREENSHOTS")  # a directory: keep screenshots to look at


def test_window_tabs_swap_the_panel_and_a_number_opens_its_keys(live_server, page, conn):
    seed(conn)
    base = live_server()
    page.goto(base + "/")
    page.wait_for_load_state()  # the shortcuts are the page's script: wait until it runs
    page.keyboard.press("g")
    page.keyboard.press("w")
    expect(page).to_have_url(f"{base}/workers")
    rows = page.locator("#workers tbody tr")
    expect(rows).to_have_count(len(EXPECTED["1h"]))
    page.wait_for_load_state("networkidle")

    page.locator('#workers-panel nav.tabs a[data-tab="7d"]').click()
    expect(page).to_have_url(f"{base}/workers?window=7d")
    expect(rows).to_have_count(len(EXPECTED["7d"]))
    expect(page.locator('#workers tr[data-worker="w-old"] [data-col="failed"]')).to_contain_text("1")
    assert page.locator("header.topbar").count() == 1  # only the panel was swapped
    expect(page.locator("#workers-panel")).to_have_attribute("hx-get", "/workers?window=7d")
    page.go_back()
    expect(page).to_have_url(f"{base}/workers")
    expect(rows).to_have_count(len(EXPECTED["1h"]))

    if SHOTS:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                page.screenshot(path=str(Path(SHOTS) / f"workers-{width}-{scheme}.png"), full_page=True)
        page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})

    page.locator('#workers tr[data-worker="w-stuck-2"] [data-col="stuck"] a').click()
    expect(page).to_have_url(f"{base}/keys?status=stuck&claimed_by=w-stuck-2")
    expect(page.locator("table.keys tbody tr")).to_have_count(2)


def test_the_search_box_finds_a_worker_whose_keys_all_succeeded(live_server, page, conn):
    seed(conn)
    base = live_server()
    page.goto(base + "/workers")
    page.locator("#header-search").fill("w-done")
    page.locator("#header-search").press("Enter")
    exact = page.locator("[data-worker-exact]")
    expect(exact).to_contain_text("Worker w-done")
    if SHOTS:
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=str(Path(SHOTS) / "search-worker-390.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})
    exact.get_by_role("link", name="succeeded").click()
    expect(page).to_have_url(f"{base}/keys?status=succeeded&claimed_by=w-done")
    expect(page.locator("table.keys tbody tr")).to_have_count(3)
