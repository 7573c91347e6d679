"""The dimensions of a library's tables (core/profiles/dimensions.py) as the pages read them: the rows with the most
attempts and their groups (`/hotspots`), the owners of rows in each state (`/workers`), the stuck rows by group and
owner (`GET /api/v1/keys/breakdown`); rows found by their identity (`/search`) are queries/profile_search.py's.
Every statement is a block of ``queries/profile_dimensions.sql`` filled with the found table's names
(``psycopg.sql.Identifier``) and the states' conditions of ``queries/profile_states.sql``; a dimension the table
does not record is never read (the caller says so instead)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.dimensions import records
from idemdash.core.profiles.shape import (
    EPOCH_MS,
    LOCAL_TIMESTAMP,
    STUCK,
    TIMESTAMPTZ,
    UTC_TIMESTAMP,
    Table,
)
from idemdash.core.settings import Settings
from idemdash.queries import statement
from idemdash.queries.profile_pages import list_table_columns
from idemdash.queries.profile_rows import profile_table
from idemdash.queries.profile_states import params_for, state_condition, state_params
from idemdash.queries.profile_tables import column_of, identity_of, state_of, table_of
from idemdash.queries.transactions import select_all

_TIME = {
    TIMESTAMPTZ: "profile_time_timestamptz",
    UTC_TIMESTAMP: "profile_time_utc",
    LOCAL_TIMESTAMP: "profile_time_local",
    EPOCH_MS: "profile_time_epoch_ms",
}
# owners counted per state at most; groups of hotspots at most
OWNER_LIMIT = 200
GROUP_LIMIT = 100


@dataclass(frozen=True)
class AttemptRow:
    identity: str
    attempts: int
    group_values: list[Any] | None
    owner: str | None
    stuck: bool


@dataclass(frozen=True)
class AttemptGroup:
    group_values: Any  # a JSON array of the group columns' values, or the owner as a JSON string
    rows: int
    stuck: int
    max_attempts: int


@dataclass(frozen=True)
class OwnerCount:
    name: str
    rows: int
    last_seen: datetime | None


@dataclass(frozen=True)
class Cell:
    dimension: str  # 'group' or 'owner'
    name: str | None
    count: int


def present_table(conn: psycopg.Connection, found: Found, role: str) -> Table | None:
    """the table as this database has it: a dimension whose column the table lacks (a column of another
    version of the shape: Spring Modulith v1 has no completion_attempts) is not recorded here; None where the
    database has no such table."""
    name = found.table(role)
    if name is None:
        return None
    table = profile_table(found, role)
    columns = list_table_columns(conn, found, role)

    def has(column: str | None) -> bool:
        return column is not None and named(column, found.naming) in columns

    return replace(
        table,
        attempts=table.attempts if has(table.attempts) else None,
        owner=table.owner if has(table.owner) else None,
        changed=table.changed if has(table.changed) else None,
        groups=table.groups if all(has(g) for g in table.groups) else (),
    )


def _group(found: Found, table: Table) -> sql.Composable:
    if not table.groups:
        return statement("profile_no_value")
    return sql.SQL("jsonb_build_array({})").format(sql.SQL(", ").join(column_of(found, c) for c in table.groups))


def _owner(found: Found, table: Table) -> sql.Composable:
    """The row's owner as text, NULL for none (a value that means no owner, or no owner column)."""
    if not table.owner:
        return statement("profile_no_value")
    return statement("profile_owner_value", None, owner=column_of(found, table.owner))


def _changed(found: Found, table: Table) -> sql.Composable:
    """The table's change time as a point in time (in its unit and zone), or NULL where it records none."""
    if table.changed is None:
        return statement("profile_no_time")
    unit = next((t.unit for t in table.times if t.column == table.changed), TIMESTAMPTZ)
    return statement(_TIME[unit], None, time=column_of(found, table.changed))


def _window(found: Found, table: Table, window: timedelta | None) -> sql.Composable:
    """Rows changed within ``window``: every row for no window, or where the table records no change time."""
    if window is None or table.changed is None:
        return statement("profile_everything")
    return statement("profile_within_window", None, time=_changed(found, table))


def _condition(found: Found, role: str, meaning: str, settings: Settings) -> tuple[sql.Composable, dict[str, Any]]:
    """The condition of ``role``'s state ``meaning`` and its values; ``false`` where it is not recorded."""
    state = state_of(found, role, meaning)
    condition = state_condition(found, state) if state is not None else None
    if state is None or condition is None:
        return sql.SQL("false"), {}
    return condition, params_for(state, settings)


