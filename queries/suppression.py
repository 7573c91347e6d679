"""Suppression numbers (docs/concepts.md, Suppression): per scope, keys created in a window that ran once vs were
retried."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_all

WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}


@dataclass(frozen=True)
class ScopeSuppression:
    is_total: bool
    scope: str | None  # None on the totals row
    scopes: int  # 1 per scope row; on the totals row, how many scopes had keys in the window
    keys: int  # keys created in the window
    first_attempt: int  # attempt_count = 1
    retried: int  # attempt_count > 1
    retried_pct: float | None  # retried / keys * 100; None when there are no keys
    total_attempts: int  # sum(attempt_count)
    extra_attempts: int  # sum(attempt_count) - keys
    max_attempts: int | None
    succeeded: int  # status now, not at the end of the window
    failed_final: int
    processing: int
    failed_retryable: int
    since: datetime


@dataclass(frozen=True)
class Suppression:
    since: datetime
    scopes: list[ScopeSuppression]
    more: bool  # scopes past the limit (still in the totals)
    totals: ScopeSuppression


def list_suppression_rows(
    conn: psycopg.Connection, tables: Tables, window: timedelta, limit: int = 200
) -> list[ScopeSuppression]:
    """One row per scope (at most ``limit``), then the totals row (what the rollup stores)."""
    return select_all(
        conn, statement("list_suppression_by_scope", tables), {"window": window, "limit": limit}, ScopeSuppression
    )


def assemble_suppression(rows: list[ScopeSuppression]) -> Suppression:
    *scopes, totals = rows
    assert totals.is_total and not any(r.is_total for r in scopes)
    return Suppression(since=totals.since, scopes=scopes, more=totals.scopes > len(scopes), totals=totals)
