"""The all-databases page in a real headless Chromium: it opens at once with rows still waiting for their first
answer, and fills them in as the background refresh gets them, without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.fleet import LIVE, HungHost, make_fleet

pytestmark = pytest.mark.browser


@pytest.fixture
def fleet(pg_templates, clone_of, tmp_path):
    hung_host = HungHost()
    yield make_fleet(pg_templates["enum"], clone_of, tmp_path, hung_host)
    hung_host.close()


def test_the_page_shows_pending_rows_and_fills_them_in_without_a_reload(fleet, make_app, live_server, page):
    # one thread, and the hung host first in the file: it holds that thread for its 2 s connect deadline, so the
    # live databases are still waiting for their first ask when the page opens
    base = live_server(make_app(CONFIG=fleet["config"], FLEET_REFRESH_THREADS=1, FLEET_REFRESH_SECONDS=60))
    page.goto(base + "/databases")
    page.evaluate("window.notReloaded = true")
    live = page.locator('tr[data-database="live2"]')
    expect(live).to_have_attribute("data-pending", "")
    expect(live.locator('[role="status"]')).to_have_text("not asked yet")

    # htmx polls the table every second while a row is pending: the numbers arrive in place
    expect(live.locator('[data-metric="stuck"]')).to_have_text("3", timeout=15000)
    expect(page.locator("tr[data-pending]")).to_have_count(0, timeout=15000)
    expect(page.locator('tr[data-database="hung"]')).to_contain_text("within the connect timeout")
    expect(page.locator('tr[data-database="refusing"]')).to_contain_text("connection refused")
    for i in range(LIVE):
        expect(page.locator(f'tr[data-database="live{i}"] [data-age]')).to_contain_text("ago")
    assert page.evaluate("window.notReloaded") is True  # filled in by htmx, not by reloading the page
    expect(page.locator("#databases-panel")).to_have_attribute("hx-trigger", "every 15s, refresh")
