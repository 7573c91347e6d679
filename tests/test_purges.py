"""Retention purges against a real PostgreSQL: what goes and what never does, batches, locks, concurrency,
crashes, timeouts, the time budget, the run history, the CLI.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.jobs.purge_run import TABLES, PurgeResult, describe_error, run_purge
from idemdash.queries import Tables
from idemdash.queries.indexes import ADVICE
from idemdash.queries.purge_batches import BY_KEY, DUE, batch_statement, due_index
from idemdash.queries.target import Target

ROOT = Path(__file__).resolve().parent.parent
KEYS = "app.idempotency_request"


def make_target(database_url: str, **overrides) -> Target:
    overrides.setdefault("PURGE_PAUSE_MS", 0)
    return Target.from_settings(settings.load({}, DATABASE_URL=database_url, **overrides))


def add_keys(conn, rows):
    """rows: (scope, key, status, expires_in_minutes); negative minutes = already expired."""
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {KEYS} (idempotency_scope, idempotency_key, request_hash, status, claimed_by, claimed_at,"
            " locked_until, created_at, updated_at, expires_at)"
            " VALUES (%(scope)s, %(key)s, 'h', %(status)s, 'w', now() - interval '40 days',"
            " CASE WHEN %(processing)s THEN now() - interval '39 days' END,"
            " now() - interval '40 days', now() - interval '40 days',"
            " now() + %(minutes)s * interval '1 minute')",
            [
                {"scope": s, "key": k, "status": st, "minutes": m, "processing": st == "processing"}
                for s, k, st, m in rows
            ],
        )


def add_expired(conn, n, scope="s", status="succeeded"):
    conn.execute(
        f"INSERT INTO {KEYS} (idempotency_scope, idempotency_key, request_hash, status, created_at, expires_at)"
        " SELECT %s, 'k' || lpad(g::text, 6, '0'), 'h', %s, now() - interval '3 days', now() - interval '1 day'"
        " FROM generate_series(1, %s) g",
        (scope, status, n),
    )


def add_inbox(conn, rows):
    """rows: (consumer, message_id, processed_minutes_ago)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
            " VALUES (%s, %s, 'h', now() - %s * interval '1 minute')",
            rows,
        )


def add_outbox(conn, rows):
    """rows: (status, published_minutes_ago or None, created_minutes_ago); returns the outbox ids in order."""
    ids = []
    for status, published, created in rows:
        ids.append(
            conn.execute(
                "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,"
                " idempotency_key, payload, status, created_at, published_at)"
                " VALUES ('e', 'a', gen_random_uuid(), 's', gen_random_uuid()::text, '{}', %s,"
                " now() - %s * interval '1 minute', now() - %s * interval '1 minute') RETURNING outbox_id",
                (status, created, published),
            ).fetchone()[0]
        )
    return ids


def key_set(conn):
    return {(s, k) for s, k in conn.execute(f"SELECT idempotency_scope, idempotency_key FROM {KEYS}")}


def count(conn, table):
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def runs(conn):
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM idemdash.purge_run ORDER BY run_id").fetchall()


DAY = 24 * 60


# ---------------------------------------------------------------------------------------------------------------
# what goes, what never does


@pytest.mark.parametrize("status_type", ["enum", "text"])
def test_keys_purge_deletes_only_expired_terminal_keys(request, status_type):
    url = request.getfixturevalue("database_url" if status_type == "enum" else "text_status_database_url")
    with psycopg.connect(url, autocommit=True) as conn:
        rows = [
            (f"scope-{status}", f"expires-in-{m}", status, m)
            for status in ("processing", "succeeded", "failed_retryable", "failed_final")
            for m in (-30 * DAY, -2, 2, 30 * DAY)
        ]
        add_keys(conn, rows)
        result = run_purge(make_target(url, PURGE_BATCH_SIZE=3), "keys", dry_run=False, started_by="test")
        assert result.outcome == "succeeded", result
        expected_gone = {(s, k) for s, k, st, m in rows if st in ("succeeded", "failed_final") and m < 0}
        assert len(expected_gone) == 4
        assert result.rows == 4
        assert key_set(conn) == {(s, k) for s, k, *_ in rows} - expected_gone


