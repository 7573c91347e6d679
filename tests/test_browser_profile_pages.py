"""/workers and /hotspots of a Wolverine database in a real Chromium: its owners and its rows tried most, the
threshold swapping the panel in place, and a phone-width page that does not scroll sideways."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests import library_ddl as ddl
from tests.test_profile_dimension_pages import WOLVERINE_ROWS, _database

pytestmark = [pytest.mark.browser, pytest.mark.system]
SHOTS = os.environ.get("IDEMDASH_SCREENSHOTS")  # a directory: keep screenshots to look at


def _shots(page, name: str) -> None:
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        if SHOTS:
            page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
        if width == 390:
            assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, name
    page.set_viewport_size({"width": 1280, "height": 900})


def test_wolverine_workers_and_hotspots_in_a_browser(live_server, make_app, page, empty_database_url):
    _database(empty_database_url, "wolverine", [ddl.WOLVERINE], WOLVERINE_ROWS)
    base = live_server(make_app(empty_database_url, PROFILE="wolverine", DEFAULT_LEASE_SECONDS=300))
    page.goto(base + "/workers")
    rows = page.locator("#workers tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator('#workers tr[data-worker="7"] [data-col="stuck"]')).to_have_text("2")
    _shots(page, "wolverine-workers")
    # Wolverine records no time of a row's change: no window to choose
    expect(page.locator("#workers-panel nav.tabs")).to_have_count(0)

    page.goto(base + "/hotspots?min_attempts=5")
    expect(page.locator("#top-rows-inbox tbody tr")).to_have_count(4)
    expect(page.locator("[data-not-recorded]").first).to_contain_text("not recorded by Wolverine")
    _shots(page, "wolverine-hotspots")
    page.locator('input[name="min_attempts"]').fill("7")
    page.locator('#filters button[type="submit"]').click()
    expect(page).to_have_url(f"{base}/hotspots?min_attempts=7")
    expect(page.locator("#top-rows-inbox tbody tr")).to_have_count(2)
    assert page.locator("header.topbar").count() == 1  # only the panel was swapped
    # typing then pressing the button is a change and a submit: htmx queues the second request behind the first,
    # which can still be on its way when the list shows; wait for it before the test's database goes
    page.wait_for_load_state("networkidle")
