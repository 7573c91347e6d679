"""`idemdash demo --profile NAME`'s tables and workload (workload/library_demo.py): the library's own tables with
history, rows moved through the library's states every second, read and purged like any library database."""
from __future__ import annotations

import time

import psycopg
import pytest

from idemdash.core import settings
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.target import Target
from idemdash.workload.library_demo import DEMOS, LibraryWorkload, set_up

# a live workload for a few seconds per library: in the full run, out of the fast loop
pytestmark = pytest.mark.system

# (library, the states its history and a few seconds of workload must show)
SHOWN = {
    "spring-modulith": ("pending", "done", "failed", "purgeable"),
    "masstransit": ("in progress", "done", "purgeable"),
    "brandur": ("in progress", "done", "purgeable"),
}


@pytest.mark.parametrize("library", sorted(DEMOS))
def test_a_library_demo_fills_every_state_and_its_purge_takes_only_finished_rows(make_app, empty_database_url,
                                                                                  library):
    schema = set_up(empty_database_url, library, backfill_days=10)
    assert set_up(empty_database_url, library, backfill_days=10) == schema  # again: no second history
    overrides = {"PROFILE": library, "INBOX_RETENTION_DAYS": 1, "OUTBOX_RETENTION_DAYS": 1}
    client = make_app(empty_database_url, **overrides).test_client()

    def counts() -> dict[str, int | None]:
        [table, *_] = client.get("/api/v1/tables").get_json()["tables"]
        return {s["meaning"]: s["count"] for s in table["states"]}

    workload = LibraryWorkload(empty_database_url, library, schema)
    workload.start()
    try:  # until its ticks have moved rows into every state it shows (a second each; a loaded machine is slower)
        deadline = time.monotonic() + 30
        while not all(counts()[meaning] for meaning in SHOWN[library]) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        workload.stop()
    assert not workload.is_alive()
    before = counts()
    assert all(before[meaning] for meaning in SHOWN[library]), before
    target = Target.from_settings(settings.load(DATABASE_URL=empty_database_url, **overrides))
    results = run_library_purges(target, dry_run=False, started_by="test")
    assert results and all(r.outcome == "succeeded" for r in results)
    after = counts()
    # what went was finished rows only, and every one the library counts as finished and old (a row may cross
    # the one-day cutoff between the count and the purge)
    deleted = sum(r.rows for r in results)
    assert deleted and after["done"] == before["done"] - deleted and after["purgeable"] <= 1
    with psycopg.connect(empty_database_url) as conn:  # idemdash's own schema is there for the purge history
        recorded = conn.execute("SELECT count(*) FROM idemdash.purge_run WHERE outcome = 'succeeded'").fetchone()[0]
        assert recorded == len(results)  # one run per purgeable table (Spring Modulith's archive too)