def test_inbox_purge_keeps_rows_inside_the_retention(conn, database_url):
    add_inbox(
        conn,
        [
            ("billing", "a", 30 * DAY + 5),
            ("billing", "b", 30 * DAY - 5),
            ("shipping", "c", 90 * DAY),
            ("shipping", "d", 1),
            ("analytics", "e", 31 * DAY),
        ],
    )
    result = run_purge(make_target(database_url), "inbox", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 3)
    left = {r[0] for r in conn.execute("SELECT message_id FROM app.processed_message")}
    assert left == {"b", "d"}
    # the retention is a setting
    result = run_purge(make_target(database_url, INBOX_RETENTION_DAYS=1), "inbox", dry_run=False, started_by="test")
    assert result.rows == 1
    assert {r[0] for r in conn.execute("SELECT message_id FROM app.processed_message")} == {"d"}


def test_outbox_purge_deletes_only_published_rows_past_the_retention(conn, database_url):
    ids = add_outbox(
        conn,
        [
            ("published", 8 * DAY, 8 * DAY),  # 0: goes
            ("published", 6 * DAY, 9 * DAY),  # 1: published recently (created long ago): stays
            ("pending", None, 400 * DAY),  # 2: pending, very old: never
            ("pending", 300 * DAY, 400 * DAY),  # 3: pending even with a published_at: never
            ("failed", 30 * DAY, 30 * DAY),  # 4: another status: never
            ("published", None, 30 * DAY),  # 5: published without published_at: kept
            ("published", 365 * DAY, 366 * DAY),  # 6: goes
        ],
    )
    result = run_purge(make_target(database_url, PURGE_BATCH_SIZE=1), "outbox", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 2)
    left = {r[0] for r in conn.execute("SELECT outbox_id FROM app.outbox_event")}
    assert left == {ids[i] for i in (1, 2, 3, 4, 5)}
    result = run_purge(make_target(database_url, OUTBOX_RETENTION_DAYS=1), "outbox", dry_run=False, started_by="test")
    assert result.rows == 1
    assert {r[0] for r in conn.execute("SELECT outbox_id FROM app.outbox_event")} == {ids[i] for i in (2, 3, 4, 5)}


def test_unknown_table_is_refused():
    with pytest.raises(ValueError, match="keys, inbox, outbox"):
        run_purge(make_target("x"), "idempotency_request", dry_run=True, started_by="test")
    assert TABLES == ("keys", "inbox", "outbox")


# ---------------------------------------------------------------------------------------------------------------
# dry run, history, progress


def test_dry_run_counts_deletes_nothing_and_a_real_run_deletes_that_many(conn, database_url):
    add_expired(conn, 23)
    add_keys(conn, [("s", "live", "succeeded", 60), ("s", "zz-processing", "processing", -DAY)])
    add_inbox(conn, [("c", str(i), 40 * DAY) for i in range(7)] + [("c", "new", 1)])
    add_outbox(conn, [("published", 10 * DAY, 10 * DAY)] * 4 + [("pending", None, 10 * DAY)])
    before = {t: count(conn, t) for t in (KEYS, "app.processed_message", "app.outbox_event")}
    target = make_target(database_url, PURGE_BATCH_SIZE=5)

    dry = {t: run_purge(target, t, dry_run=True, started_by="test") for t in TABLES}
    assert {t: (r.outcome, r.rows, r.dry_run) for t, r in dry.items()} == {
        "keys": ("succeeded", 23, True),
        "inbox": ("succeeded", 7, True),
        "outbox": ("succeeded", 4, True),
    }
    assert dry["keys"].batches == 5  # chunks of 5: 5+5+5+5+3
    assert {t: count(conn, t) for t in before} == before

    real = {t: run_purge(target, t, dry_run=False, started_by="test") for t in TABLES}
    assert {t: r.rows for t, r in real.items()} == {t: r.rows for t, r in dry.items()}
    assert count(conn, KEYS) == 2 and count(conn, "app.processed_message") == 1
    assert count(conn, "app.outbox_event") == 1

    history = runs(conn)
    assert [(h["table_name"], h["dry_run"], h["outcome"], h["rows_deleted"]) for h in history] == [
        ("keys", True, "succeeded", 23),
        ("inbox", True, "succeeded", 7),
        ("outbox", True, "succeeded", 4),
        ("keys", False, "succeeded", 23),
        ("inbox", False, "succeeded", 7),
        ("outbox", False, "succeeded", 4),
    ]
    assert all(
        h["finished_at"] >= h["started_at"] and h["started_by"] == "test" and h["error"] is None for h in history
    )
    assert [h["run_id"] for h in history] == [r.run_id for r in (*dry.values(), *real.values())]


