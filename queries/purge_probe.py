"""What a purge run's governor reads of the application (``jobs/probe.py``): one look at its backends in
``pg_stat_activity``, and what the governor saw and did, recorded on the run."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.rows import class_row

from idemdash.queries import statement


@dataclass(frozen=True)
class ApplicationLook:
    """The application's backends at one moment: running a statement, of them waiting for the WAL, for a lock the
    purge holds, and the longest-waiting one's statement time so far (ms)."""

    active: int
    wal_waits: int
    lock_waits: int
    longest_ms: float


@dataclass(frozen=True)
class Pacing:
    """What a run's governor saw and did (``jobs.pacing``)."""

    latency_budget: float
    baseline_ms: float | None  # the application's waits between batches (90th percentile of the longest per look)
    p99_ms: float | None  # the same while batches ran
    probes: int  # looks at pg_stat_activity
    backoffs: int  # all of them, lock_backoffs included
    batch_size: int  # where the run ended
    duty_cycle: float  # percent
    app_backends: int = 0  # the most application statements seen running at once (0: nobody there)
    lock_backoffs: int = 0  # backoffs for an application statement waiting on the purge's lock


def look_at_application(conn: psycopg.Connection, purge_pids: list[int]) -> ApplicationLook:
    with conn.cursor(row_factory=class_row(ApplicationLook)) as cur:
        row = cur.execute(statement("look_at_application"), {"purge_pids": purge_pids}).fetchone()
    assert row is not None
    return row


def record_pacing(conn: psycopg.Connection, run_id: int, pacing: Pacing) -> None:
    conn.execute(
        statement("record_purge_pacing"),
        {
            "run_id": run_id,
            "latency_budget": pacing.latency_budget,
            "baseline_ms": pacing.baseline_ms,
            "p99_ms": pacing.p99_ms,
            "probes": pacing.probes,
            "backoffs": pacing.backoffs,
            "batch_size": pacing.batch_size,
            "duty_cycle": pacing.duty_cycle,
            "app_backends": pacing.app_backends,
            "lock_backoffs": pacing.lock_backoffs,
        },
    )
