"""`idemdash demo --profile NAME`'s tables and workload (workload/library_demo.py): the library's own tables with
history, rows moved through the library's states every second, read and purged like any library database."""

from __future__ import annotations

import time

import psycopg
import pytest

from idemdash.core import settings
from idemdash.core.profiles import profile
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.target import Target
from idemdash.workload.library_demo import DEMOS, set_up, workload

# a live workload for a few seconds per library: in the full run, out of the fast loop
pytestmark = pytest.mark.system

# The states each demo's history and a few seconds of its workload must show, as (table role, meaning): every state
# its profile declares, except, for the first three demos, the states that take longer than this test waits (a lease
# run out, rows left hanging).
NOT_WAITED_FOR = {
    "spring-modulith": {("outbox", "in progress"), ("outbox", "stuck"), ("archive", "purgeable")},
    "masstransit": {("inbox", "stuck"), ("outbox", "pending"), ("outbox", "failed"), ("outbox_state", "stuck")},
    "brandur": {("keys", "pending"), ("keys", "stuck")},
}

# tables whose done rows are all purgeable in the history: Wolverine keeps a Handled envelope 5 minutes (keep_until)
KEPT_A_FEW_MINUTES = {"wolverine": {"inbox"}}


def shown(library: str) -> set[tuple[str, str]]:
    return {(s.table, s.meaning) for s in profile(library).states} - NOT_WAITED_FOR.get(library, set())


def test_the_seven_newer_demos_wait_for_every_state_their_profile_declares():
    assert set(DEMOS) - set(NOT_WAITED_FOR) == {
        "wolverine",
        "nservicebus",
        "eventuate",
        "pg-transactional-outbox",
        "debezium-outbox",
        "cap",
        "dbos",
    }
    assert shown("wolverine") >= {
        ("inbox", "pending"),
        ("inbox", "stuck"),
        ("outbox", "stuck"),
        ("dead_letters", "failed"),
    }


@pytest.mark.parametrize("library", sorted(DEMOS))
def test_a_library_demo_fills_every_state_and_its_purge_takes_only_finished_rows(make_app, empty_database_url, library):
    schema = set_up(empty_database_url, library, backfill_days=10)
    assert set_up(empty_database_url, library, backfill_days=10) == schema  # again: no second history
    overrides = {"PROFILE": library, "INBOX_RETENTION_DAYS": 1, "OUTBOX_RETENTION_DAYS": 1}
    client = make_app(empty_database_url, **overrides).test_client()

    def counts() -> dict[tuple[str, str], int | None]:
        tables = client.get("/api/v1/tables").get_json()["tables"]
        return {(t["role"], s["meaning"]): s["count"] for t in tables for s in t["states"]}

    def moved(before: dict, now: dict) -> set[str]:  # the tables with a state whose count changed
        return {role for (role, meaning), count in now.items() if count != before[(role, meaning)]}

    wanted = shown(library)
    counted_tables = {role for role, _ in wanted}
    history = counts()
    assert all(history[state] is not None for state in wanted), history
    for role in {role for role, meaning in wanted if meaning == "purgeable"} - KEPT_A_FEW_MINUTES.get(library, set()):
        # the history's times spread over its days: some rows past the one-day retention, some not
        assert 0 < history[(role, "purgeable")] < history[(role, "done")], history
    live = workload(empty_database_url, library, schema)  # DBOS's: the DBOS application itself
    live.start()
    try:  # until its ticks have moved rows into every state it shows and changed every table's counts (a second a
        # tick; a loaded machine is slower)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = counts()
            if all(now[state] for state in wanted) and moved(history, now) >= counted_tables:
                break
            time.sleep(0.5)
    finally:
        live.stop()
    assert not live.is_alive()
    before = counts()
    assert all(before[state] for state in wanted), sorted(s for s in wanted if not before[s])
    assert moved(history, before) >= counted_tables, (history, before)
    purgeable = {role for role, meaning in wanted if meaning == "purgeable"}
    target = Target.from_settings(settings.load(DATABASE_URL=empty_database_url, **overrides))
    results = run_library_purges(target, dry_run=False, started_by="test")
    assert all(r.outcome == "succeeded" for r in results)
    assert len(results) == len({s.table for s in profile(library).states if s.meaning == "purgeable"})
    after = counts()
    # what went was finished rows only (done, or failed where the library purges those too: pg-transactional-outbox's
    # abandoned ones), and every one the library counts as purgeable (a row may cross the one-day cutoff between the
    # count and the purge); no pending row went
    names = {t["role"]: f"{schema}.{t['name']}" for t in client.get("/api/v1/tables").get_json()["tables"]}
    deleted = {r.table: r.rows for r in results}
    for role in purgeable:
        gone = deleted[names[role]]
        finished = [(role, "done"), *([(role, "failed")] if before.get((role, "failed")) is not None else [])]
        assert gone and sum(after[s] for s in finished) == sum(before[s] for s in finished) - gone, (before, after)
        assert after[(role, "purgeable")] <= 1 and after.get((role, "pending")) == before.get((role, "pending"))
    with psycopg.connect(empty_database_url) as conn:  # idemdash's own schema is there for the purge history
        recorded = conn.execute("SELECT count(*) FROM idemdash.purge_run WHERE outcome = 'succeeded'").fetchone()[0]
        assert recorded == len(results)  # one run per purgeable table (Spring Modulith's archive too)


def test_the_spring_demo_completes_a_publication_as_the_registry_does(empty_database_url):
    """Spring Modulith writes a completed publication's status and completion_date together: the demo's listeners
    never leave a COMPLETED row without its date, nor a PROCESSING or FAILED one with one (the outbox's pending list
    opened on such rows)."""
    schema = set_up(empty_database_url, "spring-modulith", backfill_days=1)
    with psycopg.connect(empty_database_url) as conn:
        conn.execute(
            f"INSERT INTO {schema}.event_publication (id, listener_id, event_type, serialized_event, "
            "publication_date, status, completion_attempts) SELECT gen_random_uuid(), 'demo.MailListener.on', "
            "'com.example.OrderPlaced', '{}', now() - interval '1 minute', 'PUBLISHED', 0 "
            "FROM generate_series(1, 100)"
        )
        conn.commit()

    def waiting() -> int:
        with psycopg.connect(empty_database_url) as conn:
            return conn.execute(
                f"SELECT count(*) FROM {schema}.event_publication WHERE status = 'PUBLISHED' "
                "AND publication_date < now() - interval '30 seconds'"
            ).fetchone()[0]

    assert waiting() >= 100
    live = workload(empty_database_url, "spring-modulith", schema)
    live.start()
    try:
        deadline = time.monotonic() + 30
        while waiting() and time.monotonic() < deadline:
            time.sleep(0.3)
    finally:
        live.stop()
    assert not live.is_alive() and waiting() == 0  # the listeners took every one
    with psycopg.connect(empty_database_url) as conn:
        odd = conn.execute(
            f"SELECT status, count(*) FROM {schema}.event_publication WHERE "
            "(status = 'COMPLETED') <> (completion_date IS NOT NULL) GROUP BY status"
        ).fetchall()
    assert odd == []
