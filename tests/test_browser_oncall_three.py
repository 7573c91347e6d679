"""On-call round three in a real Chromium, each action clicked as an operator would: abandoned refused while an
outbox row shows the effect committed, then overridden on purpose; already_succeeded filled from the outbox row on the
shape of the scope's responses; a poison outbox row parked and released; a running purge cancelled; a search that
forgives
a pasted key; a stuck list narrowed to one suggested group."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key
from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events, now_of

pytestmark = pytest.mark.browser
T = Tables()
ORDER = "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55"


def outbox_row(conn, scope: str, key: str) -> None:
    conn.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope, "
        "idempotency_key, payload) VALUES ('order.created', 'order', %s, %s, %s, '{}')",
        (ORDER, scope, key),
    )


def test_abandoned_is_refused_with_the_outbox_row_named_then_overridden_on_purpose(
    live_server, page, conn, allowed_console_errors
):
    allowed_console_errors.append("409")
    claim_key(conn, T, "create_order", "cart/7", "h", "api-3", lock_seconds=0)
    outbox_row(conn, "create_order", "cart/7")
    page.goto(live_server() + "/keys/create_order/cart/7")
    page.locator("input[name=to][value=abandoned]").check()
    page.locator("textarea[name=reason]").fill("INC-51: customer gave up")
    page.get_by_role("button", name="Reclassify").click()
    expect(page.locator(".flash.error")).to_contain_text("order.created")
    # the refusal keeps what was typed, and the override is a deliberate second choice
    expect(page.locator("textarea[name=reason]")).to_have_value("INC-51: customer gave up")
    page.locator("input[name=to][value=abandoned]").check()
    page.locator("input[name=override_evidence]").check()
    page.locator("textarea[name=reason]").fill("INC-51: the outbox row is a test event")
    page.get_by_role("button", name="Reclassify").click()
    expect(page.locator("main p .badge")).to_have_text("failed_final")


def test_already_succeeded_from_the_outbox_row_on_the_scopes_shape(live_server, page, conn):
    claim_key(conn, T, "create_order", "done", "h", "api-1")
    complete_key(conn, T, "create_order", "done", "order", None, {"orderId": "o-1", "status": "created"}, attempt=1)
    claim_key(conn, T, "create_order", "cart/8", "h", "api-3", lock_seconds=0)
    outbox_row(conn, "create_order", "cart/8")
    page.goto(live_server() + "/keys/create_order/cart/8")
    expect(page.locator("input[name=result_ref_id]")).to_have_value(ORDER)
    expect(page.locator("input[name=result_ref_type]")).to_have_value("order")
    page.locator("input[name=to][value=already_succeeded]").check()
    # the other key's fields, with this key's own order id and a blank to fill in: never the other key's values
    page.get_by_role("button", name="Use this").click()
    body = page.locator("#response-body-input")
    expect(body).to_have_value(re.compile(rf'"orderId": "{ORDER}"'))
    expect(body).to_have_value(re.compile(r'"status": null'))
    body.fill(body.input_value().replace("null", '"created"'))
    page.locator("textarea[name=reason]").fill("INC-52: the order exists")
    page.get_by_role("button", name="Reclassify").click()
    expect(page.locator("main p .badge")).to_have_text("succeeded")
    expect(page.locator("#response-body")).to_contain_text(ORDER)
    expect(page.locator("#response-body")).not_to_contain_text("o-1")


def test_a_poison_row_is_parked_and_released_from_its_page(live_server, page, conn):
    now = now_of(conn)
    poison = Event("invoice.sent", "pending", now - timedelta(hours=2), attempt_count=9)
    insert_events(conn, [poison, Event("order.created", "pending", now - timedelta(seconds=5))])
    base = live_server()
    page.goto(base + "/outbox")
    expect(page.locator(f'tr[data-outbox-id="{poison.outbox_id}"] .badge.poison')).to_be_visible()
    page.locator(f'tr[data-outbox-id="{poison.outbox_id}"] a').first.click()
    page.locator("form.move textarea[name=reason]").fill("INC-53: payload fails the billing schema")
    page.get_by_role("button", name="Park").click()
    expect(page.locator("[data-done]")).to_contain_text("Parked")
    page.goto(base + "/outbox")
    expect(page.locator("#parked")).to_contain_text("INC-53: payload fails the billing schema")
    page.locator("#parked a").first.click()
    page.locator("form.move textarea[name=reason]").fill("schema fixed")
    page.get_by_role("button", name="Release").click()
    expect(page.locator("[data-done]")).to_contain_text("Released")


def test_a_running_purge_is_cancelled_from_the_purges_page(live_server, page, conn):
    run_id = conn.execute(
        "INSERT INTO idemdash.purge_run (table_name, started_by, batches, rows_deleted, dry_run) "
        "VALUES ('keys', 'scheduler', 40, 40000, false) RETURNING run_id"
    ).fetchone()[0]
    page.goto(live_server() + "/purges")
    page.get_by_role("button", name=f"Cancel run {run_id}").click()
    expect(page.locator(f'[data-running-run="{run_id}"] [data-cancelling]')).to_be_visible()
    asked = conn.execute("SELECT cancel_requested_by FROM idemdash.purge_run WHERE run_id = %s", (run_id,)).fetchone()
    assert asked[0].startswith("anonymous@")


def test_a_pasted_key_with_a_trailing_space_and_a_suggested_group(live_server, page, conn):
    insert_key(conn, "refund", "r-1", locked_until=timedelta(minutes=-10))
    insert_key(conn, "refund", "r-2", attempts=9, locked_until=timedelta(minutes=-10))
    base = live_server()
    page.goto(base + "/keys?status=stuck")
    page.locator("header input[name=q]").fill("r-1 ")
    page.locator("header input[name=q]").press("Enter")
    expect(page).to_have_url(f"{base}/keys/refund/r-1")
    page.goto(base + "/keys?status=stuck")
    page.locator('nav.suggestion-groups a[data-group="needs_review"]').click()
    expect(page).to_have_url(f"{base}/keys?status=stuck&suggested=needs_review")
    expect(page.locator("#keys-panel tbody tr")).to_have_count(1)
    expect(page.locator("p.matching")).to_contain_text("1 of 2 stuck match suggested needs_review")
