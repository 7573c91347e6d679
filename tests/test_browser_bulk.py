"""Bulk reclassification the way an operator clicks it: filter the stuck list in place, preview, confirm."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key

pytestmark = pytest.mark.browser


def statuses(conn) -> dict[tuple[str, str], str]:
    return {
        (s, k): st
        for s, k, st in conn.execute(
            "SELECT idempotency_scope, idempotency_key, status::text FROM app.idempotency_request"
        )
    }


def test_filter_in_place_preview_confirm_changes_only_that_scope(live_server, page, conn):
    for scope in ("create_order", "refund"):
        for i in range(3):
            claim_key(conn, Tables(), scope, f"{scope}-{i}", "h", "api-1", lock_seconds=0)
    base = live_server()
    page.goto(base + "/keys?status=stuck")
    rows = page.locator("#keys-panel tbody tr")
    expect(rows).to_have_count(6)

    # the filter changes in place (htmx): the page itself, and the bulk box on it, are not reloaded
    page.locator("#filters input[name=scope]").fill("refund")
    page.locator("#filters input[name=scope]").press("Enter")
    expect(rows).to_have_count(3)
    expect(page).to_have_url(f"{base}/keys?status=stuck&scope=refund")

    page.locator("details.bulk summary").click()
    page.locator("details.bulk select[name=to]").select_option("abandoned")
    page.locator("details.bulk input[name=reason]").fill("INC-9: refunds double-submitted")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("#bulk-result")
    expect(preview.locator("[data-bulk-count]")).to_have_text("3")
    expect(preview.locator("[data-bulk-filter]")).to_contain_text("stuck keys in scope 'refund'")
    expect(preview.locator("table.by-scope tbody tr")).to_have_count(1)
    expect(preview.locator("input[name=all_scopes]")).to_have_count(0)  # one scope: no every-scope tick

    preview.get_by_role("button", name="Mark 3 keys").click()
    expect(page.locator("#bulk-result [data-bulk-changed]")).to_have_text("3")
    expect(page.locator("#bulk-result")).to_contain_text("stuck keys in scope 'refund'")
    # the list refreshed itself: the three are no longer stuck
    expect(page.locator("#keys-panel")).to_contain_text("No stuck keys match")

    after = statuses(conn)
    assert {k: v for k, v in after.items() if k[0] == "refund"} == {
        ("refund", f"refund-{i}"): "failed_final" for i in range(3)
    }
    assert {v for k, v in after.items() if k[0] == "create_order"} == {"processing"}


def test_a_preview_whose_filters_changed_on_screen_is_refused(live_server, page, conn, allowed_console_errors):
    allowed_console_errors += ["409", "CONFLICT"]
    for scope in ("create_order", "refund"):
        claim_key(conn, Tables(), scope, f"{scope}-0", "h", "api-1", lock_seconds=0)
    page.goto(live_server() + "/keys?status=stuck&scope=refund")
    page.locator("details.bulk summary").click()
    page.locator("details.bulk input[name=reason]").fill("x")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#bulk-result [data-bulk-count]")).to_have_text("1")

    # the operator widens the filter after previewing, then clicks the old preview's button
    page.locator("#filters input[name=scope]").fill("")
    page.locator("#filters input[name=scope]").press("Enter")
    expect(page.locator("#keys-panel tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Mark 1 key").click()
    error = page.locator("#bulk-result .flash.error")
    expect(error).to_contain_text("were the filters changed after the preview?")
    expect(error).to_contain_text("preview again")
    assert set(statuses(conn).values()) == {"processing"}


def test_every_scope_needs_the_explicit_tick(live_server, page, conn):
    for scope in ("create_order", "refund"):
        claim_key(conn, Tables(), scope, f"{scope}-0", "h", "api-1", lock_seconds=0)
    page.goto(live_server() + "/keys?status=stuck")
    page.locator("details.bulk summary").click()
    page.locator("details.bulk input[name=reason]").fill("x")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("#bulk-result")
    expect(preview.locator("[data-bulk-filter]")).to_contain_text("in every scope")
    tick = preview.locator("input[name=all_scopes]")
    expect(tick).to_have_count(1)
    preview.get_by_role("button", name="Mark 2 keys").click()  # the browser will not submit without the tick
    expect(preview.locator("[data-bulk-count]")).to_have_text("2")
    assert set(statuses(conn).values()) == {"processing"}
    tick.check()
    preview.get_by_role("button", name="Mark 2 keys").click()
    expect(page.locator("#bulk-result [data-bulk-changed]")).to_have_text("2")
    assert set(statuses(conn).values()) == {"failed_retryable"}