def test_progress_is_visible_after_every_batch_while_running(conn, database_url):
    add_expired(conn, 10)
    seen = []
    started = []

    def on_batch(batches, rows):
        # read from another connection: what /purges would show right now
        row = conn.execute(
            "SELECT outcome, batches, rows_deleted, finished_at FROM idemdash.purge_run WHERE run_id = %s",
            (started[0],),
        ).fetchone()
        seen.append(((batches, rows), row))

    result = run_purge(
        make_target(database_url, PURGE_BATCH_SIZE=3),
        "keys",
        dry_run=False,
        started_by="test",
        on_start=started.append,
        on_batch=on_batch,
    )
    assert result == PurgeResult(started[0], "keys", "succeeded", 4, 10, False, None, "primary_key")
    assert [s[0] for s in seen] == [(1, 3), (2, 6), (3, 9), (4, 10)]
    assert [s[1] for s in seen] == [
        ("running", 1, 3, None),
        ("running", 2, 6, None),
        ("running", 3, 9, None),
        ("running", 4, 10, None),
    ]


def test_an_empty_table_is_one_empty_batch(conn, database_url):
    result = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.batches, result.rows) == ("succeeded", 1, 0)


# ---------------------------------------------------------------------------------------------------------------
# never waits on, never touches, a locked row


def test_a_locked_row_survives_and_the_purge_does_not_wait_for_it(conn, database_url):
    add_expired(conn, 30)
    holder = psycopg.connect(database_url)
    try:
        # an application transaction holds one eligible key in the middle of the key order
        holder.execute(f"SELECT 1 FROM {KEYS} WHERE idempotency_key = 'k000013' FOR UPDATE")
        started = time.monotonic()
        result = run_purge(
            make_target(database_url, PURGE_BATCH_SIZE=4, PURGE_LOCK_TIMEOUT_MS=5000, PURGE_STATEMENT_TIMEOUT_MS=10000),
            "keys",
            dry_run=False,
            started_by="test",
        )
        elapsed = time.monotonic() - started
        assert (result.outcome, result.rows) == ("succeeded", 29)
        assert elapsed < 2.0, f"the purge waited for the locked row ({elapsed:.1f}s)"
        assert key_set(conn) == {("s", "k000013")}
    finally:
        holder.rollback()
        holder.close()
    result = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 1)
    assert key_set(conn) == set()


# ---------------------------------------------------------------------------------------------------------------
# one runner per table


