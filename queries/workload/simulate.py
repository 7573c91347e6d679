"""Statements only the workload simulator runs: its outbox writes, its publisher, and the history backfill.

The claim / complete / fail / consume calls themselves go through
``queries.app_schema``, exactly as an application would make them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from idemdash.queries import Tables
from idemdash.queries.transactions import select_all, select_one
from idemdash.queries.workload import statement


@dataclass(frozen=True)
class PendingEvent:
    outbox_id: uuid.UUID
    event_type: str
    attempt_count: int


@dataclass(frozen=True)
class BackfillCounts:
    keys: int
    succeeded: int
    failed_retryable: int
    failed_final: int
    stuck: int
    outbox_published: int
    outbox_pending: int


def list_missing_reference_objects(conn: psycopg.Connection, tables: Tables) -> list[str]:
    """Names of the reference tables and functions absent from ``tables.schema`` (empty when all exist)."""
    rows = conn.execute(
        statement("list_missing_reference_objects"),
        {"schema": tables.schema, "keys": tables.keys, "inbox": tables.inbox, "outbox": tables.outbox},
    ).fetchall()
    return [row[0] for row in rows]


def insert_outbox_event(
    conn: psycopg.Connection,
    tables: Tables,
    event_type: str,
    aggregate_type: str,
    aggregate_id: uuid.UUID,
    scope: str,
    key: str,
    payload: Any,
) -> None:
    conn.execute(
        statement("insert_outbox_event", tables),
        {
            "event_type": event_type,
            "aggregate_type": aggregate_type,
            "aggregate_id": aggregate_id,
            "scope": scope,
            "key": key,
            "payload": Jsonb(payload),
        },
    )


def list_pending_outbox_events_for_publish(
    conn: psycopg.Connection, tables: Tables, limit: int, retry_fraction: float
) -> list[PendingEvent]:
    """Lock up to ``limit`` pending rows (SKIP LOCKED); call inside the transaction that marks them."""
    return select_all(
        conn,
        statement("list_pending_outbox_events_for_publish", tables),
        {"limit": limit, "retry_fraction": retry_fraction},
        PendingEvent,
    )


def mark_outbox_published(conn: psycopg.Connection, tables: Tables, ids: Sequence[uuid.UUID]) -> int:
    return conn.execute(statement("mark_outbox_published", tables), {"ids": list(ids)}).rowcount


def record_outbox_publish_failures(conn: psycopg.Connection, tables: Tables, ids: Sequence[uuid.UUID]) -> int:
    return conn.execute(statement("record_outbox_publish_failures", tables), {"ids": list(ids)}).rowcount


def backfill_keys_and_outbox(
    conn: psycopg.Connection, tables: Tables, token: str, rows: int, oldest_ago: timedelta, newest_ago: timedelta
) -> BackfillCounts:
    """Write ``rows`` keys created between ``oldest_ago`` and ``newest_ago`` before now, with their outbox rows.

    ``token`` goes into every key so that a second backfill never collides with the first.
    ``newest_ago`` must leave room for a lease to have run out (ten minutes or more).
    """
    counts = select_one(
        conn,
        statement("backfill_keys_and_outbox", tables),
        {"token": token, "rows": rows, "oldest_ago": oldest_ago, "newest_ago": newest_ago},
        BackfillCounts,
    )
    assert counts is not None
    return counts


def backfill_inbox(
    conn: psycopg.Connection, tables: Tables, token: str, rows: int, oldest_ago: timedelta, newest_ago: timedelta
) -> int:
    return conn.execute(
        statement("backfill_inbox", tables),
        {"token": token, "rows": rows, "oldest_ago": oldest_ago, "newest_ago": newest_ago},
    ).rowcount
