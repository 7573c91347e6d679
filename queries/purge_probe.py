"""The latency pacer's probe (``jobs/probe.py``): a tiny write and commit on a row of its own in
``idemdash.purge_probe``, timed between and during a purge's batches, and what the pacer measured, recorded on
the run."""
from __future__ import annotations

from dataclasses import dataclass

import psycopg

from idemdash.queries import statement


@dataclass(frozen=True)
class Pacing:
    """What a run's latency pacer measured (``jobs.pacing``)."""

    latency_budget: float
    baseline_ms: float | None      # the probe's p99 while idemdash was idle
    p99_ms: float | None           # its p99 while the run worked
    probes: int
    backoffs: int
    batch_size: int                # where the run ended
    duty_cycle: float              # percent


def start_probe(conn: psycopg.Connection, run_id: int) -> None:
    conn.execute(statement("start_purge_probe"), {"run_id": run_id})


def probe(conn: psycopg.Connection, run_id: int) -> None:
    """One probe; ``conn`` is in autocommit, so this is the write and its commit."""
    conn.execute(statement("purge_probe"), {"run_id": run_id})


def end_probe(conn: psycopg.Connection, run_id: int) -> None:
    conn.execute(statement("end_purge_probe"), {"run_id": run_id})


def record_pacing(conn: psycopg.Connection, run_id: int, pacing: Pacing) -> None:
    conn.execute(statement("record_purge_pacing"),
                 {"run_id": run_id, "latency_budget": pacing.latency_budget, "baseline_ms": pacing.baseline_ms,
                  "p99_ms": pacing.p99_ms, "probes": pacing.probes, "backoffs": pacing.backoffs,
                  "batch_size": pacing.batch_size, "duty_cycle": pacing.duty_cycle})