def test_two_purges_of_one_table_at_once_one_runs_one_is_skipped(conn, database_url):
    add_expired(conn, 12)
    target = make_target(database_url, PURGE_BATCH_SIZE=5)
    barrier = threading.Barrier(2)
    loser_done = threading.Event()
    results: list[PurgeResult] = []
    errors: list[BaseException] = []

    def hold(batches, rows):
        # the runner keeps the lock until the other one has given up, so the race cannot resolve in sequence
        assert loser_done.wait(10), "the second purge never returned"

    def purge():
        try:
            barrier.wait(5)
            result = run_purge(target, "keys", dry_run=False, started_by=threading.current_thread().name, on_batch=hold)
            results.append(result)
            if result.outcome == "skipped":
                loser_done.set()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            loser_done.set()

    threads = [threading.Thread(target=purge, name=f"purger-{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors and not any(t.is_alive() for t in threads)
    assert sorted(r.outcome for r in results) == ["skipped", "succeeded"]
    winner = next(r for r in results if r.outcome == "succeeded")
    loser = next(r for r in results if r.outcome == "skipped")
    assert (winner.rows, loser.rows, loser.batches) == (12, 0, 0)
    # the winner records its run just after taking the lock: a loser that looked in between cannot name it yet
    assert loser.error in (
        f"another purge of this table is running (run {winner.run_id})",
        "another purge of this table is running",
    )
    history = {h["run_id"]: h for h in runs(conn)}
    assert history[winner.run_id]["outcome"] == "succeeded"
    assert history[loser.run_id]["outcome"] == "skipped"
    assert history[loser.run_id]["finished_at"] is not None
    assert count(conn, KEYS) == 0


def test_purges_of_different_tables_run_side_by_side(conn, database_url):
    add_expired(conn, 3)
    add_inbox(conn, [("c", "m", 40 * DAY)])
    target = make_target(database_url)
    inner: list[PurgeResult] = []

    def on_batch(batches, rows):
        if not inner:  # while holding the keys lock, the inbox purge still runs
            inner.append(run_purge(target, "inbox", dry_run=False, started_by="test"))

    outer = run_purge(target, "keys", dry_run=False, started_by="test", on_batch=on_batch)
    assert outer.outcome == "succeeded" and inner[0].outcome == "succeeded" and inner[0].rows == 1


# ---------------------------------------------------------------------------------------------------------------
# crashes


KILLED_CHILD = """
import sys, time
from idemdash.core import settings
from idemdash.jobs.purge_run import run_purge
from idemdash.queries.target import Target

def on_batch(batches, rows):
    print("batch", batches, rows, flush=True)
    time.sleep(60)  # SIGKILLed here, holding the lock, its first batch committed

config = settings.load({}, DATABASE_URL=sys.argv[1], PURGE_BATCH_SIZE=10, PURGE_PAUSE_MS=0)
run_purge(Target.from_settings(config), "keys",
          dry_run=False, started_by="doomed", on_batch=on_batch)
"""


def _wait_for_no_backend(conn, prefix, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s", (prefix + "%",)
        ).fetchone()[0]
        if not left:
            return
        time.sleep(0.05)
    raise AssertionError(f"backends {prefix}* still there after {timeout}s")


@pytest.mark.system
def test_a_killed_runner_is_recorded_as_failed_and_the_next_run_finishes_the_work(conn, database_url):
    add_expired(conn, 35)
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, database_url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    guard = threading.Timer(60, child.kill)  # never hang the suite on a child that never reports
    guard.start()
    try:
        line = child.stdout.readline()
        assert line.split() == ["batch", "1", "10"], (line, child.stderr.read() if child.poll() is not None else "")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        guard.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()
    _wait_for_no_backend(conn, "idemdash-purge-keys")

    (killed,) = runs(conn)
    # nothing could record its end: the row says 'running', with the batch that did commit
    assert (killed["outcome"], killed["batches"], killed["rows_deleted"], killed["finished_at"]) == (
        "running",
        1,
        10,
        None,
    )
    assert count(conn, KEYS) == 25

    result = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 25)
    assert count(conn, KEYS) == 0
    killed, after = runs(conn)
    assert killed["outcome"] == "failed" and killed["finished_at"] is not None
    assert killed["error"].startswith("runner died") and f"run {result.run_id}" in killed["error"]
    assert (after["run_id"], after["outcome"]) == (result.run_id, "succeeded")


def test_a_running_row_whose_runner_holds_the_lock_is_not_reaped(conn, database_url):
    add_expired(conn, 4)
    target = make_target(database_url, PURGE_BATCH_SIZE=2)
    seen = []

    def on_batch(batches, rows):
        if batches == 1:  # a second runner arrives while the first is alive: it must not call it dead
            seen.append(run_purge(target, "keys", dry_run=False, started_by="second"))

    first = run_purge(target, "keys", dry_run=False, started_by="first", on_batch=on_batch)
    assert first.outcome == "succeeded" and seen[0].outcome == "skipped"
    assert [h["outcome"] for h in runs(conn)] == ["succeeded", "skipped"]


def test_a_terminated_connection_fails_the_run_and_the_next_run_finishes(conn, database_url):
    add_expired(conn, 30)

    def kill_batches(batches, rows):
        if batches == 1:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'idemdash-purge-keys-batches'"
            )
            _wait_for_no_backend(conn, "idemdash-purge-keys-batches")

    result = run_purge(
        make_target(database_url, PURGE_BATCH_SIZE=10), "keys", dry_run=False, started_by="test", on_batch=kill_batches
    )
    assert (result.outcome, result.batches, result.rows) == ("failed", 1, 10)
    assert "terminat" in result.error
    (failed,) = runs(conn)
    assert (failed["outcome"], failed["batches"], failed["rows_deleted"], failed["error"]) == (
        "failed",
        1,
        10,
        result.error,
    )
    again = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert (again.outcome, again.rows) == ("succeeded", 20)


