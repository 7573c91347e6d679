"""The overview's headline numbers: one function per panel, one SQL block each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Annotated

import psycopg
from pydantic import Field

from idemdash.queries import Tables, statement
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS, OutboxSummary
from idemdash.queries.purge_history import PurgeRun
from idemdash.queries.transactions import select_all, select_one


@dataclass(frozen=True)
class ProcessingCounts:
    stuck: int
    processing: int
    needs_review: int
    oldest_stuck_lease: datetime | None


@dataclass(frozen=True)
class WindowCounts:
    failed_retryable: int
    failed_final: int
    failed_final_24h: int
    succeeded_24h: int


@dataclass(frozen=True)
class KeyCounts:
    stuck: Annotated[int, Field(description="Processing keys whose lease ran out (definitions.stuck).")]
    processing: Annotated[int, Field(description="Every key in status processing, stuck or not.")]
    needs_review: Annotated[int, Field(description="Processing keys held for review by an operator.")]
    failed_retryable: int
    failed_final_24h: int
    succeeded_24h: int
    oldest_stuck_lease: Annotated[
        datetime | None, Field(description="When the oldest stuck key's lease ended, or null.")
    ]

    @classmethod
    def combine(cls, live: ProcessingCounts, window: WindowCounts) -> KeyCounts:
        return cls(
            live.stuck,
            live.processing,
            live.needs_review,
            window.failed_retryable,
            window.failed_final_24h,
            window.succeeded_24h,
            live.oldest_stuck_lease,
        )


@dataclass(frozen=True)
class OutboxBacklog:
    pending: int  # every pending row, likely poison included
    oldest_pending_at: datetime | None
    lag_seconds: Annotated[
        float | None,
        Field(
            description="The publisher's lag: age of the oldest pending row that is not "
            "likely poison, or null when there is none."
        ),
    ]
    poison: Annotated[
        int, Field(description="Likely poison rows: pending with 3 or more delivery attempts, counted apart.")
    ]
    oldest_poison_at: datetime | None
    poison_oldest_seconds: Annotated[
        float | None, Field(description="Age of the oldest likely poison row, or null when none.")
    ]


@dataclass(frozen=True)
class ScopeStuck:
    scope: str
    stuck: int


@dataclass(frozen=True)
class InboxVolume:
    rows_24h: int
    consumers_24h: int


def count_processing_keys(conn: psycopg.Connection, tables: Tables, lease_seconds: int) -> ProcessingCounts:
    row = select_one(
        conn, statement("count_processing_keys", tables), {"lease_seconds": lease_seconds}, ProcessingCounts
    )
    assert row is not None
    return row


def count_keys_by_window(conn: psycopg.Connection, tables: Tables) -> WindowCounts:
    row = select_one(conn, statement("count_keys_by_window", tables), None, WindowCounts)
    assert row is not None
    return row


def count_keys_by_state(conn: psycopg.Connection, tables: Tables, lease_seconds: int) -> KeyCounts:
    """Every headline key count: the live processing counts and the counts by status and window."""
    return KeyCounts.combine(count_processing_keys(conn, tables, lease_seconds), count_keys_by_window(conn, tables))


def get_outbox_backlog(conn: psycopg.Connection, tables: Tables) -> OutboxBacklog:
    """The backlog, its lag without the likely poison rows, and those counted apart (the definition /outbox uses)."""
    row = select_one(
        conn, statement("get_outbox_backlog", tables), {"min_attempts": POISON_MIN_ATTEMPTS}, OutboxBacklog
    )
    assert row is not None
    return row


def get_inbox_volume(conn: psycopg.Connection, tables: Tables) -> InboxVolume:
    row = select_one(conn, statement("get_inbox_volume", tables), None, InboxVolume)
    assert row is not None
    return row


def count_stuck_keys_by_scope(
    conn: psycopg.Connection, tables: Tables, lease_seconds: int, limit: int = 500
) -> list[ScopeStuck]:
    """Stuck keys per scope, the first ``limit`` scopes by name (the snapshot job records them for /metrics)."""
    return select_all(
        conn,
        statement("count_stuck_keys_by_scope", tables),
        {"lease_seconds": lease_seconds, "limit": limit},
        ScopeStuck,
    )


def list_recent_purge_runs(conn: psycopg.Connection, limit: int = 5) -> list[PurgeRun]:
    return select_all(conn, statement("list_recent_purge_runs"), {"limit": limit}, PurgeRun)


def summarize_backlog(b: OutboxBacklog, computed_at: datetime) -> OutboxSummary:
    """The outbox page's backlog numbers from the overview's (get_outbox_backlog, which the rollup job stores at
    scale): its ages as of now, from the times of its oldest rows (``computed_at``: when it was read)."""
    now = datetime.now(timezone.utc)
    oldest_healthy_at = computed_at - timedelta(seconds=b.lag_seconds) if b.lag_seconds is not None else None

    def age(at: datetime | None) -> float | None:
        return (now - at).total_seconds() if at is not None else None

    return OutboxSummary(
        pending=b.pending,
        oldest_pending_at=b.oldest_pending_at,
        lag_seconds=age(oldest_healthy_at),
        pending_many_attempts=b.poison,
        oldest_healthy_at=oldest_healthy_at,
        healthy_lag_seconds=age(oldest_healthy_at),
        oldest_poison_at=b.oldest_poison_at,
        poison_oldest_seconds=age(b.oldest_poison_at),
    )
