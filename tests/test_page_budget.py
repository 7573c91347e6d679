"""A page whose panels all time out (no indexes on a big table, or a lock) still answers in bounded time."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard.panels import MIN_PANEL_TIMEOUT_MS, PAGE_BUDGET_TIMEOUTS

pytestmark = pytest.mark.system  # see docs/development.md, Tests


def test_later_panels_get_what_is_left_of_the_page_budget(make_app, database_url):
    timeout_ms = 2000  # three panels read the outbox: the bound below must stay under three whole timeouts
    client = make_app(STATEMENT_TIMEOUT_MS=timeout_ms).test_client()
    locked, release = threading.Event(), threading.Event()

    def hold_locks():
        # every read of the outbox waits for this transaction, as a slow scan would run on
        with psycopg.connect(database_url) as other:
            other.execute("LOCK TABLE app.outbox_event IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_locks)
    holder.start()
    try:
        assert locked.wait(5)
        started = time.monotonic()
        page = client.get("/outbox")
        elapsed_ms = (time.monotonic() - started) * 1000
    finally:
        release.set()
        holder.join(30)
    assert page.status_code == 200
    problems = BeautifulSoup(page.data, "html.parser").select(".panel-problem.timeout")
    assert len(problems) >= 3, "the outbox page reads the outbox in several panels"
    # one full timeout, half of one, then the floor for each of the rest; far less than a timeout each
    bound = timeout_ms * PAGE_BUDGET_TIMEOUTS + (len(problems) - 2) * MIN_PANEL_TIMEOUT_MS + 1500
    assert elapsed_ms < bound < len(problems) * timeout_ms
    texts = [p.get_text(" ", strip=True) for p in problems]
    # the first panel to run had the whole timeout, the later ones what was left
    assert sum(f"{timeout_ms} ms statement timeout" in t for t in texts) == 1
    assert sum("left of this page's time budget" in t for t in texts) == len(texts) - 1
    assert all("CREATE INDEX CONCURRENTLY" in t for t in texts if "This index would make it fast" in t)
