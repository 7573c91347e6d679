"""/purges in a real Chromium: dry run first, then purge now; the history shows what was deleted."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import expect

from idemdash.queries import Tables
from idemdash.queries.app_schema import create_time_partitions
from tests.test_purges_page import add_inbox, count

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("IDEMDASH_SCREENSHOTS")  # a directory: keep a screenshot of the page to look at


def test_operator_dry_runs_then_purges_the_inbox(live_server, page, conn):
    add_inbox(conn, old=9, recent=5)
    base = live_server()
    page.goto(base + "/purges")
    card = page.locator('article[data-table="inbox"]')
    expect(card.locator('button[data-action="purge"]')).to_have_count(0)

    card.locator('button[data-action="dry-run"]').click()
    # the POST answers with the panel (htmx); the dry run finishes and the next refresh shows its count
    expect(page.locator("[data-message]")).to_contain_text("Dry run of inbox")
    expect(card.locator("[data-dry-count]")).to_have_text("9", timeout=15_000)
    assert count(conn, "processed_message") == 14  # counted, nothing deleted

    card.locator('button[data-action="purge"]').click()
    expect(page.locator("[data-message]")).to_contain_text("Purge of inbox")
    finished = page.locator('table.purge-history tbody tr[data-outcome="succeeded"]', has_text="purge")
    expect(finished.first).to_be_visible(timeout=15_000)
    expect(finished.first.locator("[data-rows]")).to_have_text("9")
    expect(card.locator("[data-last-success]")).to_contain_text("9 deleted")
    expect(card.locator('button[data-action="purge"]')).to_have_count(0)  # the dry run is used up
    assert count(conn, "processed_message") == 5
    # the panel was swapped in place: still one page, one panel
    assert page.locator("header.topbar").count() == 1
    assert page.locator("#purges-panel").count() == 1


def test_operator_purges_a_partitioned_inbox_and_sees_the_partitions_dropped_whole(
    live_server, make_app, page, partitioned_url
):
    """Dry run, then purge, on the partitioned reference inbox: the dry run lists the day it would drop with its
    rows, the purge drops it whole, and the history unfolds the partitions under the run."""
    with psycopg.connect(partitioned_url, autocommit=True) as conn:
        now = datetime.now(timezone.utc)
        create_time_partitions(conn, Tables(), "inbox", now - timedelta(days=40), now)
        conn.execute(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
            " SELECT 'c', 'm' || g, 'h', now() - interval '35 days' FROM generate_series(1, 12) g"
        )
        conn.execute(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
            " SELECT 'c', 'new' || g, 'h', now() - interval '1 day' FROM generate_series(1, 3) g"
        )
        day = conn.execute(
            "SELECT tableoid::regclass::text FROM app.processed_message WHERE message_id = 'm1'"
        ).fetchone()[0]
    page.goto(live_server(make_app(partitioned_url)) + "/purges")
    card = page.locator('article[data-table="inbox"]')
    card.locator('button[data-action="dry-run"]').click()
    expect(card.locator("[data-dry-count]")).to_have_text("12", timeout=15_000)
    dry = page.locator("tr.partitions").first
    expect(dry.locator("summary")).to_contain_text("would be dropped whole (12 rows)")
    dry.locator("summary").click()
    expect(dry.locator(f'li[data-partition="{day}"]')).to_contain_text("would be dropped, 12 rows")

    card.locator('button[data-action="purge"]').click()
    finished = page.locator('table.purge-history tbody tr[data-outcome="succeeded"]', has_text="purge")
    expect(finished.first.locator("[data-rows]")).to_have_text("12", timeout=15_000)
    expect(card.locator("[data-last-success]")).to_contain_text("12 deleted")
    expect(card.locator("[data-last-success]")).to_contain_text("dropped whole")
    dropped = page.locator("tr.partitions").first
    expect(dropped.locator("summary")).to_contain_text("dropped whole (12 rows)")
    dropped.locator("summary").click()
    expect(dropped.locator(f'li[data-partition="{day}"][data-action="dropped"]')).to_contain_text(
        "partition dropped, 12 rows"
    )
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "purges-partitions.png"), full_page=True)
    with psycopg.connect(partitioned_url) as conn:
        left = {r[0] for r in conn.execute("SELECT message_id FROM app.processed_message")}
        gone = conn.execute("SELECT to_regclass(%s)", (day,)).fetchone()[0]
    assert left == {"new1", "new2", "new3"} and gone is None


def test_operator_purges_a_spring_modulith_registry_from_its_purges_page(
    live_server, make_app, page, empty_database_url, monkeypatch
):
    """A database of another library's profile: its /purges lists the registry by role; dry run, then purge now,
    deletes exactly the publications Spring Modulith counts as completed and old."""
    from idemdash.queries.migrate import migrate
    from tests import library_ddl as ddl
    from tests.test_detect import _create_case
    from tests.test_library_purges_page import PURGEABLE
    from tests.test_profile_pages import SPRING_ROWS

    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        migrate(conn)
    app = make_app(
        empty_database_url, PROFILE="spring-modulith", APP_SCHEMA="modulith", OUTBOX_RETENTION_DAYS=1, PURGE_PAUSE_MS=0
    )
    page.goto(live_server(app) + "/")
    page.locator("nav a", has_text="Purges").click()
    card = page.locator('article[data-table="outbox"]')
    expect(card.locator(".relation")).to_have_text("modulith.event_publication")
    card.locator('button[data-action="dry-run"]').click()
    expect(card.locator("[data-dry-count]")).to_have_text(str(len(PURGEABLE)), timeout=15_000)
    card.locator('button[data-action="purge"]').click()
    finished = page.locator('table.purge-history tbody tr[data-outcome="succeeded"]', has_text="purge")
    expect(finished.first.locator("[data-rows]")).to_have_text(str(len(PURGEABLE)), timeout=15_000)
    expect(finished.first).to_contain_text("modulith.event_publication")
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "purges-spring-modulith.png"), full_page=True)
    with psycopg.connect(empty_database_url) as conn:
        left = {e for (e,) in conn.execute("SELECT serialized_event FROM modulith.event_publication")}
    assert not left & PURGEABLE and len(left) == 6 - len(PURGEABLE)
