"""The rollup job: recompute the aggregates pages cannot count live at scale (queries/rollups.py), each on its
interval (longer for a costly one: ``rollups.interval_seconds``), the most overdue first, and store their rows in
``idemdash.rollup``.

One writer at a time across scheduler replicas (advisory lock); a rollup another replica refreshed recently is
left alone. Each computation runs in its own READ ONLY transaction with a long statement timeout (it reads up
to the whole keys table once, instead of every page view doing it), and is written in a short transaction.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone

import psycopg
from apscheduler.schedulers.base import BaseScheduler

from idemdash.core.settings import Settings
from idemdash.jobs.failures import already_logged, describe_error, describe_failure, lost
from idemdash.jobs.job_ids import job_id
from idemdash.queries import Tables, rollup_store, rollups, statement
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

JOB_ID = "rollups"
INTERVAL_SECONDS = 60
STATEMENT_TIMEOUT_MS = 120_000
# recompute a little before the interval is up, so a job that runs every 60 s refreshes a 60 s rollup every time
SLACK_SECONDS = 5
# a round goes on while something is due, but starts nothing new after this long: the job's next run (every
# INTERVAL_SECONDS, at once after a longer round) goes on from the most overdue
ROUND_SECONDS = 45


def run_rollups(target: Target, *, force: bool = False) -> dict[str, float]:
    """Recompute the rollups that are due (all of them first with ``force``), the most overdue first, until none
    is due: a cheap rollup that comes due again while a costly one computes goes next, so the costly ones at 100M
    keys (a minute each) do not leave the 60 s ones stale behind them. Nothing new starts after ROUND_SECONDS
    (the next run goes on). Returns {name:variant: milliseconds} (the last time, for one computed twice)."""
    done: dict[str, float] = {}
    with target.connect("idemdash-rollups") as conn:
        if not rollup_store.try_rollup_lock(conn):
            log.debug("another replica is computing rollups; skipped")
            return done
        try:
            failed: set[tuple[str, str]] = set()
            if force:
                for rollup, variant in _due(list(rollup_store.list_rollup_ages(conn)), target.settings, True):
                    _compute_one(conn, target, rollup, variant, done, failed)
            deadline = time.monotonic() + ROUND_SECONDS
            while time.monotonic() < deadline:
                due = [
                    (r, v)
                    for r, v in _due(list(rollup_store.list_rollup_ages(conn)), target.settings, False)
                    if (r.name, v) not in failed
                ]
                if not due:
                    break
                _compute_one(conn, target, *due[0], done, failed)
        finally:
            if not lost(conn):  # a lost connection took the lock with it
                rollup_store.release_rollup_lock(conn)
    return done


def _compute_one(
    conn: psycopg.Connection,
    target: Target,
    rollup: rollups.Rollup,
    variant: str,
    done: dict[str, float],
    failed: set[tuple[str, str]],
) -> None:
    """One rollup computed and stored into ``done``; one that fails is logged and left for the next round."""
    try:
        done[f"{rollup.name}:{variant}"] = _compute_and_store(conn, target.tables, target.settings, rollup, variant)
    except psycopg.Error as exc:
        if lost(conn):
            raise  # the database went away: the rest would fail the same way, one line each
        log.warning("rollup %s:%s skipped: %s", rollup.name, variant, describe_error(exc, target.dsn))
        failed.add((rollup.name, variant))


def _due(ages: list[rollup_store.RollupAge], config: Settings, force: bool) -> list[tuple[rollups.Rollup, str]]:
    """The (rollup, variant) pairs to recompute now, the most overdue for its interval first (never computed
    before all): each is due once its age reaches its interval, which grows with what computing it costs
    (``rollups.interval_seconds``), so a round that meets a 40 s rollup still refreshes the cheap ones first."""
    stored = {(a.name, a.variant): a for a in ages}
    due: list[tuple[float, rollups.Rollup, str]] = []
    for rollup in (r for r in rollups.ROLLUPS.values() if rollups.applies(r, config)):
        for variant in rollup.variants(config):
            age = stored.get((rollup.name, variant))
            if age is None:
                due.append((float("inf"), rollup, variant))
                continue
            interval = rollups.interval_seconds(rollup, age.duration_ms)
            if force or age.age_seconds >= interval - SLACK_SECONDS:
                due.append((age.age_seconds / interval, rollup, variant))
    return [(rollup, variant) for _, rollup, variant in sorted(due, key=lambda d: -d[0])]


def _compute_and_store(
    conn: psycopg.Connection, tables: Tables, config: Settings, rollup: rollups.Rollup, variant: str
) -> float:
    with conn.transaction():
        conn.execute(statement("set_read_only"))
        conn.execute(statement("set_serial"))  # in the background: one core, whatever the aggregate
        conn.execute(statement("set_statement_timeout"), {"ms": str(STATEMENT_TIMEOUT_MS)})
        computed_at = rollup_store.get_clock(conn)
        started = time.perf_counter()
        rows = rollup.fetch(conn, tables, config, variant)
        elapsed_ms = (time.perf_counter() - started) * 1000
    with conn.transaction():
        conn.execute(statement("set_lock_timeout"), {"ms": str(config.lock_timeout_ms)})
        rollup_store.upsert_rollup(conn, rollup.name, variant, computed_at, elapsed_ms, rows)
    return elapsed_ms


def rollup_job(target: Target) -> str:
    """The scheduled entry point: a failed run is logged (one line) and the next one tries again.

    Returns 'succeeded' or 'failed'. Pages keep showing the last stored rollup, with its age, meanwhile.
    """
    try:
        run_rollups(target)
    except psycopg.Error as exc:
        # an outage: the target logged its cause once; a line per run would repeat it every interval
        say = log.debug if already_logged(exc, target.problems) else log.warning
        say("rollups skipped: %s", describe_failure(exc, target.dsn))
        return "failed"
    return "succeeded"


def register(scheduler: BaseScheduler, target: Target) -> None:
    scheduler.add_job(
        rollup_job,
        "interval",
        seconds=INTERVAL_SECONDS,
        id=job_id(JOB_ID, target),
        name="rollups",
        args=[target],
        replace_existing=True,
        next_run_time=datetime.now(timezone.utc),
    )
