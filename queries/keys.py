"""Idempotency keys: the stuck and status lists, one key's detail, its outbox evidence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from idemdash.core.statuses import KEY_LIST_STATUSES, LEASE_TABS, REVIEW_HOLDER
from idemdash.queries import Statement, Tables, cursor, statement
from idemdash.queries.cursor import Page
from idemdash.queries.transactions import select_all, select_one

KEY_STATUSES = KEY_LIST_STATUSES


@dataclass(frozen=True)
class KeyFilter:
    status: str = "stuck"
    scope: str | None = None
    claimed_by: str | None = None
    min_attempts: int | None = None
    min_overdue_seconds: float | None = None
    suggested: str | None = None  # stuck keys whose suggested outcome is this (queries/key_matching.py)
    # terminal and failed keys whose last change (updated_at) is at most this many seconds ago
    updated_within_seconds: float | None = None


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


# The order each list is read in by default, and the other way; both are one index read forwards or backwards.
DEFAULT_ORDER = {
    "stuck": "asc",
    "needs_review": "asc",
    "processing": "asc",
    "succeeded": "desc",
    "failed_retryable": "desc",
    "failed_final": "desc",
}
_BAD_CURSOR = "cursor is not valid: use the next_cursor or prev_cursor value of the page you came from"
# A list read one way or the other: ORDER BY's direction, where a NULL lease end goes (first either way in the
# list's own order), and the comparison that finds the rows past a keyset cursor in that direction.
DIRECTIONS: dict[str, dict[str, sql.Composable]] = {
    "asc": {"direction": sql.SQL("ASC"), "nulls": sql.SQL("FIRST"), "after": sql.SQL(">")},
    "desc": {"direction": sql.SQL("DESC"), "nulls": sql.SQL("LAST"), "after": sql.SQL("<")},
}
# The last element of a cursor that goes back a page (prev_cursor) instead of forward.
_BACK = "prev"


def _decode(after: str) -> tuple[Any, Any, Any, bool]:
    """A key list cursor: (sort value, scope, key, backwards)."""
    try:
        *values, direction = cursor.decode(after, 4)
        if direction != _BACK:
            raise ValueError(_BAD_CURSOR)
        return (*values, True)
    except ValueError:
        return (*cursor.decode(after, 3), False)


def filter_params(flt: KeyFilter, *, lease_seconds: int, hotspot_min_attempts: int | None) -> dict[str, Any]:
    """The parameters of a key list's WHERE fragment (``processing_key_filter`` or ``status_key_filter``) for
    ``flt``; the list adds its cursor and order, a count its cap. ``hotspot_min_attempts`` decides the suggested
    outcome, needed when ``flt.suggested`` is set."""
    params: dict[str, Any] = {"scope": flt.scope, "claimed_by": flt.claimed_by, "min_attempts": flt.min_attempts}
    if flt.status in LEASE_TABS:
        if flt.suggested is not None and hotspot_min_attempts is None:
            raise ValueError("a suggested filter needs hotspot_min_attempts")
        params.update(
            stuck_only=flt.status == "stuck",
            held_only=flt.status == "needs_review",
            lease_seconds=lease_seconds,
            min_overdue=flt.min_overdue_seconds,
            suggested=flt.suggested,
            hotspot_min_attempts=hotspot_min_attempts,
        )
    else:
        params.update(status=flt.status, updated_within=flt.updated_within_seconds)
    return params


def list_keys(
    conn: psycopg.Connection,
    tables: Tables,
    flt: KeyFilter,
    *,
    lease_seconds: int,
    after: str | None = None,
    limit: int = 50,
    order: str | None = None,
    hotspot_min_attempts: int | None = None,
) -> Page[KeyRow]:
    """One page of keys in ``order`` (``asc`` or ``desc`` by the list's sort column: the lease end for processing
    lists, the last change otherwise; default ``DEFAULT_ORDER``). ``after`` is a next_cursor or prev_cursor of an
    earlier page (ValueError if malformed)."""
    order = order or DEFAULT_ORDER[flt.status]
    params = filter_params(flt, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    params.update(limit=limit + 1, has_cursor=after is not None, c_null=False, c_ts=None, c_scope=None, c_key=None)
    backwards = False
    if after is not None:
        ts, params["c_scope"], params["c_key"], backwards = _decode(after)
        params["c_ts"] = cursor.parse_time(ts)
        params["c_null"] = ts is None
        if not isinstance(params["c_scope"], str) or not isinstance(params["c_key"], str):
            raise ValueError(_BAD_CURSOR)
    # going back a page reads the list the other way from the first row shown, then turns the rows round
    read_order = ("desc" if order == "asc" else "asc") if backwards else order
    if flt.status in LEASE_TABS:
        params["descending"] = read_order == "desc"
        name = "list_processing_keys"

        def sort_value(row: KeyRow) -> datetime | None:
            return row.locked_until
    else:
        if after is not None and params["c_ts"] is None:
            raise ValueError(_BAD_CURSOR)
        name = "list_keys_by_status"

        def sort_value(row: KeyRow) -> datetime | None:
            return row.updated_at

    rows = select_all(conn, list_statement(name, tables, read_order), params, KeyRow)
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()

    def position(row: KeyRow, *extra: str) -> str:
        return cursor.encode([sort_value(row), row.scope, row.key, *extra])

    if not rows:
        return Page(rows, None)
    if backwards:
        # came back from a later page: there is one after these; earlier ones when the read found more
        return Page(rows, position(rows[-1]), prev_cursor=position(rows[0], _BACK) if more else None)
    return Page(
        rows, position(rows[-1]) if more else None, prev_cursor=position(rows[0], _BACK) if after is not None else None
    )


def list_statement(name: str, tables: Tables, order: str) -> Statement:
    """A key list's statement read in ``order`` (``asc`` or ``desc``: nothing else reaches the SQL)."""
    return statement(name, tables, **DIRECTIONS[order])


