"""Every page in a real Chromium: nothing scrolls sideways on a 390 px phone, and axe-core finds no serious or
critical accessibility violation (WCAG AA contrast included) in light or dark mode.

axe-core comes from the npm registry, installed for the tests by CI (.ci/run), by the first of these tests to need it
where npm is on the PATH (so the README's test command passes on a fresh machine with npm), or by hand with
``npm install --no-save --prefix tests/.axe axe-core@<the version .ci/run names>`` (docs/development.md). Missing, the
test fails: it is not skipped.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests import npm_packages, world

pytestmark = pytest.mark.browser

AXE = Path(
    os.environ.get("IDEMDASH_TEST_AXE", Path(__file__).parent / ".axe" / "node_modules" / "axe-core" / "axe.min.js")
)
PHONE = {"width": 390, "height": 844}
# the version CI installs (.ci/run), for the message when it is missing
AXE_VERSION = re.search(r"axe-core@(\S+)", (Path(__file__).parent.parent / ".ci" / "run").read_text()).group(1)


@pytest.fixture
def site(make_app, live_server, conn):
    app = make_app()
    seeded = world.seed(conn, app.test_client())
    return live_server(app), world.page_urls(app, seeded)


def test_no_page_scrolls_sideways_on_a_phone(chromium, site, allowed_console_errors):
    base, urls = site
    assert len(urls) >= 25
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    wide = {}
    try:
        for url in urls:
            response = page.goto(base + url)
            assert response is not None and response.status == 200, url
            page.wait_for_load_state("load")
            width = page.evaluate("document.scrollingElement.scrollWidth")
            if width > PHONE["width"]:
                wide[url] = (width, page.evaluate(_WIDEST))
        # the header folds up: the search box shares the first row with the name, the page links scroll in theirs
        box = page.locator("#header-search").bounding_box()
        assert box is not None and box["width"] > 200 and box["x"] + box["width"] <= PHONE["width"]
        assert page.locator("header.topbar").bounding_box()["height"] < 180
    finally:
        context.close()
    assert not wide, f"pages wider than {PHONE['width']} px: {wide}"
    assert not errors, errors


# what sticks out, to say in the failure (elements inside a box that scrolls on its own do not count)
_WIDEST = """() => Array.from(document.querySelectorAll('main *, header *'))
    .filter(el => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .filter(el => !el.parentElement.closest('table.data, nav, pre'))
    .slice(0, 5)
    .map(el => el.tagName.toLowerCase() + '.' + el.className + ': ' + (el.textContent || '').slice(0, 80))"""


def _axe_source() -> str:
    if not AXE.is_file() and "IDEMDASH_TEST_AXE" not in os.environ and shutil.which("npm"):
        npm_packages.install(".axe", [f"axe-core@{AXE_VERSION}"], marker="axe-core/axe.min.js")
    if not AXE.is_file():
        pytest.fail(
            f"axe-core is not installed at {AXE}: run `npm install --no-save --prefix tests/.axe "
            f"axe-core@{AXE_VERSION}` (CI's .ci/run does), or point IDEMDASH_TEST_AXE at axe.min.js",
            pytrace=False,
        )
    return AXE.read_text(encoding="utf-8")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_serious_violation_on_any_page(chromium, site, scheme):
    source = _axe_source()
    base, urls = site
    # axe is injected as an inline script, which the dashboard's CSP (rightly) refuses: this context bypasses it
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True)
    page = context.new_page()
    found = {}
    try:
        for url in urls + [u for u in urls if u.startswith(("/keys", "/search", "/outbox/"))][:4]:
            phone = url in found  # the second visit of a page: at phone width
            page.set_viewport_size(PHONE if phone else {"width": 1280, "height": 900})
            page.goto(base + url)
            violations = _serious(page, source)
            if violations:
                found[url + (" (phone)" if phone else "")] = violations
            else:
                found.setdefault(url, [])
    finally:
        context.close()
    bad = {url: v for url, v in found.items() if v}
    assert not bad, f"{scheme} mode: " + "\n".join(f"{url}: {v}" for url, v in bad.items())


def _serious(page, source: str) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now."""
    page.add_script_tag(content=source)
    return page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations
            .filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => ({id: v.id, impact: v.impact, help: v.help,
                        nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)}));
    }""")


def _open_evidence(page):
    for summary in page.locator("#audit-panel td.evidence details > summary").all():
        summary.click()
    page.locator("#audit-panel details.children > summary").first.click()
    page.locator("#audit-panel details.children table.audit").wait_for()


def _bulk_preview(page):
    page.locator("details.bulk summary").click()
    page.locator("details.bulk select[name=to]").select_option("abandoned")
    page.locator("details.bulk input[name=reason]").fill("INC-9: refunds double-submitted")
    page.get_by_role("button", name="Preview").click()
    page.locator("#bulk-result [data-bulk-count]").wait_for()


def _bulk_confirmed(page):
    _bulk_preview(page)
    page.locator("#bulk-result button[type=submit]").click()
    page.locator("#bulk-result [data-bulk-changed]").wait_for()


def _choose(outcome):
    def choose(page):
        page.locator(f"input[name=to][value={outcome}]").check()
        if outcome == "abandoned":
            page.locator("input[name=override_evidence]").check()

    return choose


def _note_during_an_outage(page):
    """The error page with what was sent and its Send again button (the app's database does not answer)."""
    page.evaluate("""() => {
        const form = document.createElement('form');
        form.method = 'post';
        form.action = '/keys/notes';
        const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
        for (const [name, value] of [['scope', 'create_order'], ['key', 'cart/0/checkout-0000'],
                                     ['text', 'INC-9: typed at 3 a.m.'], ['csrf_token', token]]) {
            const input = document.createElement('input');
            input.type = 'hidden'; input.name = name; input.value = value;
            form.append(input);
        }
        document.body.append(form);
        form.submit();
    }""")
    page.locator("[data-resend] textarea[name=text]").wait_for()


# what a page shows only once something is clicked: (where, what to do, which app)
STATES = [
    ("/audit", _open_evidence, "site"),
    ("/keys?status=stuck&scope=refund", _bulk_preview, "site"),
    *[
        ("/keys/create_order/cart/0/checkout-0000", _choose(o), "site")
        for o in ("safe_to_retry", "abandoned", "already_succeeded", "needs_review")
    ],
    ("/keys/create_order/cart/0/checkout-0000", _note_during_an_outage, "down"),
    ("/keys?status=stuck&scope=refund", _bulk_confirmed, "site"),  # last: it changes the keys
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_what_opens_on_a_page_fits_a_phone_and_passes_axe(chromium, site, make_app, live_server, scheme):
    """Opened evidence, the bulk preview and its result, the key form for each outcome, the error page that offers
    to send again: no serious or critical axe violation at 1440 px nor at 390 px, nothing wider than a phone."""
    source = _axe_source()
    base, _ = site
    # an app whose database does not answer: every read is a 503 page, a POST one that offers to send again
    down = live_server(make_app("postgresql://idemdash@127.0.0.1:1/down?connect_timeout=1"))
    found, wide = {}, {}
    for url, act, app in STATES:
        for name, viewport in (("desktop", {"width": 1440, "height": 900}), ("phone", PHONE)):
            context = chromium.new_context(
                viewport=viewport, color_scheme=scheme, bypass_csp=True, is_mobile=name == "phone"
            )
            page = context.new_page()
            try:
                page.goto((base if app == "site" else down) + url)
                act(page)
                where = f"{url} {act.__qualname__} ({name})"
                violations = _serious(page, source)
                if violations:
                    found[where] = violations
                width = page.evaluate("document.scrollingElement.scrollWidth")
                if width > viewport["width"]:
                    wide[where] = (width, page.evaluate(_WIDEST))
            finally:
                context.close()
            if act is _bulk_confirmed:
                break  # once: the keys it changed are no longer stuck
    assert not found, f"{scheme} mode: " + "\n".join(f"{url}: {v}" for url, v in found.items())
    assert not wide, f"wider than the screen: {wide}"
