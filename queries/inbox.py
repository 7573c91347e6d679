"""The inbox (processed-message table): volume per consumer, and the oldest row against the retention."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_all, select_one

# Consumers listed on the inbox page; totals count every consumer.
CONSUMERS_SHOWN = 200


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
    truncated: bool  # more consumers match than the limit allowed


@dataclass(frozen=True)
class InboxTotals:
    rows_1h: int
    rows_24h: int
    rows_7d: int
    oldest_processed_at: datetime | None
    oldest_age_seconds: float | None
    purge_overdue: bool
    newest_processed_at: datetime | None


def list_inbox_consumers(
    conn: psycopg.Connection,
    tables: Tables,
    *,
    retention_days: int,
    consumer: str | None = None,
    limit: int = CONSUMERS_SHOWN,
) -> ConsumerList:
    """Consumers by name (those whose name contains ``consumer``, case-insensitive), at most ``limit``."""
    return bounded_consumers(
        list_inbox_consumer_rows(conn, tables, retention_days=retention_days, consumer=consumer, limit=limit), limit
    )


def list_inbox_consumer_rows(
    conn: psycopg.Connection,
    tables: Tables,
    *,
    retention_days: int,
    consumer: str | None = None,
    limit: int = CONSUMERS_SHOWN,
) -> list[ConsumerVolume]:
    """Up to ``limit`` + 1 consumers: the rows behind ``list_inbox_consumers`` (what the rollup stores)."""
    return select_all(
        conn,
        statement("list_inbox_consumers", tables),
        {"retention_days": retention_days, "consumer": consumer, "limit": limit + 1},
        ConsumerVolume,
    )


def bounded_consumers(rows: list[ConsumerVolume], limit: int = CONSUMERS_SHOWN) -> ConsumerList:
    return ConsumerList(rows[:limit], len(rows) > limit)


def get_inbox_totals(conn: psycopg.Connection, tables: Tables, *, retention_days: int) -> InboxTotals:
    row = select_one(conn, statement("get_inbox_totals", tables), {"retention_days": retention_days}, InboxTotals)
    assert row is not None  # an aggregate without GROUP BY always answers one row
    return row
