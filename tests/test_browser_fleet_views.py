"""The all-databases page's fleet views in a real headless Chromium: a filter changes the table in place (no reload,
the address keeping it), and a key searched on the page is found across every database."""

from __future__ import annotations

import psycopg
import pytest
from playwright.sync_api import expect

from tests.test_keys import insert_key

pytestmark = pytest.mark.browser


def test_a_filter_changes_the_table_in_place_and_a_key_is_found_across_the_fleet(
    pg_templates, clone_of, make_app, live_server, page, tmp_path
):
    urls = {name: clone_of(pg_templates["enum"]) for name in ("alpha", "bravo", "carol")}
    for name in ("alpha", "carol"):
        with psycopg.connect(urls[name], autocommit=True) as conn:
            insert_key(conn, "orders", "order-4471")
    environments = {"alpha": "prod", "bravo": "staging", "carol": "prod"}
    config = tmp_path / "three.toml"
    config.write_text(
        "".join(f'[databases.{n}]\nurl = "{u}"\nenvironment = "{environments[n]}"\n\n' for n, u in urls.items()),
        encoding="utf-8",
    )
    app = make_app(CONFIG=str(config), FLEET_REFRESH_SECONDS=3600)
    app.extensions["idemdash_overview"].ask_all_now()
    base = live_server(app)

    page.goto(base + "/databases")
    page.evaluate("window.notReloaded = true")
    rows = page.locator("#databases-panel tbody tr")
    # worst first: the two with a stuck key, then bravo
    expect(rows).to_have_count(3)
    assert [r.get_attribute("data-database") for r in rows.all()] == ["alpha", "carol", "bravo"]
    expect(page.locator('tr[data-database="alpha"] [data-attention]')).to_contain_text("stuck keys")

    page.locator("#filters select[name=environment]").select_option("staging")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-database", "bravo")
    expect(page).to_have_url(base + "/databases?environment=staging")
    page.locator("#filters input[name=attention]").check()
    expect(rows).to_have_count(0)
    expect(page.locator("[data-shown]")).to_contain_text("0 of 3 databases (filtered)")

    page.locator("#fleet-search input[name=q]").fill("order-4471")
    page.locator("#fleet-search button[type=submit]").click()
    held = page.locator("#fleet-search-results [data-held-by]")
    expect(held).to_have_count(2)
    assert [h.get_attribute("data-held-by") for h in held.all()] == ["alpha", "carol"]
    expect(page.locator("#fleet-search-results [role=status]")).to_contain_text("held by 2 databases, not by 1")
    assert page.evaluate("window.notReloaded") is True  # the filters and the search changed the page in place
    page.locator('[data-held-by="carol"] a', has_text="key orders/order-4471").click()
    expect(page).to_have_url(base + "/db/carol/keys/orders/order-4471")
