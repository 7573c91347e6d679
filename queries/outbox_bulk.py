"""Park (or release) many outbox rows at once: every likely poison row of an event type, say.

A preview counts them and records the ids of the rows it shows (oldest first, at most the cap) in
idemdash.bulk_preview; its confirmation moves exactly those, each only while it is still in the status the action
needs (a park: still pending and still likely poison, however often the relay retried it since), in batches that
skip a row the relay holds, and writes one audit entry for the bulk that each row's entry points to."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from idemdash.queries import Tables, statement
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS
from idemdash.queries.outbox_actions import MOVES, PARK
from idemdash.queries.transactions import select_all, select_one

SAMPLE_ROWS = 10


@dataclass(frozen=True)
class BulkMove:
    action: str  # park or release
    event_type: str | None = None  # None: every event type

    @property
    def from_status(self) -> str:
        return MOVES[self.action][0]

    @property
    def to_status(self) -> str:
        return MOVES[self.action][1]

    @property
    def min_attempts(self) -> int | None:
        """A park moves likely poison rows only; a release every parked row."""
        return POISON_MIN_ATTEMPTS if self.action == PARK else None

    def to_json(self) -> dict[str, Any]:
        return {"event_type": self.event_type}

    def params(self) -> dict[str, Any]:
        return {"from_status": self.from_status, "event_type": self.event_type, "min_attempts": self.min_attempts}


@dataclass(frozen=True)
class EventTypeCount:
    event_type: str
    rows: int


@dataclass(frozen=True)
class BulkRow:
    outbox_id: str
    event_type: str
    idempotency_scope: str
    idempotency_key: str
    attempt_count: int
    created_at: datetime


@dataclass(frozen=True)
class RecordedPreview:
    preview_id: int
    filter: dict[str, Any]
    action: str
    candidates: int
    ids: list[str]
    matches: bool


@dataclass(frozen=True)
class _Id:
    preview_id: int


@dataclass(frozen=True)
class _Audit:
    audit_id: int


@dataclass(frozen=True)
class _Changed:
    changed: int


@dataclass(frozen=True)
class _Rows:
    rows: int


def count_bulk_rows(conn: psycopg.Connection, tables: Tables, move: BulkMove) -> list[EventTypeCount]:
    return select_all(conn, statement("count_outbox_bulk", tables), move.params(), EventTypeCount)


def list_bulk_rows(conn: psycopg.Connection, tables: Tables, move: BulkMove, limit: int) -> list[BulkRow]:
    return select_all(conn, statement("list_outbox_bulk_rows", tables), move.params() | {"limit": limit}, BulkRow)


def insert_bulk_preview(
    conn: psycopg.Connection,
    move: BulkMove,
    as_of: datetime,
    *,
    candidates: int,
    by_event_type: list[EventTypeCount],
    ids: list[str],
    actor: str,
) -> int:
    shown = {"by_event_type": [c.__dict__ for c in by_event_type], "ids": ids}
    row = select_one(
        conn,
        statement("insert_outbox_bulk_preview"),
        {
            "as_of": as_of,
            "filter": Jsonb(move.to_json()),
            "action": f"outbox-{move.action}",
            "candidates": candidates,
            "shown": Jsonb(shown),
            "actor": actor,
        },
        _Id,
    )
    assert row is not None
    return row.preview_id


def get_bulk_preview(conn: psycopg.Connection, move: BulkMove, as_of: datetime) -> RecordedPreview | None:
    """The outbox preview recorded at ``as_of`` (preferring one with this filter and action); None if none."""
    return select_one(
        conn,
        statement("get_outbox_bulk_preview"),
        {"as_of": as_of, "filter": Jsonb(move.to_json()), "action": f"outbox-{move.action}"},
        RecordedPreview,
    )


def insert_bulk_audit(
    conn: psycopg.Connection,
    move: BulkMove,
    as_of: datetime,
    *,
    reason: str,
    actor: str,
    bulk_id: uuid.UUID,
    previewed: int,
) -> int:
    """The bulk's one audit entry; call in the transaction of its first batch."""
    evidence = [
        f"every row moved was shown by the preview ({as_of.isoformat()}) and still {move.from_status}"
        + (" and likely poison" if move.min_attempts else "")
        + " when it was moved"
    ]
    row = select_one(
        conn,
        statement("insert_outbox_bulk_audit"),
        {
            "actor": actor,
            "action": f"outbox-{move.action}-bulk",
            "from_status": move.from_status,
            "to_status": move.to_status,
            "reason": reason,
            "evidence": Jsonb(evidence),
            "detail": Jsonb(
                {"bulk_id": str(bulk_id), "as_of": as_of.isoformat(), "filter": move.to_json(), "previewed": previewed}
            ),
        },
        _Audit,
    )
    assert row is not None
    return row.audit_id


def move_bulk_batch(
    conn: psycopg.Connection,
    tables: Tables,
    move: BulkMove,
    ids: list[str],
    *,
    reason: str,
    actor: str,
    parent_id: int,
    batch_size: int,
) -> int:
    """Move up to ``batch_size`` of ``ids`` that still qualify, skipping rows someone holds; how many moved."""
    row = select_one(
        conn,
        statement("move_outbox_bulk_batch", tables),
        move.params()
        | {
            "ids": ids,
            "to_status": move.to_status,
            "actor": actor,
            "row_action": f"outbox-{move.action}",
            "reason": reason,
            "parent_id": parent_id,
            "batch_size": batch_size,
        },
        _Changed,
    )
    assert row is not None
    return row.changed


def count_bulk_left(conn: psycopg.Connection, tables: Tables, move: BulkMove, ids: list[str]) -> int:
    row = select_one(conn, statement("count_outbox_bulk_left", tables), move.params() | {"ids": ids}, _Rows)
    assert row is not None
    return row.rows
