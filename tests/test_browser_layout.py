"""Layout in a real Chromium at 1440 px: the audit log's evidence opens into a column wide enough to read, and a
key of usual length (a UUID) is shown whole, not cut with '…'; at 390 px the opened evidence and the key page's
form stay inside the screen, and the form shows the fields of the outcome chosen, not of the one suggested."""

from __future__ import annotations

import uuid

import pytest

from tests.test_keys import insert_key

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
KEY = str(uuid.UUID("5f67913e-4ee1-459f-b3d4-e4e6f4789f3c"))


@pytest.fixture
def audited(make_app, live_server, conn):
    """An abandoned key with a UUID for its name, over an outbox row's evidence, and a note: two audit lines."""
    app = make_app()
    client = app.test_client()
    insert_key(conn, "create_order", KEY, claimed_by="worker-2")
    conn.execute(
        """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload)
                    VALUES ('order.created', 'order', '0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55', 'create_order', %s,
                            '{}')""",
        (KEY,),
    )
    done = client.post(
        "/api/v1/keys/reclassify",
        json={
            "scope": "create_order",
            "key": KEY,
            "to": "abandoned",
            "override_evidence": True,
            "reason": "INC-7: the outbox row is a test event written by the load test, not a real order",
        },
    )
    assert done.status_code == 200, done.get_json()
    note = client.post("/api/v1/keys/notes", json={"scope": "create_order", "key": KEY, "text": "INC-7: checked"})
    assert note.status_code == 201, note.get_json()
    return live_server(app)


_KEY_BOX = """el => ({text: el.textContent, sw: el.scrollWidth, cw: el.clientWidth, sh: el.scrollHeight,
                      ch: el.clientHeight, lines: Math.round(el.getBoundingClientRect().height /
                                                         parseFloat(getComputedStyle(el).lineHeight))})"""


def test_the_audit_evidence_opens_wide_and_a_uuid_key_is_whole_at_1440(chromium, audited):
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(audited + "/audit")
        rows = page.locator("#audit-panel tbody tr")
        assert rows.count() == 2
        for summary in page.locator("#audit-panel td.evidence details > summary").all():
            summary.click()
        for i in range(2):
            cell = rows.nth(i).locator("td.evidence")
            assert cell.locator("details[open] pre.json").count() >= 1
            width = cell.bounding_box()["width"]
            assert width >= 320, f"evidence column {width} px"
            # the evidence's JSON wraps inside its column: no line of it is cut or scrolls sideways
            for pre in cell.locator("pre.json").all():
                assert pre.evaluate("el => el.scrollWidth <= el.clientWidth"), pre.text_content()
            key = rows.nth(i).locator("td.keycell a.key").evaluate(_KEY_BOX)
            assert key["text"] == KEY
            assert key["sw"] <= key["cw"] and key["sh"] <= key["ch"], key  # nothing hidden, no '…'
            assert key["lines"] == 1, key
            # the actor's name (user@host) breaks after the @ if at all, not into pieces
            actor = (
                rows.nth(i)
                .locator("td.actor a")
                .evaluate(
                    "el => [el.textContent, new Set(Array.from(el.getClientRects(), r => Math.round(r.top))).size]"
                )
            )
            assert actor[0] == "anonymous@127.0.0.1" and actor[1] <= 2, actor  # at most user@ / host
        assert page.evaluate("document.scrollingElement.scrollWidth") <= DESKTOP["width"]
    finally:
        context.close()


def test_opened_evidence_and_the_reclassify_form_fit_a_phone(chromium, audited, conn):
    insert_key(conn, "create_order", "cart/1/checkout-0001")
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(audited + "/audit")
        for summary in page.locator("#audit-panel td.evidence details > summary").all():
            summary.click()
        assert page.locator("#audit-panel details[open]").count() == 2
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
        page.goto(audited + "/keys/create_order/cart/1/checkout-0001")
        for outcome in ("safe_to_retry", "abandoned", "already_succeeded", "needs_review"):
            page.locator(f"input[name=to][value={outcome}]").check()
            assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"], outcome
            # only the chosen outcome's own fields are open (not the suggestion's, after choosing another)
            opened = page.locator("form.reclassify details[data-for][open]").evaluate_all(
                "els => els.map(el => el.dataset.for)"
            )
            assert opened == ([outcome] if outcome in ("already_succeeded", "needs_review") else []), outcome
    finally:
        context.close()


_BOXES = """els => els.map(el => { const r = el.getBoundingClientRect();
                                 return {id: el.id, left: Math.round(r.left), top: Math.round(r.top),
                                         width: Math.round(r.width), bottom: Math.round(r.bottom)}; })"""