def test_a_database_that_is_down_fails_without_showing_the_password():
    url = "postgresql://alice:s3cr3t-pw@127.0.0.1:9/app?connect_timeout=2"
    result = run_purge(make_target(url), "keys", dry_run=False, started_by="test")
    assert (result.run_id, result.outcome, result.rows) == (None, "failed", 0)
    assert result.error.startswith("database unreachable: OperationalError: ")
    assert "s3cr3t-pw" not in result.error
    assert describe_error(RuntimeError("password=s3cr3t-pw and s3cr3t-pw"), url) == "RuntimeError: password=*** and ***"


def test_without_idemdash_schema_the_run_fails_and_says_to_migrate(empty_database_url):
    result = run_purge(make_target(empty_database_url), "keys", dry_run=False, started_by="test")
    assert (result.run_id, result.outcome) == (None, "failed")
    assert "idemdash migrate" in result.error


def test_a_missing_application_table_is_a_recorded_failure(conn, database_url):
    result = run_purge(make_target(database_url, APP_SCHEMA="billing"), "outbox", dry_run=False, started_by="test")
    assert result.outcome == "failed" and "billing.outbox_event" in result.error
    (row,) = runs(conn)
    assert (row["run_id"], row["outcome"], row["error"]) == (result.run_id, "failed", result.error)
    # the lock went with the failed run: the next one runs
    assert run_purge(make_target(database_url), "outbox", dry_run=False, started_by="test").outcome == "succeeded"


# ---------------------------------------------------------------------------------------------------------------
# timeouts and the time budget


def _slow_deletes(conn, body):
    """A statement-level trigger on the keys table, so a batch's duration is what the test decides."""
    conn.execute(
        f"CREATE FUNCTION app.slow_purge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$"
    )
    conn.execute(
        f"CREATE TRIGGER slow_purge AFTER DELETE ON {KEYS} REFERENCING OLD TABLE AS gone"
        " FOR EACH STATEMENT EXECUTE FUNCTION app.slow_purge()"
    )


@pytest.mark.system  # over a second: kept out of the fast loop
def test_a_batch_that_times_out_halves_the_batch_size_and_the_run_carries_on(conn, database_url):
    add_expired(conn, 350)
    # any batch of more than 150 rows runs into the statement timeout; smaller ones are instant
    _slow_deletes(conn, "IF (SELECT count(*) FROM gone) > 150 THEN PERFORM pg_sleep(30); END IF;")
    sizes = []
    # the latency budget off: its probe may shrink a batch too (tests/test_purge_latency.py), not what this is about
    result = run_purge(
        make_target(database_url, PURGE_BATCH_SIZE=800, PURGE_STATEMENT_TIMEOUT_MS=300, PURGE_LATENCY_BUDGET=0.0),
        "keys",
        dry_run=False,
        started_by="test",
        on_batch=lambda batches, rows: sizes.append(rows),
    )
    assert (result.outcome, result.rows, result.error) == ("succeeded", 350, None)
    # 800, 400 and 200 timed out (rolled back, not counted); then batches of 100 to the end
    assert sizes == [100, 200, 300, 350]
    assert count(conn, KEYS) == 0
    (row,) = runs(conn)
    assert (row["batches"], row["rows_deleted"]) == (4, 350)


