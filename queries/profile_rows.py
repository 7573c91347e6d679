"""The rows of a library's table in one of its states, and one row by its identity: what `/tables/<role>` lists and
`/tables/<role>/row` shows, read through the profile (core/profiles) with the names `find_configured` found.

A row is shown as the library stored it (``to_jsonb`` of the whole row), never mapped onto the reference columns;
its identity is a JSON array of the profile's identity columns, as text (``["7b1c…"]``, ``["billing", "42"]``), the
same in a list and in a row's URL."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.dimensions import records
from idemdash.core.profiles.shape import (
    DONE,
    EPOCH_MS,
    LOCAL_TIMESTAMP,
    TIMESTAMPTZ,
    UTC_TIMESTAMP,
    State,
    Table,
)
from idemdash.core.settings import Settings
from idemdash.queries import statement
from idemdash.queries.profile_states import params_for, state_condition, state_names


@dataclass(frozen=True)
class BacklogGroup:
    group_values: list[Any]
    rows: int
    lag_seconds: float | None


@dataclass(frozen=True)
class ProfileRow:
    row_json: dict[str, Any]
    order_value: str | None
    identity_value: str


def profile_table(found: Found, role: str) -> Table:
    return profile(found.profile).table_of(role, found.version)


def _identity_columns(found: Found, table: Table) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(named(c, found.naming)) for c in table.identity)


def _identity(found: Found, table: Table) -> sql.Composable:
    return statement("profile_identity", None, identity_columns=_identity_columns(found, table))


def identity_values(table: Table, identity: str) -> dict[str, Any] | None:
    """The identity's values by placeholder name (``id_0``, ...), or None when it is not a JSON array of as many
    plain values as the table has identity columns (no row has it)."""
    try:
        values = json.loads(identity)
    except ValueError:
        return None
    if (
        not isinstance(values, list)
        or len(values) != len(table.identity)
        or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values)
    ):
        return None
    return {f"id_{i}": str(v) for i, v in enumerate(values)}


def _by_identity(found: Found, table: Table) -> dict[str, sql.Composable]:
    return {
        "identity_columns": _identity_columns(found, table),
        "identity_values": sql.SQL(", ").join(sql.Placeholder(f"id_{i}") for i in range(len(table.identity))),
    }


def order_column(table: Table, state: State) -> str | None:
    """The column a state's rows are listed by: the state's own, else the table's first time column."""
    return state.order or (table.times[0].column if table.times else None)


def _order(found: Found, table: Table, state: State) -> sql.Composable:
    column = order_column(table, state)
    return sql.Identifier(named(column, found.naming)) if column else _identity(found, table)


def list_state_rows(
    conn: psycopg.Connection,
    found: Found,
    state: State,
    params: Mapping[str, Any],
    *,
    after: tuple[str | None, str] | None,
    limit: int,
) -> list[ProfileRow]:
    """Up to ``limit`` rows in ``state``, after ``after`` (the last row's order value and identity), payloads left
    out."""
    table = profile_table(found, state.table)
    condition = state_condition(found, state)
    name = dict(found.tables).get(state.table)
    if condition is None or name is None:
        return []
    query = statement(
        "list_profile_state",
        None,
        table=sql.Identifier(found.schema, name),
        condition=condition,
        order_value=_order(found, table, state),
        identity_value=_identity(found, table),
    )
    omit = [named(c, found.naming) for c in (table.payload,) if c]
    values = {
        **params,
        "omit": omit,
        "limit": limit,
        "first": after is None,
        "after_null": after is not None and after[0] is None,
        "after_order": after[0] if after else None,
        "after_identity": after[1] if after else None,
    }
    with conn.cursor(row_factory=class_row(ProfileRow)) as cur:
        return cur.execute(query, values).fetchall()


def get_row(conn: psycopg.Connection, found: Found, role: str, identity: str) -> dict[str, Any] | None:
    """The row of ``role``'s table whose identity is ``identity`` (as in a list), whole; None when there is none."""
    name = dict(found.tables).get(role)
    table = profile_table(found, role)
    values = identity_values(table, identity)
    if name is None or values is None:
        return None
    query = statement("get_profile_row", None, table=sql.Identifier(found.schema, name), **_by_identity(found, table))
    found_row = conn.execute(query, values).fetchone()
    return found_row[0] if found_row else None


