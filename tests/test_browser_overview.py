"""The overview in a real headless Chromium: numbers, live refresh, no CSP violations."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _add_stuck_key(conn, key: str) -> None:
    conn.execute(
        """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        claimed_by, claimed_at, locked_until, expires_at)
                    VALUES ('create_order', %s, 'h', 'processing', 'api-1', now() - interval '1 hour',
                            now() - interval '50 minutes', now() + interval '1 day')""",
        (key,),
    )


def test_overview_refreshes_itself_in_the_browser(live_server, page, conn):
    _add_stuck_key(conn, "first")
    base = live_server()
    page.goto(base + "/")
    stuck = page.locator('[data-metric="stuck"]')
    assert stuck.inner_text() == "1"
    assert page.locator("#card-stuck.alert").count() == 1

    _add_stuck_key(conn, "second")
    # the panel polls every 10 s; the 'refresh' event is the same request without the wait
    page.locator("[data-poll]").dispatch_event("refresh")
    expect(stuck).to_have_text("2", timeout=5000)
    # the fragment replaced the panel's content, not the whole page inside itself
    assert page.locator("header.topbar").count() == 1
    assert page.locator("#overview").count() == 1
