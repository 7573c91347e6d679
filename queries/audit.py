"""idemdash's append-only audit log of operator actions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import psycopg
from pydantic import Field

from idemdash.core.statuses import ActionKind
from idemdash.queries import cursor, statement
from idemdash.queries.cursor import Page
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class AuditFilter:
    scope: str | None = None
    key: str | None = None
    actor: str | None = None
    parent: int | None = None  # the per-key rows of one bulk action
    action: ActionKind | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class AuditEntry:
    audit_id: int
    at: datetime
    actor: str
    action: Annotated[str, Field(description="The kind of action, then ':' and what it acted on or became.")]
    scope: str | None
    key: str | None
    from_status: str | None
    to_status: str | None
    reason: str | None
    evidence: Annotated[Any, Field(description="What the operator saw when acting (JSON), or null.")]
    detail: Annotated[Any, Field(description="The action's own record (JSON), or null.")]
    parent_id: Annotated[int | None, Field(description="The bulk action this per-key row belongs to.")]
    children: Annotated[int, Field(description="Per-key rows under this entry (a bulk action); 0 otherwise.")]


def list_audit_for_key(conn: psycopg.Connection, scope: str, key: str, limit: int = 100) -> list[AuditEntry]:
    return select_all(conn, statement("list_audit_for_key"), {"scope": scope, "key": key, "limit": limit}, AuditEntry)


def list_audit(
    conn: psycopg.Connection, flt: AuditFilter, *, after: str | None = None, limit: int = 50
) -> Page[AuditEntry]:
    """One page of the audit log, newest first; ``after`` is the previous page's next_cursor (ValueError if
    malformed)."""
    params: dict[str, Any] = {
        "scope": flt.scope,
        "key": flt.key,
        "actor": flt.actor,
        "parent": flt.parent,
        "action": flt.action,
        "since": flt.since,
        "until": flt.until,
        "limit": limit + 1,
        "has_cursor": after is not None,
        "c_at": None,
        "c_id": None,
    }
    if after is not None:
        at, audit_id = cursor.decode(after, 2)
        params["c_at"] = cursor.parse_time(at)
        # bool is an int in Python; a bigint out of range would be a database error, not bad input
        if (
            params["c_at"] is None
            or isinstance(audit_id, bool)
            or not isinstance(audit_id, int)
            or not -(2**63) <= audit_id < 2**63
        ):
            raise ValueError("cursor is not valid: use the next_cursor value from the previous page")
        params["c_id"] = audit_id
    rows = select_all(conn, statement("list_audit"), params, AuditEntry)
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = cursor.encode([rows[-1].at, rows[-1].audit_id])
    return Page(rows, next_cursor)