def window_applies(table: Table) -> bool:
    """Whether a window narrows ``table``'s rows: only where it records when a row last changed."""
    return records(table, "changed")


def list_attempt_rows(
    conn: psycopg.Connection,
    found: Found,
    table: Table | None,
    settings: Settings,
    *,
    min_attempts: int,
    window: timedelta | None,
    limit: int,
) -> list[AttemptRow]:
    """The rows of the table with the most attempts (at least ``min_attempts``), most first."""
    names = table_of(found, table)
    if names is None or names[0].attempts is None:
        return []
    table, ident = names
    role = table.role
    stuck, params = _condition(found, role, STUCK, settings)
    query = statement(
        "list_profile_attempt_rows",
        None,
        table=ident,
        attempts=column_of(found, str(table.attempts)),
        identity_value=identity_of(found, table),
        group_value=_group(found, table),
        owner_value=_owner(found, table),
        stuck=stuck,
        window=_window(found, table, window),
    )
    return select_all(
        conn,
        query,
        {**_base(settings, table), **params, "min_attempts": min_attempts, "window": window, "limit": limit},
        AttemptRow,
    )


def list_attempt_groups(
    conn: psycopg.Connection,
    found: Found,
    table: Table | None,
    settings: Settings,
    *,
    by: str,
    min_attempts: int,
    window: timedelta | None,
    limit: int = GROUP_LIMIT,
) -> list[AttemptGroup]:
    """The rows of the table attempted at least ``min_attempts`` times, per group (``by="group"``) or per
    owner (``by="owner"``): at most ``limit`` + 1 groups, the most rows first."""
    names = table_of(found, table)
    if names is None or names[0].attempts is None:
        return []
    table, ident = names
    role = table.role
    value = _group(found, table) if by == "group" else sql.SQL("to_jsonb({})").format(_owner(found, table))
    stuck, params = _condition(found, role, STUCK, settings)
    query = statement(
        "list_profile_attempt_groups",
        None,
        table=ident,
        attempts=column_of(found, str(table.attempts)),
        group_value=value,
        stuck=stuck,
        window=_window(found, table, window),
    )
    return select_all(
        conn,
        query,
        {**_base(settings, table), **params, "min_attempts": min_attempts, "window": window, "limit": limit + 1},
        AttemptGroup,
    )


def list_owner_counts(
    conn: psycopg.Connection,
    found: Found,
    table: Table | None,
    meaning: str,
    settings: Settings,
    *,
    window: timedelta | None,
    limit: int = OWNER_LIMIT,
) -> list[OwnerCount] | None:
    """The rows of the table in its state ``meaning`` (changed within ``window``, where the table records
    when), per owner; None where the library records no such state (or no owner)."""
    names = table_of(found, table)
    if names is None or names[0].owner is None or not recorded(found, names[0].role, meaning):
        return None
    table, ident = names
    role = table.role
    condition, params = _condition(found, role, meaning, settings)
    query = statement(
        "list_profile_owner_counts",
        None,
        table=ident,
        owner=column_of(found, str(table.owner)),
        condition=condition,
        changed=_changed(found, table),
        window=_window(found, table, window),
    )
    return select_all(
        conn, query, {**_base(settings, table), **params, "window": window, "limit": limit + 1}, OwnerCount
    )


def list_stuck_cells(
    conn: psycopg.Connection, found: Found, table: Table | None, settings: Settings, *, cap: int
) -> list[Cell] | None:
    """The stuck rows of the table per group and per owner, at most ``cap`` + 1 read; None where the library
    records no stuck state for it."""
    names = table_of(found, table)
    if names is None or not recorded(found, names[0].role, STUCK):
        return None
    table, ident = names
    role = table.role
    condition, params = _condition(found, role, STUCK, settings)
    query = statement(
        "list_profile_stuck_cells",
        None,
        table=ident,
        condition=condition,
        group_value=_group(found, table),
        owner_value=_owner(found, table),
    )
    return select_all(conn, query, {**_base(settings, table), **params, "cap": cap}, Cell)


def recorded(found: Found, role: str, meaning: str) -> bool:
    """Whether the library records the state ``meaning`` of the table (in the found version, with every
    table its condition reads)."""
    state = state_of(found, role, meaning)
    return state is not None and state_condition(found, state) is not None


def _base(settings: Settings, table: Table) -> dict[str, Any]:
    """The values every block over ``table`` may bind: the library's zone for its local times, the owner values
    that mean no owner."""
    return {"library_zone": state_params(settings, table.role)["library_zone"], "unowned": list(table.unowned)}
