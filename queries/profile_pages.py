"""What the on-call pages read of a library's tables beyond their states' counts (queries/profile_states.py) and
rows (queries/profile_rows.py): a pending state split by attempts (the lag without the likely poison rows, and
those apart), how many rows finished within a window, a table's rows by group, and a state's rows narrowed by a
group or by attempts. Every name comes from the profile and the names found (``Found``), through
``psycopg.sql.Identifier``; every block is in queries/profile_pages.sql."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.dimensions import done_time
from idemdash.core.profiles.shape import (
    DONE,
    EPOCH_MS,
    LOCAL_TIMESTAMP,
    MEANINGS,
    PENDING,
    TIMESTAMPTZ,
    UTC_TIMESTAMP,
    State,
    Table,
    Time,
)
from idemdash.queries import statement
from idemdash.queries.profile_rows import ProfileRow, get_state_lag, order_column, profile_table
from idemdash.queries.profile_states import params_for, state_condition, state_params
from idemdash.queries.rollup_states import read_library_states

_AGE = {
    TIMESTAMPTZ: "profile_age_timestamptz",
    UTC_TIMESTAMP: "profile_age_utc",
    LOCAL_TIMESTAMP: "profile_age_local",
    EPOCH_MS: "profile_age_epoch_ms",
}
_SINCE = {
    TIMESTAMPTZ: "profile_since_timestamptz",
    UTC_TIMESTAMP: "profile_since_utc",
    LOCAL_TIMESTAMP: "profile_since_local",
    EPOCH_MS: "profile_since_epoch_ms",
}
GROUPS_SHOWN = 50


@dataclass(frozen=True)
class PendingSplit:
    poison: int  # rows with min_attempts or more attempts (likely poison)
    lag_seconds: float | None  # how long the oldest of the others has waited
    poison_oldest_seconds: float | None


@dataclass(frozen=True)
class GroupVolume:
    group_values: list[Any]
    rows: int
    oldest_seconds: float | None
    newest_seconds: float | None


def _column(found: Found, name: str) -> sql.Identifier:
    return sql.Identifier(named(name, found.naming))


def _age(found: Found, time: Time, block: str, **names: sql.Composable) -> sql.Composable:
    at = statement(block, None, time=_column(found, time.column), **names)
    return statement(_AGE[time.unit], None, at=at)


def list_table_columns(conn: psycopg.Connection, found: Found, role: str) -> frozenset[str]:
    """The columns ``role``'s found table has now, by their names in the database (none for a table not found)."""
    name = found.table(role)
    if name is None:
        return frozenset()
    qualified = sql.Identifier(found.schema, name).as_string(conn)
    rows = conn.execute(statement("list_profile_table_columns"), {"table": qualified}).fetchall()
    return frozenset(c for (c,) in rows)


def attempts_column(conn: psycopg.Connection, found: Found, role: str) -> str | None:
    """The profile's attempts column of ``role``'s table where the found table has it (a version may lack it)."""
    table = profile_table(found, role)
    if table.attempts is None:
        return None
    return table.attempts if named(table.attempts, found.naming) in list_table_columns(conn, found, role) else None


def get_pending_split(
    conn: psycopg.Connection, found: Found, state: State, settings: Mapping[str, Any], min_attempts: int
) -> PendingSplit | None:
    """``state``'s rows split by attempts; None where its table records no attempts or no time (or is not found)."""
    table = profile_table(found, state.table)
    condition = state_condition(found, state)
    name = found.table(state.table)
    if attempts_column(conn, found, state.table) is None or not table.times or condition is None or name is None:
        return None
    assert table.attempts is not None
    attempts = _column(found, table.attempts)
    query = statement(
        "get_profile_pending_split",
        None,
        table=sql.Identifier(found.schema, name),
        condition=condition,
        attempts=attempts,
        healthy_age=_age(found, table.times[0], "profile_oldest_healthy", attempts=attempts),
        poison_age=_age(found, table.times[0], "profile_oldest_poison", attempts=attempts),
    )
    with conn.cursor(row_factory=class_row(PendingSplit)) as cur:
        return cur.execute(query, {**params_for(state, settings), "min_attempts": min_attempts}).fetchone()


