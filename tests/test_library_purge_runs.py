"""A purge of a library's table (jobs/library_purge.py) beside other work: it leaves a row another transaction holds
and still succeeds (SKIP LOCKED), a second run of the same table at the same time records ``skipped`` (the advisory
lock), and a table whose library defines no purgeable state (Debezium's outbox) gets no run at all."""

from __future__ import annotations

import threading

import psycopg
import pytest

from idemdash.core import settings as idemdash_settings
from idemdash.jobs.library_purge import run_library_purges
from idemdash.jobs.purge_run import PurgeResult
from idemdash.queries import purges
from idemdash.queries.migrate import migrate
from idemdash.queries.target import Target
from tests import library_ddl as ddl
from tests.test_detect import _create_case

FINISHED_KEYS = """
INSERT INTO public.idempotency_keys (id, created_at, idempotency_key, locked_at, request_method, request_params,
                                     request_path, recovery_point, user_id)
SELECT i, now() - interval '5 days', 'k' || i, NULL, 'POST', '{}', '/rides', 'finished', 1 FROM generate_series(1, 7) i
"""


def _library(url: str, schema: str, statements: list[str], profile: str, **extra) -> Target:
    _create_case(url, schema, statements)
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return Target.from_settings(
        idemdash_settings.load({}, DATABASE_URL=url, PROFILE=profile, PURGE_PAUSE_MS=0, INBOX_RETENTION_DAYS=1, **extra)
    )


def _keys(url: str) -> set[int]:
    with psycopg.connect(url) as conn:
        return {i for (i,) in conn.execute("SELECT id FROM public.idempotency_keys")}


def _runs(url: str) -> list[tuple[str, str, int, bool]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT table_name, outcome, rows_deleted, dry_run FROM idemdash.purge_run ORDER BY run_id"
        ).fetchall()


def test_a_row_another_transaction_holds_is_left_and_the_run_succeeds(empty_database_url):
    url = empty_database_url
    target = _library(url, "public", [ddl.BRANDUR], "brandur", PURGE_BATCH_SIZE=2)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(FINISHED_KEYS)
    held, release, failure = threading.Event(), threading.Event(), []

    def hold() -> None:  # another worker's open transaction, on its own thread and connection
        try:
            with psycopg.connect(url) as conn, conn.transaction():
                conn.execute("SELECT id FROM public.idempotency_keys WHERE id = 4 FOR UPDATE")
                held.set()
                release.wait(30)
        except Exception as exc:  # noqa: BLE001 - shown by the assertion below
            failure.append(exc)
            held.set()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10) and not failure, failure
        [run] = run_library_purges(target, dry_run=False, started_by="test")
        # every finished old key but the held one, in batches of 2, without waiting for the lock
        assert (run.outcome, run.rows, run.batches, run.error) == ("succeeded", 6, 3, None)
        assert _keys(url) == {4}
    finally:
        release.set()
        holder.join(10)
    assert not holder.is_alive() and not failure, failure
    # once the transaction is over, the next run takes it
    [again] = run_library_purges(target, dry_run=False, started_by="test")
    assert (again.outcome, again.rows) == ("succeeded", 1)
    assert _keys(url) == set()
    assert _runs(url) == [
        ("public.idempotency_keys", "succeeded", 6, False),
        ("public.idempotency_keys", "succeeded", 1, False),
    ]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_second_run_of_the_same_table_at_the_same_time_is_skipped(empty_database_url, dry_run):
    url = empty_database_url
    target = _library(url, "public", [ddl.BRANDUR], "brandur", PURGE_BATCH_SIZE=3)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(FINISHED_KEYS)
    second: list[PurgeResult] = []

    def while_the_first_runs() -> None:
        # called by the first run between its batches, while it holds the table's lock: a second run starts on
        # another thread (as another replica's scheduler would) and finishes before the first goes on
        if not second:
            other = threading.Thread(
                target=lambda: second.extend(run_library_purges(target, dry_run=False, started_by="replica-2"))
            )
            other.start()
            other.join(30)
            assert second, "the second run did not finish"
        return None

    if dry_run:  # a dry run holds the lock too, though it calls no one between batches: hold it from here
        with psycopg.connect(url, autocommit=True) as lock_conn:
            assert purges.try_purge_lock(lock_conn, "public.idempotency_keys")
            second.extend(run_library_purges(target, dry_run=True, started_by="replica-2"))
        [first] = run_library_purges(target, dry_run=True, started_by="test")
        assert (first.outcome, first.rows) == ("succeeded", 7)
    else:
        [first] = run_library_purges(target, dry_run=False, started_by="test", cancel=while_the_first_runs)
        assert (first.outcome, first.rows) == ("succeeded", 7)
        assert _keys(url) == set()
    [skipped] = second
    assert (skipped.outcome, skipped.rows) == ("skipped", 0)
    recorded = {
        (outcome, rows)
        for name, outcome, rows, dry in _runs(url)
        if name == "public.idempotency_keys" and dry == dry_run
    }
    assert recorded == {("succeeded", 7), ("skipped", 0)}


def test_debeziums_outbox_gets_no_run_at_all(empty_database_url):
    url = empty_database_url
    target = _library(url, "public", [ddl.DEBEZIUM], "debezium-outbox")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO public.outboxevent (id, aggregatetype, aggregateid, type, payload)"
            " VALUES (gen_random_uuid(), 'order', '1', 'created', '{}')"
        )
    assert run_library_purges(target, dry_run=True, started_by="test") == []
    assert run_library_purges(target, dry_run=False, started_by="test") == []
    # a replication slot reads these rows: none is deleted, and no run is recorded (not even a skipped one)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM public.outboxevent").fetchone() == (1,)
    assert _runs(url) == []


def test_only_the_tables_whose_library_lets_rows_go_get_a_run(empty_database_url):
    url = empty_database_url
    # Wolverine's four tables: outgoing rows are deleted once sent, dead letters and nodes are never old work
    target = _library(url, "wolverine", [ddl.WOLVERINE], "wolverine")
    results = run_library_purges(target, dry_run=True, started_by="test")
    assert [(r.table, r.outcome, r.rows) for r in results] == [
        ("wolverine.wolverine_incoming_envelopes", "succeeded", 0)
    ]