def row_states(
    conn: psycopg.Connection, found: Found, role: str, identity: str, settings: Settings
) -> list[tuple[State, bool]]:
    """Each state of ``role``'s table (for the found version), and whether the row is in it."""
    name = dict(found.tables).get(role)
    table = profile_table(found, role)
    values = identity_values(table, identity)
    result = []
    for state in profile(found.profile).states_of(found.version):
        condition = state_condition(found, state) if state.table == role else None
        if condition is None or name is None or values is None:
            continue
        query = statement(
            "profile_row_in_state",
            None,
            table=sql.Identifier(found.schema, name),
            condition=condition,
            **_by_identity(found, table),
        )
        (inside,) = conn.execute(query, {**params_for(state, settings), **values}).fetchone() or (False,)
        result.append((state, bool(inside)))
    return result


# how long a group's oldest row has waited, by the unit of the table's first time column
_LAG = {
    TIMESTAMPTZ: "profile_lag_timestamptz",
    UTC_TIMESTAMP: "profile_lag_utc",
    LOCAL_TIMESTAMP: "profile_lag_local",
    EPOCH_MS: "profile_lag_epoch_ms",
}
BACKLOG_GROUPS = 20


def list_backlogs(conn: psycopg.Connection, found: Found, settings: Settings) -> dict[str, list[BacklogGroup]]:
    """Each found table that declares ``groups`` (and has a done state and a time): its rows the library has not
    finished, by those columns, the longest waiting group first (at most ``BACKLOG_GROUPS``). Not a table that
    records an operator's decisions (the reference tables): its own pages break its backlog down through its indexes
    (`/outbox` by event type, `/keys` by scope), where this count of every unfinished row would read the table."""
    backlogs = {}
    for role, name in found.tables:
        table = profile_table(found, role)
        if records(table, "decisions"):
            continue
        done = next(
            (s for s in profile(found.profile).states_of(found.version) if s.table == role and s.meaning == DONE), None
        )
        condition = state_condition(found, done) if done is not None else None
        if not table.groups or not table.times or done is None or condition is None:
            continue
        time = sql.Identifier(named(table.times[0].column, found.naming))
        query = statement(
            "list_profile_backlog",
            None,
            table=sql.Identifier(found.schema, name),
            condition=condition,
            group_columns=sql.SQL(", ").join(sql.Identifier(named(c, found.naming)) for c in table.groups),
            lag=statement(_LAG[table.times[0].unit], None, time=time),
            time=time,
        )
        with conn.cursor(row_factory=class_row(BacklogGroup)) as cur:
            backlogs[role] = cur.execute(query, {**params_for(done, settings), "limit": BACKLOG_GROUPS}).fetchall()
    return backlogs


def row_facts(
    conn: psycopg.Connection, found: Found, role: str, identity: str, settings: Settings
) -> list[tuple[str, str]]:
    """What the profile's facts about ``role``'s rows (``Profile.facts``) say of this row: (label, text), those
    with something to say, in the profile's order."""
    name = dict(found.tables).get(role)
    table = profile_table(found, role)
    values = identity_values(table, identity)
    if name is None or values is None:
        return []
    told = []
    for fact in profile(found.profile).facts:
        names = state_names(found, fact) if fact.table == role else None
        if names is None:
            continue
        query = statement(
            "profile_row_fact",
            None,
            table=sql.Identifier(found.schema, name),
            fact=statement(fact.query, None, **names),
            **_by_identity(found, table),
        )
        said = conn.execute(query, {**params_for(fact, settings), **values}).fetchone()
        if said and said[0] is not None:
            told.append((fact.label, said[0]))
    return told


def get_state_lag(conn: psycopg.Connection, found: Found, state: State, settings: Settings) -> float | None:
    """Seconds since the oldest row in ``state`` of its table came (by the table's first time column, in its unit and
    zone): a library's outbox lag; None when the table records no time or no row is in the state."""
    table = profile_table(found, state.table)
    condition = state_condition(found, state)
    name = dict(found.tables).get(state.table)
    if not table.times or condition is None or name is None:
        return None
    time = sql.Identifier(named(table.times[0].column, found.naming))
    query = statement(
        "get_profile_state_lag",
        None,
        table=sql.Identifier(found.schema, name),
        condition=condition,
        lag=statement(_LAG[table.times[0].unit], None, time=time),
        time=time,
    )
    row = conn.execute(query, params_for(state, settings)).fetchone()
    return None if row is None else row[0]
