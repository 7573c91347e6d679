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
    workload = LibraryWorkload(empty_database_url, library, schema)
    workload.start()
    try:
        time.sleep(4.5)
    finally:
        workload.stop()
    assert not workload.is_alive()
    overrides = {"PROFILE": library, "INBOX_RETENTION_DAYS": 1, "OUTBOX_RETENTION_DAYS": 1}
    client = make_app(empty_database_url, **overrides).test_client()
    [table, *_] = client.get("/api/v1/tables").get_json()["tables"]
    counts = {s["meaning"]: s["count"] for s in table["states"]}
    assert all(counts[meaning] for meaning in SHOWN[library]), counts
    target = Target.from_settings(settings.load(DATABASE_URL=empty_database_url, **overrides))
    results = run_library_purges(target, dry_run=False, started_by="test")
    assert results and results[0].outcome == "succeeded" and results[0].rows == counts["purgeable"]
    after = {s["meaning"]: s["count"] for s in client.get("/api/v1/tables").get_json()["tables"][0]["states"]}
    assert after["purgeable"] == 0 and after["done"] == counts["done"] - counts["purgeable"]
    with psycopg.connect(empty_database_url) as conn:  # idemdash's own schema is there for the purge history
        recorded = conn.execute("SELECT count(*) FROM idemdash.purge_run WHERE outcome = 'succeeded'").fetchone()[0]
        assert recorded == len(results)  # one run per purgeable table (Spring Modulith's archive too)
