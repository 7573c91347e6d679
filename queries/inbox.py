"""The inbox (processed-message table): volume per consumer, and the oldest row against the retention."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from queries import Tables, statement
from queries.db import select_all, select_one


@dataclass(frozen=True)
class ConsumerVolume:
    consumer_name: str
    rows_1h: int
    rows_24h: int
    rows_7d: int
    oldest_processed_at: datetime | None
    oldest_age_seconds: float | None
    purge_overdue: bool
    newest_processed_at: datetime | None
    newest_age_seconds: float | None


@dataclass(frozen=True)
class ConsumerList:
    items: list[ConsumerVolume]
    truncated: bool     # more consumers match than the limit allowed


@dataclass(frozen=True)
class InboxTotals:
    rows_1h: int
    rows_24h: int
    rows_7d: int
    oldest_processed_at: datetime | None
    oldest_age_seconds: float | None
    purge_overdue: bool
    newest_processed_at: datetime | None


def list_inbox_consumers(conn: psycopg.Connection, tables: Tables, *, retention_days: int,
                         consumer: str | None = None, limit: int = 200) -> ConsumerList:
    """Consumers by name (those whose name contains ``consumer``, case-insensitive), at most ``limit``."""
    rows = select_all(conn, statement("list_inbox_consumers", tables),
                      {"retention_days": retention_days, "consumer": consumer, "limit": limit + 1}, ConsumerVolume)
    return ConsumerList(rows[:limit], len(rows) > limit)


def get_inbox_totals(conn: psycopg.Connection, tables: Tables, *, retention_days: int) -> InboxTotals:
    row = select_one(conn, statement("get_inbox_totals", tables), {"retention_days": retention_days}, InboxTotals)
    assert row is not None  # an aggregate without GROUP BY always answers one row
    return row
