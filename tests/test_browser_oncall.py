"""The on-call flows of issue 14 in a real Chromium: find a pasted key, switch state tabs in place, leave a note,
open a bulk action's keys, read a hostile outbox payload, and the keyboard, the clock and the copy buttons."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key
from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events, now_of
from tests.world import HOSTILE_PAYLOAD

pytestmark = pytest.mark.browser


def test_a_key_pasted_into_the_header_lands_on_its_page_whatever_its_scope(live_server, page, conn):
    insert_key(conn, "create_order", "decoy")
    insert_key(conn, "capture_payment", "pay/2026/77 ü", status="succeeded", locked_until=None)
    base = live_server()
    page.goto(base + "/outbox")
    page.keyboard.press("/")  # on every page, / goes to the search box
    search = page.locator("#header-search")
    expect(search).to_be_focused()
    search.fill("pay/2026/77 ü")
    search.press("Enter")
    expect(page.locator("h1 .mono")).to_have_text("pay/2026/77 ü")
    expect(page.locator("h1")).to_contain_text("capture_payment")
    expect(page.locator("main p .badge").first).to_have_text("succeeded")

    # several scopes: a list to choose from; none: says so
    insert_key(conn, "refund", "pay/2026/77 ü")
    page.locator("#header-search").fill("pay/2026/77 ü")
    page.locator("#header-search").press("Enter")
    expect(page.locator("table.search-results tbody tr")).to_have_count(2)
    page.locator("#header-search").fill("pay/2027")
    page.locator("#header-search").press("Enter")
    expect(page.locator("#results-title")).to_contain_text("No key")


def test_enter_in_a_filter_swaps_the_list_once(live_server, page, conn):
    """Enter in a filter field fires change and submit together, the same query twice: the second is not sent while
    the first is on its way, so the list is swapped once. Twice, a tab clicked between the two swaps was replaced
    before its answer came, and htmx dropped that answer (the tab stayed where it was)."""
    for i in range(3):
        insert_key(conn, "s", f"stuck-{i}")
    base = live_server()
    page.goto(base + "/keys?scope=s")
    page.evaluate(
        "window.__swaps = 0; window.__sent = 0;"
        "document.body.addEventListener('htmx:afterSwap', e => "
        "{ if (e.detail.elt.id === 'keys-panel') window.__swaps++; });"
        "document.body.addEventListener('htmx:beforeSend', e => "
        "{ if (e.detail.elt.id === 'filters') window.__sent++; });"
    )
    page.locator("#filters input[name=scope]").fill("nothing")
    page.locator("#filters input[name=scope]").press("Enter")
    expect(page.locator("#keys-panel")).to_contain_text("No stuck keys match")
    page.wait_for_timeout(500)  # a second answer, were there one, would have come by now (same server, no load)
    assert page.evaluate("window.__swaps") == 1
    assert page.evaluate("window.__sent") == 1
    # another query from the same form still goes, and is swapped in
    page.locator("#filters input[name=scope]").fill("s")
    page.locator("#filters input[name=scope]").press("Enter")
    expect(page.locator("#keys-panel tbody tr")).to_have_count(3)
    assert page.evaluate("window.__sent") == 2


def test_state_tabs_show_counts_and_switch_in_place(live_server, page, conn):
    for i in range(3):
        insert_key(conn, "s", f"stuck-{i}")
    for i in range(2):
        insert_key(conn, "s", f"done-{i}", status="succeeded", locked_until=None)
    insert_key(conn, "s", "held", claimed_by="idemdash:needs_review", locked_until=timedelta(hours=3))
    base = live_server()
    page.goto(base + "/keys?scope=s")
    tabs = page.locator("nav.tabs")
    expect(tabs.locator('[data-count="stuck"]')).to_have_text("3")
    expect(tabs.locator('[data-count="succeeded"]')).to_have_text("2")
    expect(tabs.locator('[data-count="needs_review"]')).to_have_text("1")
    expect(page.locator("details.bulk")).to_be_visible()
    page.evaluate("window.__same_page = true")  # gone if the page reloads

    tabs.locator('a[data-tab="succeeded"]').click()
    expect(page).to_have_url(f"{base}/keys?scope=s&status=succeeded")
    expect(page.locator("#keys-panel tbody tr")).to_have_count(2)
    expect(page.locator('nav.tabs a[aria-current="page"]')).to_have_attribute("data-tab", "succeeded")
    expect(page.locator("details.bulk")).to_be_hidden()  # bulk acts on stuck keys only
    assert page.evaluate("window.__same_page") is True

    # the filters go with the tab: a filter changed now keeps the succeeded state
    page.locator("#filters input[name=scope]").fill("nothing")
    page.locator("#filters input[name=scope]").press("Enter")
    expect(page).to_have_url(f"{base}/keys?status=succeeded&scope=nothing")
    expect(page.locator("#keys-panel")).to_contain_text("No succeeded keys match")

    tabs = page.locator("nav.tabs")
    # the tabs swapped in with the new filter (a click on the ones being replaced would be lost)
    expect(tabs.locator('a[data-tab="needs_review"]')).to_have_attribute(
        "href", "/keys?status=needs_review&scope=nothing"
    )
    tabs.locator('a[data-tab="needs_review"]').click()
    expect(page.locator('nav.tabs a[aria-current="page"]')).to_have_attribute("data-tab", "needs_review")
    expect(page).to_have_url(f"{base}/keys?status=needs_review&scope=nothing")
    page.go_back()
    expect(page).to_have_url(f"{base}/keys?status=succeeded&scope=nothing")
    assert page.evaluate("window.__same_page") is True


def test_a_note_on_a_key_shows_in_its_history_and_in_the_audit_log(live_server, page, conn):
    insert_key(conn, "create_order", "cart/9")
    base = live_server()
    page.goto(base + "/keys/create_order/cart/9")
    page.locator("a", has_text="History and notes").click()
    page.locator("textarea[name=text]").fill("INC-77: <b>payments</b> says the charge went through")
    page.get_by_role("button", name="Save note").click()
    expect(page.locator("[data-noted]")).to_contain_text("Note saved")
    note = page.locator("section.history tr[data-note]")
    expect(note).to_have_count(1)
    expect(note).to_contain_text("INC-77: <b>payments</b> says the charge went through")
    expect(note).to_contain_text("anonymous@127.0.0.1")

    page.goto(base + "/audit")
    line = page.locator("#audit-panel tbody tr").first
    expect(line.locator(".badge.note")).to_have_text("note")
    expect(line).to_contain_text("INC-77: <b>payments</b> says the charge went through")
    expect(line.locator("a.key")).to_have_text("cart/9")


def test_a_bulk_action_is_one_audit_line_that_opens_to_its_keys(live_server, page, conn, make_app):
    for i in range(4):
        claim_key(conn, Tables(), "refund", f"refund-{i}", "h", "api-1", lock_seconds=0)
    app = make_app()
    api, client = "/api/v1/keys/reclassify-bulk", app.test_client()
    preview = client.post(api, json={"filter": {"scope": "refund"}, "to": "abandoned", "preview": True}).get_json()
    done = client.post(
        api,
        json={"filter": {"scope": "refund"}, "to": "abandoned", "reason": "INC-8: refunds", "as_of": preview["as_of"]},
    ).get_json()
    assert done["changed"] == 4
    page.goto(live_server(app) + "/audit")
    lines = page.locator("#audit-panel table.audit > tbody > tr")
    expect(lines).to_have_count(1)
    line = lines.first
    expect(line).to_contain_text("reclassify-bulk:abandoned")
    expect(line).to_contain_text("INC-8: refunds")
    summary = line.locator("details.children summary")
    expect(summary).to_contain_text("4 keys changed of 4 previewed")
    summary.click()
    keys = line.locator("details.children .children-list a.key")
    expect(keys).to_have_count(4)
    expect(keys.first).to_have_text(re.compile(r"refund-\d"))


def test_an_outbox_row_page_renders_a_hostile_payload_inert(live_server, page, conn):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    insert_key(conn, "create_order", "k", status="succeeded", locked_until=None)
    row = Event(
        "order.created",
        "pending",
        now_of(conn) - timedelta(hours=1),
        attempt_count=6,
        scope="create_order",
        key="k",
        payload=HOSTILE_PAYLOAD,
    )
    insert_events(conn, [row])
    base = live_server()
    page.goto(base + "/outbox/poison")
    page.locator(f'a[href="/outbox/{row.outbox_id}"]').click()
    expect(page.locator("pre[data-payload]")).to_contain_text("</pre><script>window.pwned = 1</script><img src=x")
    expect(page.locator("[data-poison]")).to_contain_text("Delivery failed 6 times")
    page.wait_for_load_state("load")  # every element parsed, every image loaded or failed: its handlers have run
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("main img, main script").count() == 0
    assert dialogs == []
    page.locator("section a.key").click()
    expect(page.locator("h1 .mono")).to_have_text("k")


def test_keyboard_help_go_to_pages_and_walk_a_list(live_server, page, conn):
    for i in range(3):
        insert_key(conn, "s", f"key-{i}", locked_until=timedelta(minutes=-10 + i))
    base = live_server()
    page.goto(base + "/")
    page.keyboard.press("?")
    dialog = page.locator("dialog#shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Go to Outbox")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.keyboard.press("g")
    page.keyboard.press("k")
    expect(page).to_have_url(f"{base}/keys")
    page.wait_for_load_state()  # the shortcuts are the page's script: wait until it runs
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("tr.row-current a.key")).to_have_text("key-1")
    page.keyboard.press("k")
    expect(page.locator("tr.row-current a.key")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("h1 .mono")).to_have_text("key-0")
    page.wait_for_load_state()
    page.keyboard.press("f")  # the page's filter (none on a key page): nothing happens, nothing breaks
    page.keyboard.press("g")
    page.keyboard.press("x")
    expect(page).to_have_url(f"{base}/outbox")
    page.wait_for_load_state()
    page.keyboard.press("f")
    expect(page.locator("input[name=event_type]")).to_be_focused()


def test_times_tick_switch_to_local_and_stay_switched(live_server, chromium, conn):
    insert_key(conn, "s", "k", locked_until=timedelta(minutes=-3))
    context = chromium.new_context(timezone_id="Asia/Kolkata", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.clock.install()
        base = live_server()
        page.goto(base + "/keys/s/k")
        lease = page.locator("main p time[data-rel]").first
        expect(lease).to_have_text(re.compile(r"^3 min( \d+ s)? ago$"))
        expect(lease).to_have_attribute("title", re.compile(r" UTC$"))
        page.clock.run_for(120_000)
        expect(lease).to_have_text(re.compile(r"^5 min( \d+ s)? ago$"))  # ticks without a reload

        toggle = page.locator("#tz-toggle")
        expect(toggle).to_have_text("UTC")
        toggle.click()
        expect(toggle).to_have_text("Local time")
        expect(lease).to_have_attribute("title", re.compile(r"GMT\+5:30|IST"))
        page.goto(base + "/keys")
        expect(page.locator("#tz-toggle")).to_have_text("Local time")  # remembered
        expect(page.locator(".updated time")).to_have_text(re.compile(r"^\d\d:\d\d:\d\d (GMT\+5:30|IST)$"))
        page.keyboard.press("t")
        expect(page.locator(".updated time")).to_have_text(re.compile(r"^\d\d:\d\d:\d\d UTC$"))
    finally:
        context.close()


def test_copy_buttons_copy_the_key_the_sql_and_the_json(live_server, chromium, conn):
    insert_key(conn, "s", "copy me/1", status="succeeded", locked_until=None, response_body={"order": 7})
    context = chromium.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        base = live_server()
        page.goto(base + "/keys/s/copy me/1")
        page.locator("h1 button.copy").click()
        expect(page.locator("h1 button.copy")).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == "copy me/1"
        page.locator("button.copy-pre").first.click()
        assert '"order": 7' in page.evaluate("navigator.clipboard.readText()")
        page.goto(base + "/runbook/outbox-backlog")
        page.locator("button.copy-pre").first.click()
        assert page.evaluate("navigator.clipboard.readText()").startswith("SELECT event_type")
    finally:
        context.close()


def test_without_javascript_tabs_search_and_notes_still_work(live_server, chromium, conn):
    insert_key(conn, "s", "stuck-1")
    insert_key(conn, "refund", "done-1", status="succeeded", locked_until=None)
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        base = live_server()
        page.goto(base + "/keys")
        expect(page.locator("#tz-toggle")).to_be_hidden()  # what needs the script is not offered
        page.locator('nav.tabs a[data-tab="succeeded"]').click()  # a plain link: a whole page
        expect(page).to_have_url(f"{base}/keys?status=succeeded")
        expect(page.locator("#keys-panel a.key")).to_have_text("done-1")
        page.locator("#header-search").fill("done-1")
        page.locator("#header-search").press("Enter")
        expect(page.locator("h1 .mono")).to_have_text("done-1")
        expect(page.locator("h1 button.copy")).to_be_hidden()
        page.locator("textarea[name=text]").fill("read without a script")
        page.get_by_role("button", name="Save note").click()
        expect(page.locator("section.history tr[data-note]")).to_contain_text("read without a script")
        expect(page.locator("section.history time").first).to_have_text(re.compile(r"ago$"))
    finally:
        context.close()
