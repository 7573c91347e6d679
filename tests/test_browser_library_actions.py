"""A Wolverine database whose LIBRARY_ACTIONS enables both of its library's actions, in a real Chromium, the way an
operator works: from the overview to a stuck envelope owned by a dead node, released to any node with a reason;
then a dead letter, replayed; both in the audit log."""

from __future__ import annotations

import psycopg
import pytest
from playwright.sync_api import expect

from tests.test_library_actions import BOTH, LETTER, NODE_DEAD, ORPHAN, seed_wolverine

pytestmark = pytest.mark.browser


def test_an_operator_releases_a_dead_nodes_envelope_and_replays_a_dead_letter(
    live_server, make_app, page, empty_database_url
):
    wolverine = seed_wolverine(empty_database_url)
    base = live_server(make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH))
    page.goto(base + "/")
    expect(page.locator("header")).to_contain_text("wolverine · release-dead-node, replay-dead-letter")
    # the stuck incoming envelope: owned by node 7, which wolverine_nodes no longer lists
    page.locator("#card-inbox-stuck").click()  # the overview's stuck card of its inbox
    page.locator("table.library-rows tbody tr a", has_text=ORPHAN).click()
    release = page.locator("section[data-action=release-dead-node]")
    expect(release).to_contain_text(f"owner_id = {NODE_DEAD}")
    release.locator("textarea[name=reason]").fill("INC-88: node 7 was terminated")
    release.locator("input[name=confirm]").check()
    release.get_by_role("button", name="Release to any node").click()
    expect(page.locator("[data-done]")).to_be_visible()
    expect(page.locator("table.row-columns tr", has_text="owner_id")).to_contain_text("0")
    expect(page.locator("section[data-action]")).to_have_count(0)
    with psycopg.connect(wolverine) as conn:
        assert conn.execute(
            f"SELECT owner_id FROM wolverine.wolverine_incoming_envelopes WHERE id = '{ORPHAN}'"
        ).fetchone() == (0,)
    # a dead letter, replayed
    page.locator("p.breadcrumb a", has_text="Tables").click()
    page.locator("tr[data-role=dead_letters] td[data-meaning='failed'] a").click()
    page.locator("table.library-rows tbody tr a", has_text=LETTER).click()
    replay = page.locator("section[data-action=replay-dead-letter]")
    replay.locator("textarea[name=reason]").fill("consumer fixed in 4.2.1")
    replay.locator("input[name=confirm]").check()
    replay.get_by_role("button", name="Replay").click()
    expect(page.locator("[data-done]")).to_be_visible()
    expect(page.locator("table.row-columns tr", has_text="replayable")).to_contain_text("true")
    # both in the audit log, each linking back to its row
    page.locator("[data-done] a", has_text="audit log").click()
    expect(page.locator("table.audit tbody tr")).to_have_count(2)
    expect(page.locator("table.audit")).to_contain_text("library:replay-dead-letter")
    expect(page.locator("table.audit")).to_contain_text("INC-88: node 7 was terminated")