@dataclass(frozen=True)
class StateCounts:
    """Keys per state tab, each exact up to the cap it was counted with (a larger value means "cap or more")."""

    stuck: int
    needs_review: int
    processing: int
    failed_retryable: int
    failed_final: int
    succeeded: int


def count_keys_by_state(
    conn: psycopg.Connection,
    tables: Tables,
    *,
    lease_seconds: int,
    caps: Mapping[str, int],
    updated_within: float | None = None,
) -> StateCounts:
    """Each state counted up to ``caps[state] + 1`` rows (a larger value than the cap means "more"); a state whose
    cap is 0 is not counted (0). With ``updated_within`` (seconds), the terminal and failed states count only the
    keys whose last change is that recent, as their lists filtered the same way show them."""
    params = {f"cap_{state}": cap + 1 if cap > 0 else 0 for state, cap in caps.items()}
    row = select_one(
        conn,
        statement("count_keys_by_state", tables),
        params | {"lease_seconds": lease_seconds, "updated_within": updated_within},
        StateCounts,
    )
    assert row is not None  # scalar subqueries always answer one row
    # stuck adds two capped counts (with and without a lease)
    return StateCounts(**{name: min(value, caps[name] + 1) for name, value in row.__dict__.items()})


def get_key(conn: psycopg.Connection, tables: Tables, scope: str, key: str, *, lease_seconds: int) -> KeyDetail | None:
    return select_one(
        conn, statement("get_key", tables), {"scope": scope, "key": key, "lease_seconds": lease_seconds}, KeyDetail
    )


def list_outbox_for_key(
    conn: psycopg.Connection, tables: Tables, scope: str, key: str, limit: int = 50
) -> list[KeyOutboxRow]:
    return select_all(
        conn, statement("list_outbox_for_key", tables), {"scope": scope, "key": key, "limit": limit}, KeyOutboxRow
    )


def list_scopes(conn: psycopg.Connection, tables: Tables, limit: int = 200) -> list[str]:
    return [s.scope for s in select_all(conn, statement("list_scopes", tables), {"limit": limit}, Scope)]


@dataclass(frozen=True)
class ResponseField:
    name: str
    type: str  # jsonb_typeof of a neighbour's value: object, array, string, number, boolean, null


def list_response_fields(
    conn: psycopg.Connection, tables: Tables, scope: str, key: str, *, span: int = 10, limit: int = 50
) -> list[ResponseField]:
    """The fields of a succeeded neighbour's stored response in ``scope`` (names and JSON types, never values):
    what an already_succeeded response_body of this scope looks like. Reads at most ``2 * span`` keys beside
    ``key`` in the primary key; empty when none of them stored an object."""
    return select_all(
        conn,
        statement("list_response_fields", tables),
        {"scope": scope, "key": key, "span": span, "limit": limit},
        ResponseField,
    )