@pytest.fixture
def precomputed_overview(make_app, live_server, conn):
    """An overview whose failed and succeeded counts and inbox volume the scheduler precomputed (a note each)."""
    from psycopg.types.json import Jsonb

    from idemdash.queries import rollup_store
    from idemdash.queries.overview import InboxVolume, WindowCounts

    for name, row in (("key_windows", WindowCounts(192, 389, 389, 3110)), ("inbox_volume", InboxVolume(15334, 5))):
        conn.execute(
            "INSERT INTO idemdash.rollup (name, variant, computed_at, duration_ms, payload) "
            "VALUES (%s, '', now(), 11, %s)",
            (name, Jsonb(rollup_store.encode_rows([row]))),
        )
    return live_server(make_app())


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_the_overviews_card_grids_line_up_and_the_precomputed_notes_sit_below_them(
    chromium, precomputed_overview, viewport
):
    """ "computing it takes 11 ms" was a row inside the first card grid, between its cards and the next grid's."""
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    try:
        page.goto(precomputed_overview + "/")
        keys = page.locator("#overview section[aria-label='Idempotency keys'] > .card").evaluate_all(_BOXES)
        others = page.locator("#overview section[aria-label='Outbox and inbox'] > .card").evaluate_all(_BOXES)
        notes = page.locator("[data-precomputed]").evaluate_all(_BOXES)
        assert (len(keys), len(others), len(notes)) == (6, 3, 2)  # outbox, its likely poison, inbox
        if viewport is DESKTOP:
            assert len({k["top"] for k in keys}) == 1, keys  # the six key cards: one row
        else:
            assert len({c["left"] for c in keys + others}) == 1, keys + others  # one column
        # the second grid's cards sit in the first grid's columns, as wide
        for other, key in zip(others, keys[:3], strict=True):
            assert (other["left"], other["width"]) == (key["left"], key["width"]), (other, key)
        cards_end = max(c["bottom"] for c in keys + others)
        assert all(note["top"] >= cards_end for note in notes), (notes, cards_end)
        assert "computing it takes 11 ms" in page.locator("[data-precomputed]").first.text_content()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
    finally:
        context.close()


@pytest.mark.parametrize("url", ["/keys", "/keys?scope=create_order&min_attempts=2"], ids=["none", "filtered"])
def test_on_a_phone_the_stuck_list_is_on_the_first_screen_and_every_page_in_the_navigation_is_in_sight(
    chromium, live_server, make_app, conn, url
):
    """At 390 px the filter form filled the first screen, and the navigation was cut at "Outbo" with no sign that
    it scrolled."""
    for i in range(5):
        insert_key(conn, "create_order", f"{uuid.UUID(int=i)}", attempts=3)
        insert_key(conn, "refund", f"r-{i}", status="failed_final", locked_until=None)
    base = live_server(make_app())
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(base + url)
        first = page.locator("#keys-panel table.keys tbody tr").first.bounding_box()
        assert first["y"] + first["height"] <= PHONE["height"], first  # the first row, whole
        box = page.locator("#filters-box")
        assert box.evaluate("el => el.open") is False
        summary = " ".join(box.locator("summary").text_content().split())
        assert summary == ("Filters: scope = create_order, attempts ≥ 2" if "scope" in url else "Filters (none)")
        # every page of the navigation is on the screen: no row to scroll, nothing cut
        nav = page.locator('header nav[aria-label="Pages"]')
        assert nav.evaluate("el => el.scrollWidth <= el.clientWidth")
        for link in nav.locator("a").all():
            r = link.bounding_box()
            assert r["x"] >= 0 and r["x"] + r["width"] <= PHONE["width"], (link.text_content(), r)
        assert nav.locator("a").last.text_content() == "Tables"
        # "f" opens the folded form at its first field
        page.locator("h1").click()
        page.keyboard.press("f")
        assert box.evaluate("el => el.open") is True
        assert page.evaluate("document.activeElement.name") == "scope"
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    finally:
        context.close()
    wide = chromium.new_context(viewport=DESKTOP)
    page = wide.new_page()
    try:
        page.goto(base + url)
        assert page.locator("#filters-box").evaluate("el => el.open") is True  # on a wide screen, open
        assert page.locator("#filters input[name=scope]").is_visible()
        # a filter changed in place: the summary follows (swapped in out of band with the list)
        page.locator("#filters input[name=scope]").fill("refund")
        page.locator("#filters input[name=scope]").press("Enter")
        page.locator("#filters-summary", has_text="scope = refund").wait_for()
    finally:
        wide.close()
