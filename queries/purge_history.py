"""Purge-run history as `/purges` shows it: the list, the runs in progress, each table's latest runs.

The runs themselves are written by the purge engine (``jobs/purge_run.py``);
this module only reads ``idemdash.purge_run``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from idemdash.queries import cursor, statement
from idemdash.queries.cursor import Page
from idemdash.queries.transactions import select_all

_BAD_CURSOR = "cursor is not valid: use the next_cursor value from the previous page"


@dataclass(frozen=True)
class PurgeRun:
    run_id: int
    table_name: str
    started_at: datetime
    finished_at: datetime | None
    batches: int
    rows_deleted: int
    dry_run: bool
    outcome: str
    error: str | None
    started_by: str
    duration_seconds: float | None
    method: str | None = None  # 'due_index', 'heap' or 'primary_key' (runs before issue 13: None)
    partitions_dropped: int = 0
    cancel_requested_by: str | None = None  # who asked the run to stop after its current batch
    # what its governor saw and did (jobs.latency; None: it never watched the application)
    latency_budget: float | None = None
    probe_baseline_ms: float | None = None
    probe_p99_ms: float | None = None
    probes: int | None = None
    backoffs: int | None = None
    final_batch_size: int | None = None
    final_duty_cycle: float | None = None
    app_backends: int | None = None  # the most application statements its governor saw at once (0: nobody)
    lock_backoffs: int | None = None  # of its backoffs, those for a lock the purge held

    @property
    def rate(self) -> float | None:
        """Rows a second so far (dry run: counted), or None before there is anything to divide."""
        if not self.duration_seconds or not self.rows_deleted:
            return None
        return self.rows_deleted / self.duration_seconds


@dataclass(frozen=True)
class _KindRun(PurgeRun):
    table_key: str = ""
    kind: str = ""


@dataclass(frozen=True)
class TableRuns:
    """One table's latest run of any kind, latest real (not skipped) run, latest successful real purge and
    latest successful dry run."""

    table: str
    last_run: PurgeRun | None = None
    last_real_run: PurgeRun | None = None
    last_success: PurgeRun | None = None
    last_dry_run: PurgeRun | None = None


@dataclass(frozen=True)
class PurgeRunFilter:
    table: str | None = None
    run_id: int | None = None
    outcome: str | None = None  # 'running', or how the run ended
    started_by: str | None = None  # a person's name, or 'scheduler'


def list_purge_runs(
    conn: psycopg.Connection, flt: PurgeRunFilter = PurgeRunFilter(), *, after: str | None = None, limit: int = 50
) -> Page[PurgeRun]:
    """One page of runs, newest first; ``after`` is the previous page's next_cursor (ValueError if malformed)."""
    params: dict[str, Any] = {
        "table": flt.table,
        "run_id": flt.run_id,
        "outcome": flt.outcome,
        "started_by": flt.started_by,
        "limit": limit + 1,
        "has_cursor": after is not None,
        "c_ts": None,
        "c_id": None,
    }
    if after is not None:
        ts, run_id = cursor.decode(after, 2)
        params["c_ts"] = cursor.parse_time(ts)
        if params["c_ts"] is None or not isinstance(run_id, int) or isinstance(run_id, bool):
            raise ValueError(_BAD_CURSOR)
        params["c_id"] = run_id
    rows = select_all(conn, statement("list_purge_runs"), params, PurgeRun)
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = cursor.encode([rows[-1].started_at, rows[-1].run_id])
    return Page(rows, next_cursor)


def list_running_purge_runs(conn: psycopg.Connection, limit: int = 50) -> list[PurgeRun]:
    return select_all(conn, statement("list_running_purge_runs"), {"limit": limit}, PurgeRun)


def list_purge_table_runs(conn: psycopg.Connection, tables: tuple[str, ...]) -> dict[str, TableRuns]:
    """Each table's latest runs, keyed by table (every table present, with None for runs it never had)."""
    rows = select_all(conn, statement("list_purge_table_runs"), {"tables": list(tables)}, _KindRun)
    found: dict[str, dict[str, PurgeRun]] = {t: {} for t in tables}
    for row in rows:
        found[row.table_key][row.kind] = PurgeRun(**{f: getattr(row, f) for f in PurgeRun.__dataclass_fields__})
    return {t: TableRuns(t, **runs) for t, runs in found.items()}


def get_purge_run(conn: psycopg.Connection, run_id: int) -> PurgeRun | None:
    page = list_purge_runs(conn, PurgeRunFilter(run_id=run_id), limit=1)
    return page.items[0] if page.items else None


@dataclass(frozen=True)
class _StatusRow(PurgeRun):
    failures_24h: int = 0
    last_success_at: datetime | None = None


@dataclass(frozen=True)
class PurgeTableStatus:
    """One table's purges as the all-databases purges view shows them."""

    table_name: str
    last_run: PurgeRun
    failures_24h: int  # runs that failed in the last 24 hours
    last_success_at: datetime | None  # when the latest real purge that succeeded finished


def list_purge_table_status(conn: psycopg.Connection) -> list[PurgeTableStatus]:
    """Every table purges ever ran on, by name: its latest run, its failures in the last 24 h, its last success."""
    rows = select_all(conn, statement("list_purge_table_status"), None, _StatusRow)
    return [
        PurgeTableStatus(
            row.table_name,
            PurgeRun(**{f: getattr(row, f) for f in PurgeRun.__dataclass_fields__}),
            row.failures_24h,
            row.last_success_at,
        )
        for row in rows
    ]
