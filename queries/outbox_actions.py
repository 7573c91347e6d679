"""Operator actions on outbox rows: park a poison row so the relay leaves it alone, and release it again.

The contract (docs/interface.md, The outbox contract): the relay publishes only rows whose ``status`` is
``pending``. Parking sets ``parked``; releasing sets ``pending`` back. Both are compare-and-set on the row's
status and on what the operator saw in one UPDATE that never waits behind the relay (NOWAIT), with the audit
row in the same statement; a published row is never changed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql

from idemdash.core.statuses import OutboxStatus
from idemdash.queries import Tables, statement
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS
from idemdash.queries.transactions import select_all, select_one

PARK, RELEASE = "park", "release"
# action -> (status it needs, status it sets)
MOVES: dict[str, tuple[OutboxStatus, OutboxStatus]] = {PARK: ("pending", "parked"), RELEASE: ("parked", "pending")}
PARKED_SHOWN = 50


@dataclass(frozen=True)
class MoveResult:
    audit_id: int | None
    changed: int


@dataclass(frozen=True)
class ParkedRow:
    outbox_id: str
    event_type: str
    idempotency_scope: str
    idempotency_key: str
    attempt_count: int
    created_at: datetime
    parked_by: str | None
    parked_at: datetime | None
    reason: str | None


@dataclass(frozen=True)
class StatusCheck:
    name: str
    definition: str


def move_outbox_row(
    conn: psycopg.Connection,
    tables: Tables,
    outbox_id: uuid.UUID,
    action: str,
    *,
    actor: str,
    reason: str,
    expected_attempt_count: int | None = None,
) -> MoveResult:
    """Park or release one row in the caller's transaction. Raises LockNotAvailable when the relay holds it.

    ``expected_attempt_count`` is what the operator saw. A park needs the row still pending and still as bad:
    likely poison still (POISON_MIN_ATTEMPTS or more attempts) when it was then, else at least that many attempts;
    the relay retrying it meanwhile (its count going up) changes nothing that matters. A release (the relay never
    touches a parked row) needs the count unchanged."""
    from_status, to_status = MOVES[action]
    exact, at_least = expected_attempt_count, None
    if action == PARK and expected_attempt_count is not None:
        exact, at_least = None, park_needs_attempts(expected_attempt_count)
    row = select_one(
        conn,
        statement("move_outbox_row", tables),
        {
            "outbox_id": outbox_id,
            "from_status": from_status,
            "to_status": to_status,
            "actor": actor,
            "action": f"outbox-{action}",
            "reason": reason,
            "expected_attempt_count": exact,
            "min_attempts": at_least,
        },
        MoveResult,
    )
    assert row is not None
    return row


def park_needs_attempts(seen_attempt_count: int) -> int:
    """The attempts a park needs the row to still have, for an operator who saw ``seen_attempt_count``."""
    return min(seen_attempt_count, POISON_MIN_ATTEMPTS)


def list_outbox_parked(conn: psycopg.Connection, tables: Tables, limit: int = PARKED_SHOWN) -> list[ParkedRow]:
    return select_all(conn, statement("list_outbox_parked", tables), {"limit": limit}, ParkedRow)


def list_outbox_status_checks(conn: psycopg.Connection, tables: Tables) -> list[StatusCheck]:
    """The outbox's CHECK constraints on ``status``, and its enum labels if ``status`` is an enum."""
    return select_all(
        conn,
        statement("list_outbox_status_checks", tables),
        {"schema": tables.schema, "table": tables.outbox},
        StatusCheck,
    )


@dataclass(frozen=True)
class _StatusType:
    data_type: str


def get_outbox_status_type(conn: psycopg.Connection, tables: Tables) -> str | None:
    """The data type of the outbox's ``status`` column; None when the table or the column is missing."""
    row = select_one(
        conn,
        statement("get_outbox_status_type", tables),
        {"schema": tables.schema, "table": tables.outbox},
        _StatusType,
    )
    return None if row is None else row.data_type


def fix_status_check(tables: Tables, constraint: str, definition: str) -> str:
    """SQL that allows 'parked' in a CHECK constraint on status. ``definition`` is the catalog's own text
    (pg_get_constraintdef), widened: an IN list (``ANY (ARRAY[...])``) gets the value, anything else an OR."""
    if "ARRAY[" in definition:
        widened = definition.replace("ARRAY[", "ARRAY['parked'::text, ", 1)
    else:
        widened = f"CHECK ((status = 'parked') OR ({definition.removeprefix('CHECK ')}))"
    return statement(
        "fix_outbox_status_check", tables, constraint=sql.Identifier(constraint), definition=sql.SQL(widened)
    ).as_string(None)


def fix_status_enum(type_name: str) -> str:
    """SQL that adds 'parked' to the enum type of status (``type_name`` as format_type gives it, quoted)."""
    return statement("fix_outbox_status_enum", type_name=sql.SQL(type_name)).as_string(None)
