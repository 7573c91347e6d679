"""The transactional outbox: backlog and lag, per event type, likely poison events, the row list."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import psycopg
from pydantic import ConfigDict, Field

from idemdash.queries import Tables, cursor, statement
from idemdash.queries.cursor import Page
from idemdash.queries.transactions import select_all, select_one

_BAD_CURSOR = "cursor is not valid: use the next_cursor value from the previous page"


@dataclass(frozen=True)
class OutboxFilter:
    status: str = "pending"
    event_type: str | None = None


@dataclass(frozen=True)
class OutboxSummary:
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float | None  # the oldest pending row that is not likely poison (= healthy_lag_seconds)
    pending_many_attempts: int  # likely poison: failed at least min_attempts times
    oldest_healthy_at: datetime | None  # the oldest pending row that is not likely poison
    healthy_lag_seconds: float | None  # its age: how far behind the relay is
    oldest_poison_at: datetime | None
    poison_oldest_seconds: float | None  # the age of the oldest likely poison row


# Pending rows with this many delivery attempts are likely poison events (they never publish on their own);
# the partial index index_outbox_poison and list_outbox_poison hold the same number.
POISON_MIN_ATTEMPTS = 3

# Event types listed on the outbox page, most pending first.
EVENT_TYPES_SHOWN = 200


@dataclass(frozen=True)
class EventTypeSummary:
    event_type: str
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float | None
    max_attempts: int | None
    published_24h: int


@dataclass(frozen=True)
class OutboxRow:
    outbox_id: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    idempotency_scope: str
    idempotency_key: str
    status: str
    attempt_count: int
    created_at: datetime
    published_at: datetime | None
    age_seconds: Annotated[float, Field(description="Seconds since created_at.")]
    payload: Annotated[Any, Field(description="The event's payload (JSON).")]


@dataclass(frozen=True)
class OutboxDetail(OutboxRow):
    # its own pydantic config: inside a 409 body (extra fields allowed) it would take that one's
    __pydantic_config__ = ConfigDict(extra="ignore")

    key_exists: Annotated[bool, Field(description="The key the row was written under is still in the key table.")]


@dataclass(frozen=True)
class Status:
    status: str


def list_outbox_event_types(
    conn: psycopg.Connection, tables: Tables, limit: int = EVENT_TYPES_SHOWN
) -> list[EventTypeSummary]:
    return select_all(conn, statement("list_outbox_event_types", tables), {"limit": limit}, EventTypeSummary)


def list_outbox_many_attempts(
    conn: psycopg.Connection, tables: Tables, *, min_attempts: int, limit: int = 20
) -> list[OutboxRow]:
    return select_all(
        conn, statement("list_outbox_many_attempts", tables), {"min_attempts": min_attempts, "limit": limit}, OutboxRow
    )


def _keyset(after: str | None) -> dict[str, Any]:
    """The (created_at, outbox_id) keyset parameters of a next_cursor (ValueError when malformed)."""
    params: dict[str, Any] = {"has_cursor": after is not None, "c_ts": None, "c_id": None}
    if after is not None:
        ts, outbox_id = cursor.decode(after, 2)
        params["c_ts"] = cursor.parse_time(ts)
        if params["c_ts"] is None or not isinstance(outbox_id, str):
            raise ValueError(_BAD_CURSOR)
        try:
            params["c_id"] = str(uuid.UUID(outbox_id))
        except ValueError:
            raise ValueError(_BAD_CURSOR) from None
    return params


def _page(rows: list[OutboxRow], limit: int) -> Page[OutboxRow]:
    if len(rows) <= limit:
        return Page(rows, None)
    rows = rows[:limit]
    return Page(rows, cursor.encode([rows[-1].created_at, rows[-1].outbox_id]))


def get_outbox_row(conn: psycopg.Connection, tables: Tables, outbox_id: uuid.UUID) -> OutboxDetail | None:
    return select_one(conn, statement("get_outbox_row", tables), {"outbox_id": str(outbox_id)}, OutboxDetail)


def list_outbox_poison(
    conn: psycopg.Connection,
    tables: Tables,
    *,
    min_attempts: int = POISON_MIN_ATTEMPTS,
    after: str | None = None,
    limit: int = 50,
) -> Page[OutboxRow]:
    """Pending rows with at least ``min_attempts`` (never fewer than POISON_MIN_ATTEMPTS) attempts, oldest first."""
    params = _keyset(after) | {"min_attempts": max(min_attempts, POISON_MIN_ATTEMPTS), "limit": limit + 1}
    return _page(select_all(conn, statement("list_outbox_poison", tables), params, OutboxRow), limit)


def list_outbox(
    conn: psycopg.Connection, tables: Tables, flt: OutboxFilter, *, after: str | None = None, limit: int = 50
) -> Page[OutboxRow]:
    """One page of rows: pending oldest first, any other status newest first.

    ``after`` is the previous page's next_cursor; a malformed one raises ValueError (the caller's bad input).
    """
    params = _keyset(after) | {"event_type": flt.event_type, "limit": limit + 1}
    if flt.status == "pending":
        rows = select_all(conn, statement("list_outbox_pending", tables), params, OutboxRow)
    else:
        params["status"] = flt.status
        rows = select_all(conn, statement("list_outbox_by_status", tables), params, OutboxRow)
    return _page(rows, limit)


def list_outbox_statuses(conn: psycopg.Connection, tables: Tables, limit: int = 50) -> list[str]:
    return [s.status for s in select_all(conn, statement("list_outbox_statuses", tables), {"limit": limit}, Status)]
