"""Every page in a real Chromium: nothing scrolls sideways on a 390 px phone, and axe-core finds no serious or
critical accessibility violation (WCAG AA contrast included) in light or dark mode.

axe-core comes from the npm registry, installed for the tests by CI (.ci/run) and by hand with
``npm install --no-save --prefix tests/.axe axe-core@<the version .ci/run names>`` (README). Missing, the test fails: it is not skipped.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests import world

pytestmark = pytest.mark.browser

AXE = Path(os.environ.get("IDEMDASH_TEST_AXE",
                          Path(__file__).parent / ".axe" / "node_modules" / "axe-core" / "axe.min.js"))
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
    .slice(0, 5).map(el => el.tagName.toLowerCase() + '.' + el.className + ': ' + (el.textContent || '').slice(0, 80))"""


def _axe_source() -> str:
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed at {AXE}: run `npm install --no-save --prefix tests/.axe "
                    f"axe-core@{AXE_VERSION}` (CI's .ci/run does), or point IDEMDASH_TEST_AXE at axe.min.js",
                    pytrace=False)
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
            phone = url in found   # the second visit of a page: at phone width
            page.set_viewport_size(PHONE if phone else {"width": 1280, "height": 900})
            page.goto(base + url)
            page.add_script_tag(content=source)
            violations = page.evaluate("""async () => {
                const result = await axe.run(document, {resultTypes: ['violations']});
                return result.violations
                    .filter(v => v.impact === 'serious' || v.impact === 'critical')
                    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                                nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)}));
            }""")
            if violations:
                found[url + (" (phone)" if phone else "")] = violations
            else:
                found.setdefault(url, [])
    finally:
        context.close()
    bad = {url: v for url, v in found.items() if v}
    assert not bad, f"{scheme} mode: " + "\n".join(f"{url}: {v}" for url, v in bad.items())