def count_done_since(
    conn: psycopg.Connection, found: Found, state: State, settings: Mapping[str, Any], hours: int
) -> int | None:
    """How many of ``state``'s rows (a done state) finished within the last ``hours``, by the time the table records
    when the library finished a row; None where it records none."""
    table = profile_table(found, state.table)
    time = done_time(table)
    condition = state_condition(found, state)
    name = found.table(state.table)
    if time is None or condition is None or name is None:
        return None
    query = statement(
        "count_profile_state_since",
        None,
        table=sql.Identifier(found.schema, name),
        condition=condition,
        time=_column(found, time.column),
        since=statement(_SINCE[time.unit]),
    )
    row = conn.execute(query, {**params_for(state, settings), "hours": hours}).fetchone()
    return None if row is None else row[0]


def list_group_volumes(
    conn: psycopg.Connection,
    found: Found,
    role: str,
    settings: Mapping[str, Any],
    *,
    contains: str | None = None,
    limit: int = GROUPS_SHOWN,
) -> list[GroupVolume] | None:
    """``role``'s table by its group columns, each group's rows and how long ago its oldest and newest came, the
    most recent first; None where the table declares no group or no time (or is not found)."""
    table = profile_table(found, role)
    name = found.table(role)
    if not table.groups or not table.times or name is None:
        return None
    time = table.times[0]
    group_columns = sql.SQL(", ").join(_column(found, c) for c in table.groups)
    group_filter = (
        statement("profile_group_contains", None, group_columns=group_columns)
        if contains
        else statement("profile_any_row")
    )
    query = statement(
        "list_profile_groups",
        None,
        table=sql.Identifier(found.schema, name),
        group_columns=group_columns,
        oldest_age=_age(found, time, "profile_oldest"),
        newest_age=_age(found, time, "profile_newest"),
        group_filter=group_filter,
    )
    zone = state_params(settings, role)["library_zone"]
    with conn.cursor(row_factory=class_row(GroupVolume)) as cur:
        return cur.execute(query, {"library_zone": zone, "group": contains, "limit": limit}).fetchall()


def list_narrowed_rows(
    conn: psycopg.Connection,
    found: Found,
    state: State,
    settings: Mapping[str, Any],
    *,
    group: str | None,
    min_attempts: int | None,
    after: tuple[str | None, str] | None,
    limit: int,
) -> list[ProfileRow]:
    """Up to ``limit`` of ``state``'s rows after ``after`` (as ``list_state_rows`` lists them), only of ``group`` (the
    table's first group column, as text) and with ``min_attempts`` or more attempts, where given."""
    table = profile_table(found, state.table)
    condition = state_condition(found, state)
    name = found.table(state.table)
    if condition is None or name is None:
        return []
    column = order_column(table, state)
    identity = statement(
        "profile_identity", None, identity_columns=sql.SQL(", ").join(_column(found, c) for c in table.identity)
    )
    query = statement(
        "list_profile_filtered_rows",
        None,
        table=sql.Identifier(found.schema, name),
        condition=condition,
        order_value=_column(found, column) if column else identity,
        identity_value=identity,
        group_filter=_group_is(found, table, group),
        attempts_filter=_attempts_at_least(
            found, table, min_attempts if attempts_column(conn, found, state.table) else None
        ),
    )
    values = {
        **params_for(state, settings),
        "omit": [named(c, found.naming) for c in (table.payload,) if c],
        "limit": limit,
        "first": after is None,
        "after_null": after is not None and after[0] is None,
        "after_order": after[0] if after else None,
        "after_identity": after[1] if after else None,
        "group": group,
        "min_attempts": min_attempts,
    }
    with conn.cursor(row_factory=class_row(ProfileRow)) as cur:
        return cur.execute(query, values).fetchall()


