"""A library's own documented writes (``core.profiles.shape.LibraryAction``) on one row of its tables: whether a row
meets the action's condition now, and the compare-and-set that does it, with its audit row in the same statement.

The statement is the judge: it locks the row without waiting behind the library (NOWAIT raises LockNotAvailable),
and changes it only while it still meets the library's condition and still holds the values the operator saw."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import LibraryAction
from idemdash.queries import statement
from idemdash.queries.profile_rows import identity_values, profile_table
from idemdash.queries.profile_states import block_names


@dataclass(frozen=True)
class ActionResult:
    audit_id: int | None
    changed: int


def expected_text(value: Any) -> str | None:
    """A value the operator saw, as the row's JSON gives it as text (``->>``): what the compare-and-set compares."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _names(found: Found, action: LibraryAction, role: str) -> dict[str, sql.Composable] | None:
    condition = block_names(found, role, action.condition)
    sets = block_names(found, role, action.sets)
    if condition is None or sets is None:
        return None
    table = profile_table(found, role)
    return {
        "table": condition["table"],
        "condition": statement(action.condition, None, **condition),
        "sets": statement(action.sets, None, **sets),
        "identity_columns": sql.SQL(", ").join(sql.Identifier(named(c, found.naming)) for c in table.identity),
        "identity_values": sql.SQL(", ").join(sql.Placeholder(f"id_{i}") for i in range(len(table.identity))),
    }


def applies(conn: psycopg.Connection, found: Found, action: LibraryAction, role: str, identity: str) -> bool:
    """Whether the row of ``role``'s table with ``identity`` meets the action's condition now."""
    names = _names(found, action, role)
    values = identity_values(profile_table(found, role), identity)
    if names is None or values is None:
        return False
    query = statement(
        "profile_row_in_state",
        None,
        table=names["table"],
        condition=names["condition"],
        identity_columns=names["identity_columns"],
        identity_values=names["identity_values"],
    )
    row = conn.execute(query, values).fetchone()
    return bool(row and row[0])


def run_action(
    conn: psycopg.Connection,
    found: Found,
    action: LibraryAction,
    role: str,
    identity: str,
    *,
    actor: str,
    reason: str,
    expected: Mapping[str, Any],
) -> ActionResult:
    """Do ``action`` on the row, in the caller's transaction, if it still meets the library's condition and still
    holds ``expected`` (column as the profile names it -> the value the operator saw). Raises LockNotAvailable when
    the library holds the row."""
    names = _names(found, action, role)
    values = identity_values(profile_table(found, role), identity)
    if names is None or values is None:
        return ActionResult(None, 0)
    table = dict(found.tables)[role]
    params = {
        **values,
        "actor": actor,
        "action": f"library:{action.name}",
        "scope": table,
        "identity": identity,
        "reason": reason,
        "expected": json.dumps({named(c, found.naming): expected_text(v) for c, v in expected.items()}),
        "changes": [named(c, found.naming) for c in action.changes],
        "detail": json.dumps(
            {
                "profile": profile(found.profile).name,
                "role": role,
                "schema": found.schema,
                "table": table,
                "identity": identity,
                "source": action.source.path,
            }
        ),
    }
    row = conn.execute(statement("library_action_row", None, **names), params).fetchone()
    assert row is not None
    return ActionResult(row[0], row[1])
