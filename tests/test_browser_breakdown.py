"""The key list's breakdown in a real Chromium: at 1440 px it sits open beside the list and a worker's name filters
the list in place (the form's field follows); at 390 px it is folded to its summary line, which names where the
keys are, the list's first row stays on the first screen, and a 15 s refresh keeps it as the operator left it. The
overview names the stuck keys' scope and worker at both widths. Screenshots in /tmp/breakdown/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_browser_layout import DESKTOP, PHONE
from tests.test_key_breakdown import stage_incident

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/breakdown")


@pytest.fixture
def incident(make_app, live_server, conn):
    stage_incident(conn)
    SHOTS.mkdir(parents=True, exist_ok=True)
    return live_server(make_app())


def test_at_1440_the_breakdown_is_open_and_a_worker_filters_the_list_in_place(chromium, incident):
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(incident + "/keys?status=stuck")
        box = page.locator("#breakdown-box")
        assert box.evaluate("el => el.open") is True
        assert page.locator("[data-breakdown=scope] a").first.get_attribute("data-name") == "capture_payment"
        page.screenshot(path=str(SHOTS / "keys-1440.png"), full_page=True)
        page.locator("[data-breakdown=worker] a[data-name=api-3]").click()
        page.locator("#filters-summary", has_text="claimed by = api-3").wait_for()
        assert page.url.endswith("claimed_by=api-3")
        assert page.locator("#filter-claimed-by").input_value() == "api-3"  # the form follows the link
        workers = page.locator("#keys-panel table.keys tbody tr td:nth-child(3)").all_text_contents()
        assert workers and {w.strip() for w in workers} == {"api-3"}
        assert page.locator("[data-breakdown=worker] a[aria-current]").get_attribute("data-name") == "api-3"
        page.screenshot(path=str(SHOTS / "keys-1440-api-3.png"), full_page=True)
        page.goto(incident + "/")
        where = " ".join(page.locator("#stuck-where").text_content().split())
        assert where.startswith("79 stuck: 41 in capture_payment, 43 claimed by api-3."), where
        page.screenshot(path=str(SHOTS / "overview-1440.png"))
        assert page.evaluate("document.scrollingElement.scrollWidth") <= DESKTOP["width"]
    finally:
        context.close()


def refresh(page) -> None:
    """The panel's 15 s refresh, now; returns once the new panel is in."""
    page.evaluate("document.getElementById('keys-panel').dataset.old = '1'; htmx.trigger('#keys-panel', 'refresh')")
    for _ in range(100):  # wait_for_function evaluates a string: the page's CSP refuses it
        page.wait_for_timeout(100)
        if page.evaluate("() => { const p = document.getElementById('keys-panel'); return !!p && !p.dataset.old; }"):
            break
    else:
        raise AssertionError("the panel was not refreshed")
    page.wait_for_timeout(100)


def test_at_390_the_breakdown_folds_and_the_list_stays_on_the_first_screen(chromium, incident):
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(incident + "/keys?status=stuck")
        box = page.locator("#breakdown-box")
        assert box.evaluate("el => el.open") is False
        summary = " ".join(box.locator("summary").text_content().split())
        assert summary == "Most in capture_payment (41 of 79), by api-3 (43)", summary
        first = page.locator("#keys-panel table.keys tbody tr").first.bounding_box()
        assert first["y"] + first["height"] <= PHONE["height"], first
        page.screenshot(path=str(SHOTS / "keys-390.png"))
        # a refresh swaps the panel in again: still folded; opened by the operator, still open after the next
        refresh(page)
        assert page.locator("#breakdown-box").evaluate("el => el.open") is False
        page.locator("#breakdown-box summary").click()
        refresh(page)
        assert page.locator("#breakdown-box").evaluate("el => el.open") is True
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
        page.screenshot(path=str(SHOTS / "keys-390-open.png"), full_page=True)
        page.goto(incident + "/")
        where = page.locator("#stuck-where").bounding_box()
        stuck, held = page.locator("#card-stuck").bounding_box(), page.locator("#card-needs-review").bounding_box()
        assert stuck["y"] + stuck["height"] <= where["y"] < held["y"], (stuck, where, held)  # under its card
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
        page.screenshot(path=str(SHOTS / "overview-390.png"), full_page=True)
    finally:
        context.close()


def test_a_filter_changed_again_while_the_first_answer_is_on_its_way_ends_with_the_last_filters_list(
    chromium, incident
):
    """The filters form sends a request on every change. A second change (api-1) made while the first request (api-3)
    is on its way must not be dropped (htmx queues the last one; an hx-sync of "drop" would lose it): the list ends
    as the form says, api-1's keys."""
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(incident + "/keys?status=stuck")
        page.locator("#filter-claimed-by").wait_for()  # the form is open on a wide screen

        # two changes in one task: the second comes while the first request is on its way
        page.evaluate(
            """() => { const field = document.getElementById('filter-claimed-by');
                for (const worker of ['api-3', 'api-1']) {
                  field.value = worker; field.dispatchEvent(new Event('change', {bubbles: true})); } }"""
        )
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(700)
        assert page.url.endswith("claimed_by=api-1"), page.url
        workers = page.locator("#keys-panel table.keys tbody tr td:nth-child(3)").all_text_contents()
        assert workers and {w.strip() for w in workers} == {"api-1"}, workers
    finally:
        context.close()