@pytest.mark.system  # over a second: batches that wait out their timeouts
def test_batches_that_keep_timing_out_at_the_floor_fail_the_run(conn, database_url):
    add_expired(conn, 50)
    blocker = psycopg.connect(database_url)
    try:
        blocker.execute(f"LOCK TABLE {KEYS} IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        result = run_purge(
            make_target(database_url, PURGE_BATCH_SIZE=400, PURGE_LOCK_TIMEOUT_MS=100),
            "keys",
            dry_run=False,
            started_by="test",
        )
        elapsed = time.monotonic() - started
    finally:
        blocker.rollback()
        blocker.close()
    # 400 and 200, then three times the floor of 100: five lock timeouts of 0.1 s, nothing deleted
    assert (result.outcome, result.batches, result.rows) == ("failed", 0, 0)
    assert result.error.startswith("3 batches of 100 rows in a row hit lock_timeout")
    assert 0.5 < elapsed < 5
    assert count(conn, KEYS) == 50
    assert runs(conn)[0]["error"] == result.error


@pytest.mark.system  # over a second: runs that spend their time budget
def test_a_run_stops_at_its_time_budget_and_the_next_run_carries_on(conn, database_url):
    add_expired(conn, 200)
    _slow_deletes(conn, "PERFORM pg_sleep(0.2);")
    target = make_target(database_url, PURGE_BATCH_SIZE=10, PURGE_TIME_BUDGET_SECONDS=1)
    started = time.monotonic()
    result = run_purge(target, "keys", dry_run=False, started_by="test")
    elapsed = time.monotonic() - started
    assert result.outcome == "budget_exhausted" and result.error is None
    assert 1 <= result.batches <= 7 and result.rows == 10 * result.batches
    assert 1.0 <= elapsed < 2.5
    assert count(conn, KEYS) == 200 - result.rows
    (row,) = runs(conn)
    assert (row["outcome"], row["rows_deleted"]) == ("budget_exhausted", result.rows)

    conn.execute("DROP TRIGGER slow_purge ON app.idempotency_request")
    rest = run_purge(target, "keys", dry_run=False, started_by="test")
    assert (rest.outcome, rest.rows) == ("succeeded", 200 - result.rows)


# ---------------------------------------------------------------------------------------------------------------
# the plan: an index of due rows drives every batch; without one, the primary key


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


DUE_INDEX = {
    "idempotency_request": ADVICE["index_keys_due"].index_name(Tables()),
    "processed_message": ADVICE["index_inbox_processed"].index_name(Tables()),
    "outbox_event": ADVICE["index_outbox_published"].index_name(Tables()),
}
AT = datetime(2020, 1, 1, tzinfo=timezone.utc)

