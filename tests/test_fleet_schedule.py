"""How one scheduler spreads a fleet's jobs (jobs/fleet_schedule.py): a fixed offset per database within the spread
and half the period, `every <duration>` schedules aligned across processes, and scheduled purges that lose to another
scheduler recording nothing."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from idemdash.core import settings
from idemdash.core.settings import ConfigError
from idemdash.jobs.fleet_schedule import OffsetTrigger, offset_seconds
from idemdash.jobs.purge_run import run_purge
from idemdash.jobs.purges import register, schedule_trigger
from idemdash.queries import purges
from idemdash.queries.target import Target
from tests.test_purges import add_expired

NOW = datetime(2026, 3, 2, 10, 0, 7, tzinfo=timezone.utc)


def _target(name: str, **overrides) -> Target:
    return Target.from_settings(settings.load({}, DATABASE_URL="postgresql://unused/db", **overrides), name)


def test_offsets_are_stable_spread_and_within_the_limit():
    offsets = [offset_seconds(f"orders/orders_{i}", "purge_keys", 300) for i in range(200)]
    assert offsets == [offset_seconds(f"orders/orders_{i}", "purge_keys", 300) for i in range(200)]
    assert all(0 <= o < 300 for o in offsets) and len({int(o) for o in offsets}) > 100
    assert offset_seconds("default", "purge_keys", 300) == 0 and offset_seconds("x", "purge_keys", 0) == 0


def test_a_fleet_members_purge_fires_at_its_offset_after_the_schedule_within_half_the_period():
    scheduler = BackgroundScheduler(timezone=timezone.utc)
    register(scheduler, _target("orders/a", PURGE_KEYS_SCHEDULE="*/15 * * * *", FLEET_JOB_SPREAD_SECONDS=300))
    register(scheduler, _target("orders/b", PURGE_KEYS_SCHEDULE="every 10s", FLEET_JOB_SPREAD_SECONDS=300))
    a, b = scheduler.get_job("purge_keys@orders/a"), scheduler.get_job("purge_keys@orders/b")
    assert isinstance(a.trigger, OffsetTrigger)
    fire = a.trigger.get_next_fire_time(None, NOW)
    due = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc) + a.trigger.offset  # the 10:00 run, a little later
    assert fire == (due if due > NOW else due.replace(minute=15))
    assert a.trigger.offset.total_seconds() == pytest.approx(offset_seconds("orders/a", "purge_keys", 300))
    assert a.trigger.get_next_fire_time(fire, fire).timestamp() - fire.timestamp() == 900
    assert a.kwargs == {"once_per_seconds": 450}
    assert 0 < b.trigger.offset.total_seconds() < 5 and b.kwargs == {"once_per_seconds": 5}  # half of every 10s
    # the same fire times in any process: multiples of 10 s since 2000-01-01, plus the offset
    assert (b.trigger.get_next_fire_time(None, NOW) - b.trigger.offset).timestamp() % 10 == 0


@pytest.mark.parametrize("raw", ["every 0s", "every 1.5s", "every soon"])
def test_a_bad_every_schedule_is_refused(raw):
    with pytest.raises(ConfigError, match=r"^IDEMDASH_PURGE_KEYS_SCHEDULE: expected a crontab line"):
        settings.load({"IDEMDASH_PURGE_KEYS_SCHEDULE": raw})
    assert (
        schedule_trigger(settings.load({"IDEMDASH_PURGE_KEYS_SCHEDULE": " every  2m "}), "keys").interval_length == 120
    )


def test_scheduled_runs_that_lose_the_lock_or_come_second_in_a_period_record_nothing(database_url):
    target = Target.from_settings(settings.load({}, DATABASE_URL=database_url, PURGE_PAUSE_MS=0))
    with psycopg.connect(database_url, autocommit=True) as conn:
        add_expired(conn, 10)
        holder = psycopg.connect(database_url, autocommit=True)
        try:
            assert purges.try_purge_lock(holder, "keys")
            lost = run_purge(target, "keys", dry_run=False, started_by="scheduler", once_per_seconds=60)
            by_person = run_purge(target, "keys", dry_run=False, started_by="cli:me")
        finally:
            pid = holder.info.backend_pid
            holder.close()
        # the lock goes with the holder's backend, which exits after the close returns: wait for it
        deadline = time.monotonic() + 10
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the lock holder's backend never exited"
            time.sleep(0.01)
        first = run_purge(target, "keys", dry_run=False, started_by="scheduler", once_per_seconds=60)
        second = run_purge(target, "keys", dry_run=False, started_by="scheduler", once_per_seconds=60)
        rows = conn.execute("SELECT started_by, outcome FROM idemdash.purge_run ORDER BY run_id").fetchall()
    assert (lost.outcome, lost.run_id) == ("skipped", None)
    assert by_person.outcome == "skipped" and by_person.run_id is not None  # a person's skip is still recorded
    assert (first.outcome, first.rows) == ("succeeded", 10)
    assert (second.outcome, second.run_id) == ("skipped", None)
    assert rows == [("cli:me", "skipped"), ("scheduler", "succeeded")]
