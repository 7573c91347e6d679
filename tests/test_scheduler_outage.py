"""The scheduler through a database outage: every job keeps its schedule and works again once the database
is back, and purge runs that failed because the database was unreachable are recorded afterwards, once.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from apscheduler.events import EVENT_JOB_ERROR
from apscheduler.schedulers.background import BackgroundScheduler
from psycopg import errors
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from idemdash.core import settings
from idemdash.jobs import purges
from idemdash.jobs.failures import unreachable
from idemdash.jobs.purge_run import run_purge
from idemdash.jobs.scheduler import build, last_outcomes
from idemdash.jobs.unrecorded import UNRECORDED, UnrecordedRun, UnrecordedRuns, record_unrecorded_runs
from idemdash.queries import Tables
from idemdash.queries import purges as purges_queries
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import migrate
from idemdash.queries.target import Target
from tests.waiting import wait_until

PURGE_JOBS = ("purge_keys", "purge_inbox", "purge_outbox")
# every job the scheduler runs, made frequent for the test: the purges by their schedule setting (`every 1s`, so a
# run's period, which decides whether another scheduler already purged the table in it, is a second too), the others
# rescheduled
FAST = {**{job: 1 for job in PURGE_JOBS}, "snapshot": 1, "rollups": 1}
EVERY_SECOND = {f"PURGE_{job.removeprefix('purge_').upper()}_SCHEDULE": "every 1s" for job in PURGE_JOBS}


@pytest.fixture(autouse=True)
def no_unrecorded_runs_left_behind():
    UNRECORDED.clear()
    yield
    UNRECORDED.clear()


def _runs(url: str) -> list[dict]:
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(
            "SELECT run_id, table_name, started_at, finished_at, outcome, error, started_by"
            " FROM idemdash.purge_run ORDER BY started_at, run_id"
        ).fetchall()


@pytest.mark.system
def test_jobs_survive_an_outage_and_its_failed_purges_are_recorded_when_the_database_returns(own_server, caplog):
    caplog.set_level(logging.INFO, logger="idemdash.jobs")
    server_url, stop, start = own_server
    url = make_conninfo(server_url, connect_timeout=2)
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, Tables())
    config = settings.load({}, DATABASE_URL=url, PURGE_PAUSE_MS=0, SNAPSHOT_INTERVAL_SECONDS=1, **EVERY_SECOND)
    scheduler = build(config, BackgroundScheduler)
    raised = []
    scheduler.add_listener(raised.append, EVENT_JOB_ERROR)
    for job_id, seconds in FAST.items():
        if job_id not in PURGE_JOBS:
            scheduler.reschedule_job(job_id, trigger="interval", seconds=seconds)
    all_jobs = {job.id for job in scheduler.get_jobs()}
    assert all_jobs >= set(FAST) | {"record_unrecorded_runs"}

    def outcomes(*wanted):
        last = last_outcomes(scheduler)
        return all(job in last and last[job].outcome in wanted for job in FAST)

    scheduler.start()
    try:
        wait_until(lambda: outcomes("succeeded"), 10, "every job to succeed once before the outage")
        outage_began = datetime.now(timezone.utc)
        stop()
        stopped = time.monotonic()
        failed_since = datetime.now(timezone.utc)
        # every job runs at least once into the outage, and fails
        wait_until(
            lambda: outcomes("failed") and all(last_outcomes(scheduler)[job].at > failed_since for job in FAST),
            10,
            "every job to fail during the outage",
        )
        kept = UNRECORDED.waiting(url)
        assert kept and all(
            run.error.startswith("database unreachable: OperationalError") for run in kept if run.run_id is None
        )
        assert scheduler.running and scheduler._thread.is_alive()  # noqa: SLF001 - the thread is what could die
        assert {job.id for job in scheduler.get_jobs()} == all_jobs  # none removed, each still has a next run
        assert all(job.next_run_time is not None for job in scheduler.get_jobs())
        outage_ended = datetime.now(timezone.utc)
        outage_seconds = time.monotonic() - stopped
        start()
        back = time.monotonic()

        def recovered():
            runs = _runs(url)
            failed = [
                r
                for r in runs
                if r["outcome"] == "failed"
                and (r["error"] or "").startswith("database unreachable: ")
                and outage_began <= r["started_at"] <= outage_ended
            ]
            later = [
                r
                for r in runs
                if r["outcome"] == "succeeded" and failed and r["started_at"] > max(f["started_at"] for f in failed)
            ]
            return (failed, later) if failed and {r["table_name"] for r in later} == set(purges.TABLES) else None

        failed, later = wait_until(recovered, 10, "the outage's failed purges and new successful ones in purge_run")
        recorded_after = time.monotonic() - back
        wait_until(lambda: outcomes("succeeded") and not UNRECORDED.waiting(url), 10, "every job to succeed again")
    finally:
        scheduler.shutdown(wait=True)

    assert raised == []  # no job let an exception out to the scheduler
    runs = _runs(url)
    # every failed run of the outage was written exactly once, with when it happened and who started it
    starts = [(r["table_name"], r["started_at"]) for r in runs]
    assert len(starts) == len(set(starts))
    assert {r["table_name"] for r in failed} == set(purges.TABLES)
    assert all(r["started_by"] == "scheduler" and r["started_at"] <= r["finished_at"] <= outage_ended for r in failed)
    assert not [r for r in runs if r["outcome"] == "running"]
    # one line per failed run, no traceback storm
    assert "Traceback" not in caplog.text
    assert "purge keys failed: database unreachable: OperationalError" in caplog.text
    print(
        f"outage {outage_seconds:.1f} s, {len(failed)} failed purge run(s) recorded {recorded_after:.1f} s"
        " after the database returned"
    )


# -- the in-memory queue of unrecorded runs ----------------------------------------------------------------------


def _failure(dsn: str, table: str = "keys", minutes_ago: float = 5, run_id: int | None = None) -> UnrecordedRun:
    started = datetime.now(timezone.utc) - timedelta(minutes=minutes_ago)
    return UnrecordedRun(
        dsn,
        table,
        False,
        "scheduler",
        started,
        started + timedelta(seconds=2),
        "failed",
        "database unreachable: OperationalError: connection refused",
        run_id,
    )


def test_a_kept_failure_is_written_once_and_then_forgotten(conn, database_url):
    kept = UnrecordedRuns()
    first, second = _failure(database_url, "keys", 5), _failure(database_url, "inbox", 4)
    elsewhere = _failure("postgresql://elsewhere/db")
    for run in (first, second, elsewhere):
        kept.add(run)
    assert kept.flush(conn, database_url) == 2
    assert kept.flush(conn, database_url) == 0  # gone from memory once committed
    assert kept.waiting(database_url) == [] and kept.waiting() == [elsewhere]  # only ever written where it ran
    rows = _runs(database_url)
    assert [
        (r["table_name"], r["started_at"], r["finished_at"], r["outcome"], r["error"], r["started_by"]) for r in rows
    ] == [(run.table, run.started_at, run.finished_at, "failed", run.error, "scheduler") for run in (first, second)]
    # a flush whose commit was lost with its connection writes the same runs again: nothing new
    again = UnrecordedRuns()
    again.add(first)
    assert again.flush(conn, database_url) == 1
    assert len(_runs(database_url)) == 2


def test_two_threads_flushing_at_once_write_each_run_once(database_url):
    kept = UnrecordedRuns()
    for i in range(20):
        kept.add(_failure(database_url, purges.TABLES[i % 3], minutes_ago=30 - i))
    barrier = threading.Barrier(4)

    def flush():
        with psycopg.connect(database_url, autocommit=True) as conn:
            barrier.wait()
            kept.flush(conn, database_url)

    threads = [threading.Thread(target=flush) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(_runs(database_url)) == 20
    assert kept.waiting() == []


def test_memory_keeps_the_newest_runs_only(conn, database_url, caplog):
    kept = UnrecordedRuns(limit=3)
    runs = [_failure(database_url, minutes_ago=10 - i) for i in range(5)]
    for run in runs:
        kept.add(run)
    assert kept.waiting() == runs[2:] and kept.dropped == 2
    caplog.set_level(logging.INFO, logger="idemdash.jobs.unrecorded")
    assert kept.flush(conn, database_url) == 3
    assert "2 older one(s) were not kept" in caplog.text


def test_a_failed_flush_keeps_the_runs_for_the_next_one(empty_database_url):
    kept = UnrecordedRuns()
    kept.add(_failure(empty_database_url))
    with psycopg.connect(empty_database_url, autocommit=True) as conn:  # no idemdash schema: the insert fails
        assert kept.flush(conn, empty_database_url) == 0
    assert len(kept.waiting(empty_database_url)) == 1


def test_the_next_purge_closes_a_run_that_lost_the_database_with_its_real_error(conn, database_url):
    run_id = purges_queries.insert_purge_run(conn, "keys", dry_run=False, started_by="scheduler")
    lost = UnrecordedRun(
        database_url,
        "keys",
        False,
        "scheduler",
        datetime.now(timezone.utc),
        datetime.now(timezone.utc),
        "failed",
        "AdminShutdown: terminating connection due to administrator command",
        run_id,
    )
    UNRECORDED.add(lost)
    UNRECORDED.add(_failure(database_url, "outbox"))
    config = settings.load({}, DATABASE_URL=database_url, PURGE_PAUSE_MS=0)
    assert run_purge(Target.from_settings(config), "keys", dry_run=False, started_by="test").outcome == "succeeded"
    rows = {r["run_id"]: r for r in _runs(database_url)}
    # written before the new run looked for dead runners, so not 'runner died'
    assert (rows[run_id]["outcome"], rows[run_id]["error"], rows[run_id]["finished_at"]) == (
        "failed",
        lost.error,
        lost.finished_at,
    )
    assert sorted((r["table_name"], r["outcome"]) for r in rows.values()) == [
        ("keys", "failed"),
        ("keys", "succeeded"),
        ("outbox", "failed"),
    ]
    assert UNRECORDED.waiting(database_url) == []


def test_the_flush_job_connects_only_when_runs_wait(database_url):
    target = Target.from_settings(settings.load({}, DATABASE_URL=database_url))
    assert record_unrecorded_runs(target) == "idle"
    UNRECORDED.add(_failure(database_url))
    assert record_unrecorded_runs(target) == "succeeded"
    assert [r["outcome"] for r in _runs(database_url)] == ["failed"]
    unreachable_config = settings.load({}, DATABASE_URL="postgresql://u:pw-123@127.0.0.1:9/db?connect_timeout=2")
    UNRECORDED.add(_failure(unreachable_config.database_url))
    assert record_unrecorded_runs(Target.from_settings(unreachable_config)) == "failed"
    assert len(UNRECORDED.waiting(unreachable_config.database_url)) == 1


def test_only_connection_trouble_counts_as_unreachable():
    assert unreachable(psycopg.OperationalError("connection refused"))
    assert unreachable(errors.AdminShutdown("terminating connection"))
    assert unreachable(errors.CannotConnectNow("the database system is starting up"))
    assert not unreachable(errors.QueryCanceled("statement timeout"))
    assert not unreachable(errors.LockNotAvailable("lock timeout"))
    assert not unreachable(errors.UndefinedTable("relation does not exist"))


def test_a_job_that_raises_is_logged_in_one_line_and_keeps_its_schedule(caplog):
    config = settings.load(
        {},
        DATABASE_URL="postgresql://unused/db",
        PURGE_KEYS_SCHEDULE="off",
        PURGE_INBOX_SCHEDULE="off",
        PURGE_OUTBOX_SCHEDULE="off",
    )
    scheduler = build(config, BackgroundScheduler)
    scheduler.remove_all_jobs()  # only the broken one below
    done = threading.Event()

    def broken():
        done.set()
        raise RuntimeError("a bug\nsecond line")

    scheduler.add_job(broken, "interval", seconds=60, id="broken", next_run_time=datetime.now(timezone.utc))
    scheduler.start()
    try:
        assert done.wait(10)
        last = wait_until(lambda: last_outcomes(scheduler).get("broken"), 5, "the listener")
        assert scheduler.get_job("broken").next_run_time is not None
    finally:
        scheduler.shutdown(wait=True)
    assert (last.outcome, last.error) == ("raised", "RuntimeError: a bug")
    assert "job broken raised RuntimeError: a bug; it runs again at its next time" in caplog.text
