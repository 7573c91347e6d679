"""The scheduler: the three purge jobs on their configured crontab schedules, bad schedules refused by name,
jobs that run for real in a started scheduler, and a failing job that leaves the scheduler running.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger

from idemdash.core import settings
from idemdash.core.settings import ConfigError
from idemdash.jobs import purges
from idemdash.jobs.scheduler import build
from idemdash.queries.target import Target

PURGE_JOBS = {"purge_keys", "purge_inbox", "purge_outbox"}
# jobs registered next to the purges by other features
OTHER_JOBS = {"snapshot", "rollups"}
AT = datetime(2026, 3, 2, 10, 1, 30, tzinfo=timezone.utc)  # a Monday


def _next(job_or_trigger, now=AT):
    trigger = getattr(job_or_trigger, "trigger", job_or_trigger)
    return trigger.get_next_fire_time(None, now)


def test_build_registers_the_three_purge_jobs_on_their_default_schedules():
    config = settings.load({}, DATABASE_URL="postgresql://unused/db")
    scheduler = build(config, BackgroundScheduler)
    jobs = {job.id: job for job in scheduler.get_jobs()}
    # other features (snapshots, ...) add their own jobs beside these
    assert {job_id for job_id in jobs if job_id.startswith("purge")} == PURGE_JOBS
    assert jobs["purge_keys"].func is purges.purge_keys
    assert jobs["purge_inbox"].func is purges.purge_inbox
    assert jobs["purge_outbox"].func is purges.purge_outbox
    for job_id in PURGE_JOBS:
        assert isinstance(jobs[job_id].trigger, CronTrigger)
        assert [target.settings for target in jobs[job_id].args] == [config]
    # */15 * * * *, 7 * * * *, 37 * * * *, in UTC
    assert _next(jobs["purge_keys"]) == datetime(2026, 3, 2, 10, 15, tzinfo=timezone.utc)
    assert _next(jobs["purge_inbox"]) == datetime(2026, 3, 2, 10, 7, tzinfo=timezone.utc)
    assert _next(jobs["purge_outbox"]) == datetime(2026, 3, 2, 10, 37, tzinfo=timezone.utc)


def test_schedules_come_from_the_environment_and_off_leaves_a_job_out():
    config = settings.load(
        {
            "IDEMDASH_PURGE_KEYS_SCHEDULE": "5 3 * * sat",
            "IDEMDASH_PURGE_INBOX_SCHEDULE": " OFF ",
            "IDEMDASH_PURGE_OUTBOX_SCHEDULE": "0   */2 * * *",
        },
        DATABASE_URL="postgresql://unused/db",
    )
    assert (config.purge_keys_schedule, config.purge_inbox_schedule, config.purge_outbox_schedule) == (
        "5 3 * * sat",
        "off",
        "0 */2 * * *",
    )
    jobs = {job.id: job for job in build(config, BackgroundScheduler).get_jobs()}
    assert "purge_inbox" not in jobs
    assert _next(jobs["purge_keys"]) == datetime(2026, 3, 7, 3, 5, tzinfo=timezone.utc)  # Saturday 03:05 UTC
    assert _next(jobs["purge_outbox"]) == datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "raw",
    [
        "every 15 minutes",
        "*/15 * * *",
        "61 * * * *",
        "* * * * * *",
        "",
        "0 25 * * *",
        "0 3 * * 6",
        "0 3 * * 1-5",
        "0 3 * * */2",
        "0 3 * * fri-mon",
    ],
)
def test_a_bad_schedule_in_the_environment_is_refused_naming_the_variable(raw):
    with pytest.raises(ConfigError) as caught:
        settings.load({"IDEMDASH_PURGE_OUTBOX_SCHEDULE": raw})
    assert str(caught.value).startswith("IDEMDASH_PURGE_OUTBOX_SCHEDULE: expected a crontab line")


def test_weekday_numbers_are_refused_because_apscheduler_counts_from_monday():
    # crontab's 6 is Saturday; APScheduler 3 would read it as Sunday
    with pytest.raises(ConfigError, match="weekdays as names"):
        settings.load({"IDEMDASH_PURGE_KEYS_SCHEDULE": "0 3 * * 6"})
    config = settings.load({"IDEMDASH_PURGE_KEYS_SCHEDULE": "0 3 * * mon-fri"}, DATABASE_URL="postgresql://x/y")
    (job,) = [j for j in build(config, BackgroundScheduler).get_jobs() if j.id == "purge_keys"]
    saturday = datetime(2026, 3, 7, 12, 0, tzinfo=timezone.utc)
    assert _next(job, saturday) == datetime(2026, 3, 9, 3, 0, tzinfo=timezone.utc)  # Monday


def test_a_bad_schedule_given_as_an_override_is_refused_when_the_scheduler_is_built():
    # overrides skip the parser (tests and the demo pass values directly), so build() checks again
    config = settings.load({}, DATABASE_URL="postgresql://unused/db", PURGE_KEYS_SCHEDULE="*/15 * *")
    with pytest.raises(ConfigError, match=r"^IDEMDASH_PURGE_KEYS_SCHEDULE: .*'\*/15 \* \*'"):
        build(config, BackgroundScheduler)


def test_a_started_scheduler_runs_a_purge_job_against_the_database(conn, database_url):
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
        " created_at, expires_at) SELECT 's', g::text, 'h', 'succeeded', now() - interval '2 days',"
        " now() - interval '1 day' FROM generate_series(1, 25) g"
    )
    config = settings.load({}, DATABASE_URL=database_url, PURGE_PAUSE_MS=0, PURGE_BATCH_SIZE=10)
    scheduler = build(config, BackgroundScheduler)
    done = threading.Event()
    scheduler.add_listener(
        lambda event: done.set() if event.job_id == "purge_keys" else None, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR
    )
    scheduler.start()
    try:
        scheduler.get_job("purge_keys").modify(next_run_time=datetime.now(timezone.utc))
        assert done.wait(15)
    finally:
        scheduler.shutdown(wait=True)
    row = conn.execute(
        "SELECT table_name, outcome, batches, rows_deleted, started_by FROM idemdash.purge_run"
        " WHERE table_name = 'keys'"
    ).fetchone()
    assert row == ("keys", "succeeded", 3, 25, "scheduler")
    assert conn.execute("SELECT count(*) FROM app.idempotency_request").fetchone()[0] == 0


def test_a_failing_purge_job_is_logged_and_the_scheduler_keeps_running(caplog):
    config = settings.load({}, DATABASE_URL="postgresql://bob:hunter2-secret@127.0.0.1:9/app?connect_timeout=2")
    # the job function itself returns the failure instead of raising
    result = purges.purge_outbox(Target.from_settings(config))
    assert result is not None and result.outcome == "failed" and "hunter2-secret" not in result.error

    scheduler = build(config, BackgroundScheduler)
    events = []
    finished = threading.Event()

    def listen(event):
        if event.job_id == "purge_inbox":
            events.append(event)
            finished.set()

    scheduler.add_listener(listen, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    scheduler.start()
    try:
        scheduler.get_job("purge_inbox").modify(next_run_time=datetime.now(timezone.utc))
        assert finished.wait(15)
        assert scheduler.running
        assert {job.id for job in scheduler.get_jobs()} >= PURGE_JOBS  # still scheduled for next time
    finally:
        scheduler.shutdown(wait=True)
    assert events[0].code == EVENT_JOB_EXECUTED and events[0].exception is None
    assert events[0].retval.outcome == "failed" and events[0].retval.run_id is None
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "idemdash.jobs.purge_run")
    assert "purge inbox failed: database unreachable: OperationalError" in logged
    assert "hunter2-secret" not in caplog.text


def test_a_purge_job_that_cannot_even_start_does_not_raise(caplog):
    # a value no parser would let through, slipped in as an override: logged, the scheduler thread survives
    config = settings.load({}, DATABASE_URL="postgresql://unused/db", PURGE_BATCH_SIZE=0)
    assert purges.purge_keys(Target.from_settings(config)) is None
    assert "scheduled purge of keys could not run" in caplog.text
    assert "IDEMDASH_PURGE_BATCH_SIZE" in caplog.text


def test_the_job_functions_are_named_after_their_tables():
    assert {table: job.__name__ for table, job in purges.JOBS.items()} == {
        "keys": "purge_keys",
        "inbox": "purge_inbox",
        "outbox": "purge_outbox",
    }
    assert tuple(purges.JOBS) == purges.TABLES