CURSOR_KEYS = {"after_1": AT, "after_2": "s", "after_3": "k000500"}
# (table, dry run, its relation, parameters): each batch in due order, with and without a cursor
PLAN_CASES = [
    ("keys", False, "idempotency_request", {**CURSOR_KEYS, "replay_horizon_seconds": 86400}),
    ("keys", False, "idempotency_request", {"replay_horizon_seconds": 86400}),
    ("keys", True, "idempotency_request", {**CURSOR_KEYS, "replay_horizon_seconds": 86400}),
    ("inbox", False, "processed_message", {"after_1": AT, "after_2": "c", "after_3": "m500", "retention_days": 30}),
    ("inbox", True, "processed_message", {"retention_days": 30}),
    ("outbox", False, "outbox_event", {"after_1": AT, "after_2": uuid.UUID(int=2**127), "retention_days": 7}),
    ("outbox", True, "outbox_event", {"retention_days": 7}),
]
# the same along the primary key
KEY_PLAN_CASES = [
    ("keys", False, "idempotency_request", {"after_1": "s", "after_2": "k000500", "replay_horizon_seconds": 86400}),
    ("keys", False, "idempotency_request", {"replay_horizon_seconds": 86400}),
    ("keys", True, "idempotency_request", {"after_1": "s", "after_2": "k000500", "replay_horizon_seconds": 86400}),
    ("inbox", False, "processed_message", {"after_1": "c", "after_2": "m500", "retention_days": 30}),
    ("inbox", True, "processed_message", {"retention_days": 30}),
    ("outbox", False, "outbox_event", {"after_1": uuid.UUID(int=2**127), "retention_days": 7}),
    ("outbox", True, "outbox_event", {"retention_days": 7}),
]


def _fill_for_plans(conn):
    # tables where one batch is a quarter of it: the size at which a join on the key turned into a hash join
    add_expired(conn, 20000)
    # as rows arrive: each at its own time (the due order's ties are the exception)
    conn.execute(
        "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
        " SELECT 'c' || g % 7, 'm' || g, 'h', now() - interval '40 days' - g * interval '1 second'"
        " FROM generate_series(1, 20000) g"
    )
    conn.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,"
        " idempotency_key, payload, status, created_at, published_at)"
        " SELECT 'e', 'a', gen_random_uuid(), 's', g::text, '{}', 'published',"
        " now() - interval '9 days' - g * interval '1 second', now() - interval '9 days' - g * interval '1 "
        "second' FROM generate_series(1, 20000) g"
    )


def _scans(conn, tables, role, dry_run, order, table, params):
    explain = psycopg.sql.SQL("EXPLAIN (FORMAT JSON) ") + batch_statement(tables, role, dry_run=dry_run, order=order)
    values = {
        "run_id": 0,
        "limit": 5000,
        "after_1": None,
        "after_2": None,
        "after_3": None,
        "has_cursor": "after_1" in params,
        **params,
    }
    (plan,) = conn.execute(explain, values, prepare=False).fetchone()[0]
    return sorted(
        (n["Node Type"], n.get("Index Name"))
        for n in _nodes(plan["Plan"])
        if n.get("Relation Name") == table and n["Node Type"] != "ModifyTable"
    )


@pytest.mark.system
def test_with_the_recommended_indexes_batches_read_only_due_rows_through_them_and_delete_by_tid(conn, tables):
    _fill_for_plans(conn)
    for advice in ADVICE.values():
        conn.execute(advice.create_statement(tables))
    conn.execute("ANALYZE")
    for role, dry_run, table, params in PLAN_CASES:
        # a dry-run count may read the index alone (its visibility map says the heap pages are all visible)
        scans = [
            ("Index Scan" if node == "Index Only Scan" else node, index)
            for node, index in _scans(conn, tables, role, dry_run, DUE, table, params)
        ]
        expected = [("Index Scan", DUE_INDEX[table])]
        if not dry_run:
            expected.append(("Tid Scan", None))
        assert scans == sorted(expected), (role, dry_run, params)
    for role, table in (("keys", "idempotency_request"), ("inbox", "processed_message"), ("outbox", "outbox_event")):
        predicate = {
            "keys": {"replay_horizon_seconds": 86400},
            "inbox": {"retention_days": 30},
            "outbox": {"retention_days": 7},
        }[role]
        assert due_index(conn, tables, role, limit=5000, **predicate) == DUE_INDEX[table]