def _group_is(found: Found, table: Table, group: str | None) -> sql.Composable:
    if group is None or not table.groups:
        return statement("profile_any_row")
    return statement("profile_group_is", None, group_column=_column(found, table.groups[0]))


def _attempts_at_least(found: Found, table: Table, min_attempts: int | None) -> sql.Composable:
    if min_attempts is None or table.attempts is None:
        return statement("profile_any_row")
    return statement("profile_min_attempts", None, attempts=_column(found, table.attempts))


@dataclass(frozen=True)
class RoleNumbers:
    """One on-call role's numbers on a library's database, each by the library's own states; a number is None where
    the library does not record it (``recorded`` says which meanings it records at all)."""

    role: str
    name: str | None  # the table's name in the database; None: none found
    counts: dict[str, int | None]  # meaning -> rows, for the meanings its profile records
    stored: dict[str, Any]  # meaning -> the rollup job's StoredCount, where read stored
    lag_seconds: float | None  # its oldest pending row that is not likely poison
    poison: int | None  # pending with POISON_MIN_ATTEMPTS or more attempts; None: no attempts
    attempts_recorded: bool  # the found table has the profile's attempts column
    poison_oldest_seconds: float | None
    done_24h: int | None  # done within 24 h, by its done time; None: it records none


@dataclass(frozen=True)
class ProfileNumbers:
    found: Found | None
    problem: str | None  # why its tables were not found
    roles: tuple[RoleNumbers, ...]


def read_role_numbers(
    conn: psycopg.Connection,
    settings: Mapping[str, Any],
    roles: tuple[str, ...],
    min_attempts: int,
    *,
    count: bool = True,
) -> ProfileNumbers:
    """Each of ``roles`` the found profile has a table for: every state's count (stored where counting live is
    slow, as /tables reads them), the pending lag without likely poison rows and those apart, and done in 24 h.
    ``count=False``: the tables found and which states they record, nothing counted (a list that shows no number)."""
    read, stored = read_library_states(conn, settings, MEANINGS if count else (), roles=roles)
    if not count and read.found is not None:
        return ProfileNumbers(
            read.found,
            None,
            tuple(
                RoleNumbers(
                    role=role,
                    name=read.found.table(role),
                    counts={},
                    stored={},
                    lag_seconds=None,
                    poison=None,
                    poison_oldest_seconds=None,
                    done_24h=None,
                    attempts_recorded=attempts_column(conn, read.found, role) is not None,
                )
                for role in roles
                if read.found.table(role) is not None
            ),
        )
    found = read.found
    if found is None:
        return ProfileNumbers(None, read.problem, ())
    result = []
    for role in roles:
        name = found.table(role)
        states = {s.meaning: (s, n) for s, n in read.counts if s.table == role}
        if name is None and not states:
            continue
        pending = states.get(PENDING, (None, None))[0]
        split = get_pending_split(conn, found, pending, settings, min_attempts) if pending and name else None
        lag = (
            split.lag_seconds
            if split
            else (get_state_lag(conn, found, pending, settings) if pending and name else None)
        )
        done = states.get(DONE, (None, None))[0]
        result.append(
            RoleNumbers(
                role=role,
                name=name,
                counts={m: n for m, (_, n) in states.items()},
                stored={m: stored[(role, m)] for m in states if (role, m) in stored},
                lag_seconds=lag,
                poison=split.poison if split else None,
                attempts_recorded=bool(name) and attempts_column(conn, found, role) is not None,
                poison_oldest_seconds=split.poison_oldest_seconds if split else None,
                done_24h=count_done_since(conn, found, done, settings, 24) if done and name else None,
            )
        )
    return ProfileNumbers(found, None, tuple(result))
