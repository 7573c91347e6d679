"""Idempotency keys: the stuck and status lists, one key's detail, its outbox evidence."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from core.triage import REVIEW_HOLDER
from queries import Tables, cursor, statement
from queries.cursor import Page
from queries.db import select_all, select_one

KEY_STATUSES = ("stuck", "needs_review", "processing", "succeeded", "failed_retryable", "failed_final")

@dataclass(frozen=True)
class KeyFilter:
    status: str = "stuck"
    scope: str | None = None
    claimed_by: str | None = None
    min_attempts: int | None = None
    min_overdue_seconds: float | None = None


@dataclass(frozen=True)
class KeyRow:
    scope: str
    key: str
    status: str
    request_hash: str
    claimed_by: str | None
    claimed_at: datetime | None
    locked_until: datetime | None
    overdue_seconds: float | None
    attempt_count: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    # a key held for review: who held it, when and why (from the audit log); None for every other key
    held_by: str | None = field(default=None, kw_only=True)
    hold_reason: str | None = field(default=None, kw_only=True)
    held_at: datetime | None = field(default=None, kw_only=True)

    @property
    def held(self) -> bool:
        return self.status == "processing" and self.claimed_by == REVIEW_HOLDER


@dataclass(frozen=True)
class KeyDetail(KeyRow):
    response_body: Any
    result_ref_type: str | None
    result_ref_id: str | None
    failure_code: str | None
    failure_message: str | None
    stuck: bool
    as_of: datetime = field(compare=False)


@dataclass(frozen=True)
class KeyOutboxRow:
    outbox_id: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    status: str
    attempt_count: int
    created_at: datetime
    published_at: datetime | None
    payload: Any


@dataclass(frozen=True)
class Scope:
    scope: str


def list_keys(conn: psycopg.Connection, tables: Tables, flt: KeyFilter, *, lease_seconds: int,
              after: str | None = None, limit: int = 50) -> Page[KeyRow]:
    """One page of keys; ``after`` is the previous page's next_cursor (ValueError if malformed)."""
    params: dict[str, Any] = {"scope": flt.scope, "claimed_by": flt.claimed_by, "min_attempts": flt.min_attempts,
                              "limit": limit + 1, "has_cursor": after is not None,
                              "c_null": False, "c_ts": None, "c_scope": None, "c_key": None}
    if flt.status in ("stuck", "needs_review", "processing"):
        if after is not None:
            ts, params["c_scope"], params["c_key"] = cursor.decode(after, 3)
            params["c_ts"] = cursor.parse_time(ts)
            params["c_null"] = ts is None
        params.update(stuck_only=flt.status == "stuck", held_only=flt.status == "needs_review",
                      lease_seconds=lease_seconds,
                      min_overdue=flt.min_overdue_seconds)
        rows = select_all(conn, statement("list_processing_keys", tables), params, KeyRow)
        sort_value = lambda row: row.locked_until  # noqa: E731
    else:
        if after is not None:
            ts, params["c_scope"], params["c_key"] = cursor.decode(after, 3)
            params["c_ts"] = cursor.parse_time(ts)
            if params["c_ts"] is None:
                raise ValueError("cursor is not valid: use the next_cursor value from the previous page")
        params["status"] = flt.status
        rows = select_all(conn, statement("list_keys_by_status", tables), params, KeyRow)
        sort_value = lambda row: row.updated_at  # noqa: E731
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = cursor.encode([sort_value(last), last.scope, last.key])
    return Page(rows, next_cursor)


def get_key(conn: psycopg.Connection, tables: Tables, scope: str, key: str, *, lease_seconds: int) -> KeyDetail | None:
    return select_one(conn, statement("get_key", tables),
                      {"scope": scope, "key": key, "lease_seconds": lease_seconds}, KeyDetail)


def list_outbox_for_key(conn: psycopg.Connection, tables: Tables, scope: str, key: str,
                        limit: int = 50) -> list[KeyOutboxRow]:
    return select_all(conn, statement("list_outbox_for_key", tables),
                      {"scope": scope, "key": key, "limit": limit}, KeyOutboxRow)


def list_scopes(conn: psycopg.Connection, tables: Tables, limit: int = 200) -> list[str]:
    return [s.scope for s in select_all(conn, statement("list_scopes", tables), {"limit": limit}, Scope)]