@pytest.mark.system
def test_without_an_index_of_due_rows_batches_walk_the_primary_key_and_delete_by_tid(conn, tables):
    _fill_for_plans(conn)
    for advice in ADVICE.values():  # every other recommended index: the primary key still drives
        if advice.index_name(tables) not in DUE_INDEX.values():
            conn.execute(advice.create_statement(tables))
    conn.execute("ANALYZE")
    for role, dry_run, table, params in KEY_PLAN_CASES:
        expected = [("Index Scan", f"{table}_pkey")]
        if not dry_run:
            expected.append(("Tid Scan", None))
        assert _scans(conn, tables, role, dry_run, BY_KEY, table, params) == sorted(expected), (role, dry_run, params)
    assert due_index(conn, tables, "keys", limit=5000, replay_horizon_seconds=86400) is None
    assert due_index(conn, tables, "inbox", limit=5000, retention_days=30) is None
    assert due_index(conn, tables, "outbox", limit=5000, retention_days=7) is None


# ---------------------------------------------------------------------------------------------------------------
# the command line


def test_cli_dry_run_prints_progress_and_a_summary_and_deletes_nothing(conn, database_url):
    add_expired(conn, 25)
    add_inbox(conn, [("c", "m", 40 * DAY)])
    result = CliRunner().invoke(
        main,
        ["purge", "--dry-run", "--database-url", database_url],
        env={"IDEMDASH_PURGE_BATCH_SIZE": "2", "IDEMDASH_PURGE_PAUSE_MS": "0"},
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "dry run: counting keys ..."
    # not a terminal: a progress line for the first batch and then every tenth, with rows, rate and time
    progress = [
        re.fullmatch(r"  keys: ([\d,]+) rows to delete, ([\d,]+) rows/s, (\d+\.\d) s \((\d+) batch(es)?\)", line)
        for line in lines[1:3]
    ]
    assert all(progress), lines[:4]
    assert [(m.group(1), m.group(4)) for m in progress] == [("2", "1"), ("20", "10")]
    assert lines[3] == "dry run: counting inbox ..."
    assert re.fullmatch(r"  inbox: 1 rows to delete, [\d,]+ rows/s, \d+\.\d s \(1 batch\)", lines[4])
    summary = [line.split() for line in lines if line.split()[:1] in (["keys"], ["inbox"], ["outbox"])]
    assert [(s[0], s[1], s[4], s[6]) for s in summary] == [
        ("keys", "succeeded", "13", "25"),
        ("inbox", "succeeded", "1", "1"),
        ("outbox", "succeeded", "1", "0"),
    ]
    # without the recommended indexes the summary says how batches went and where to look
    assert (
        lines.count(
            "        batches walking the primary key (the planner did not read the due rows through an "
            "index: usual on a small table or when most rows are due; on a big table `idemdash check` "
            "names the index that would)"
        )
        == 3
    )
    assert count(conn, KEYS) == 25
    assert [(h["table_name"], h["dry_run"], h["rows_deleted"], h["method"]) for h in runs(conn)] == [
        ("keys", True, 25, "primary_key"),
        ("inbox", True, 1, "primary_key"),
        ("outbox", True, 0, "primary_key"),
    ]
    assert all(h["started_by"].startswith("cli") for h in runs(conn))


def test_cli_purges_the_tables_asked_for(conn, database_url):
    add_expired(conn, 4)
    add_inbox(conn, [("c", "m", 40 * DAY)])
    result = CliRunner().invoke(
        main, ["purge", "--table", "keys", "--database-url", database_url], env={"IDEMDASH_PURGE_PAUSE_MS": "0"}
    )
    assert result.exit_code == 0, result.output
    assert re.fullmatch(r"  keys: 4 rows deleted, [\d,]+ rows/s, \d+\.\d s \(1 batch\)", result.stdout.splitlines()[1])
    assert "inbox" not in result.stdout
    assert count(conn, KEYS) == 0 and count(conn, "app.processed_message") == 1


def test_cli_exits_non_zero_when_a_run_fails(empty_database_url):
    result = CliRunner().invoke(main, ["purge", "--table", "inbox", "--database-url", empty_database_url])
    assert result.exit_code == 1
    assert "failed" in result.stdout and "idemdash migrate" in result.stdout
