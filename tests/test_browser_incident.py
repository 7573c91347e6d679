"""The incident of tests/incident.py as an on-call engineer meets it in Chromium, at 1440 px and at 390 px: the
overview says where the stuck keys are and the rates show the deploy going wrong, one click lists api-3's stuck
keys, /workers puts api-3 first, the poison is parked in bulk from /outbox/poison and the overview marks it.
Each screen passes axe-core with no serious or critical finding (the phone in dark mode); screenshots go to
IDEMDASH_TEST_SHOTS (a folder)
when it is set, for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from idemdash.dashboard.targets import app_settings
from idemdash.jobs import snapshots
from idemdash.queries.target import Target
from tests.incident import BAD_SCOPE, BAD_WORKER, POISON_TYPE, stage_history, stage_traffic
from tests.test_browser_pages import PHONE, _axe_source, _serious

pytestmark = [pytest.mark.browser, pytest.mark.system]

WIDE = {"width": 1440, "height": 900}
SHOTS = os.environ.get("IDEMDASH_TEST_SHOTS")


def stage_an_hour_before(conn) -> None:
    """The hour the snapshot job recorded before the incident: steady claims and completions, then a deploy 10
    minutes ago after which completions fall, failures rise and stuck keys pile up; a purge 45 minutes ago."""
    conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h, rows_purged,
                        interval_seconds, claims, completions, failures)
                    SELECT now() - g * interval '1 minute' - interval '30 seconds',
                           CASE WHEN g > 10 THEN 2 ELSE 2 + (10 - g) * 4 END, 20, 3, 1, 150, 35 + g % 5, 4000,
                           CASE WHEN g = 45 THEN 12000 ELSE 0 END, 60,
                           140 + g % 7, CASE WHEN g > 10 THEN 137 + g % 5 ELSE 90 + g END,
                           CASE WHEN g > 10 THEN g % 3 ELSE 6 + (10 - g) END
                    FROM generate_series(1, 60) g""")
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted,
                        dry_run, outcome, started_by)
                    VALUES ('keys', now() - interval '45 minutes 40 seconds', now() - interval '45 minutes 30 seconds',
                            3, 12000, false, 'succeeded', 'scheduler')""")


@pytest.fixture
def incident(make_app, live_server, conn):
    app = make_app()
    stage_history(conn)
    stage_an_hour_before(conn)  # its newest snapshot 90 s ago: the next one counts the traffic since then
    stage_traffic(conn)
    snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    return live_server(app)


def shoot(page, name: str) -> None:
    """The whole page, and a tall one also in screens of 900 px (a person reads those at their size)."""
    if not SHOTS:
        return
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)
    width, height = page.evaluate("[document.documentElement.clientWidth, document.scrollingElement.scrollHeight]")
    for i, top in enumerate(range(0, height if height > 1800 else 0, 900)):
        page.screenshot(
            path=str(Path(SHOTS) / f"{name}-{i}.png"),
            full_page=True,
            clip={"x": 0, "y": top, "width": width, "height": min(900, height - top)},
        )


@pytest.mark.parametrize(("viewport", "scheme"), [(WIDE, "light"), (PHONE, "dark")], ids=["1440px", "390px"])
def test_the_incident_as_the_on_call_meets_it(chromium, incident, viewport, scheme):
    base, source, size = incident, _axe_source(), viewport["width"]
    # axe is injected as an inline script, which the dashboard's CSP refuses: this context bypasses it
    context = chromium.new_context(
        viewport=viewport, is_mobile=size < 500, has_touch=size < 500, bypass_csp=True, color_scheme=scheme
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    found: dict[str, list[dict]] = {}

    def look(name: str) -> None:
        assert page.evaluate("document.scrollingElement.scrollWidth") <= size, f"{name} scrolls sideways"
        found[name] = _serious(page, source)
        shoot(page, f"incident-{name}-{size}")

    try:
        # the overview: where, in words, and the rates going wrong since the deploy
        page.goto(base + "/?range=1h")
        where = page.locator("#stuck-where")
        where.wait_for()
        assert " ".join(where.inner_text().split()).startswith(
            f"49 stuck: 41 in {BAD_SCOPE}, 43 claimed by {BAD_WORKER}."
        )
        for key in ("claims", "completions", "failures"):
            assert page.locator(f"#trend-{key}_per_minute svg polyline").is_visible()
        purge = page.locator("#trend-rows_purged g.mark.purge title")
        assert "purge of keys: 12,000 rows deleted" in purge.text_content()
        look("overview")

        # one click: api-3's stuck keys
        page.locator("#stuck-where [data-top=worker]").click()
        page.wait_for_url("**/keys?status=stuck&claimed_by=api-3")
        page.locator("#breakdown-box").wait_for()
        assert page.locator("table.keys tbody tr, #keys-panel tbody tr").count() >= 40
        look("stuck-api-3")

        # who is alive: api-3 first
        page.goto(base + "/workers")
        assert page.locator("#workers tbody tr").first.get_attribute("data-worker") == BAD_WORKER
        look("workers")

        # the poison: previewed and parked in bulk, one event type
        page.goto(base + "/outbox/poison")
        look("poison")
        form = page.locator("form#outbox-bulk")
        if not form.is_visible():  # folded on a phone
            form.locator("xpath=ancestor::details[1]/summary").click()
        form.locator("input[name=event_type]").fill(POISON_TYPE)
        form.get_by_role("button", name="Preview").click()
        count = page.locator("[data-bulk-count]")
        count.wait_for()
        assert count.inner_text().strip() == "120"
        look("park-preview")
        confirm = page.locator("form.confirm")
        confirm.locator("[name=reason]").fill("INC-42: legacy.unroutable has no route")
        confirm.locator("button[type=submit]").click()
        changed = page.locator("[data-bulk-changed]")
        changed.wait_for()
        assert changed.inner_text().strip() == "120"

        # back on the overview: no poison left, and the park is marked on the charts and listed under them
        page.goto(base + "/?range=1h")
        assert page.locator('[data-metric="outbox_poison"]').inner_text().strip() == "0"
        action = page.locator("#trend-outbox_pending g.mark.action title")
        assert action.text_content().endswith("parked 120 outbox rows (bulk)")
        events = page.locator("#trend-events")
        assert events.locator("summary").inner_text().startswith("Marked on the charts: 1 operator action and 1 purge")
        events.locator("summary").click()
        listed = events.locator("li")
        assert listed.count() == 2 and listed.first.inner_text().endswith("parked 120 outbox rows (bulk)")
        look("overview-after")
    finally:
        context.close()
    bad = {name: v for name, v in found.items() if v}
    assert not bad, "\n".join(f"{name}: {v}" for name, v in bad.items())
    assert not errors, errors
