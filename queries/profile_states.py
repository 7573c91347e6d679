"""How many rows of a library's tables are in each state of its profile (``core.profiles``): the state's block of
``queries/profile_states.sql``, with the shape's table and column names as ``idemdash detect`` found them."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from string import Formatter
from typing import Any

import psycopg
from psycopg import errors, sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import Fact, State
from idemdash.core.settings import Settings
from idemdash.core.time_parsers import zone_name
from idemdash.queries import QUERIES, Statement, statement
from idemdash.queries.catalog import ShapeNotFound, find_configured


def state_names(found: Found, state: State | Fact) -> dict[str, sql.Composable] | None:
    """The identifiers a state's condition (or a row fact's expression) names: its own table, another table of the
    profile, columns as the found naming convention spells them; None when a table it reads is not among
    ``found``'s (an optional one)."""
    return block_names(found, state.table, state.query, dict(state.columns))


def block_names(
    found: Found, role: str, block: str, columns: Mapping[str, str] | None = None
) -> dict[str, sql.Composable] | None:
    """The identifiers a block over ``role``'s table names (a state's condition, a library action's condition or
    assignments): see ``state_names``."""
    tables = dict(found.tables)
    roles = {t.role for t in profile(found.profile).tables}
    if role not in tables:
        return None
    names: dict[str, sql.Composable] = {"table": sql.Identifier(found.schema, tables[role])}
    columns = columns or {}
    for field in _fields(block):
        if field in names:
            continue
        if field in roles:
            if field not in tables:
                return None
            names[field] = sql.Identifier(found.schema, tables[field])
        else:
            names[field] = sql.Identifier(named(columns.get(field, field), found.naming))
    return names


def _fields(block: str) -> list[str]:
    """The names a block fills in, with those of the blocks it composes (a fact may name a state's condition,
    which the loader renders with the same names)."""
    found: list[str] = []
    for _, field, _, _ in Formatter().parse(QUERIES[block].text):
        if field:
            found.extend(_fields(field) if field in QUERIES else [field])
    return found


def state_condition(found: Found, state: State) -> sql.Composable | None:
    """The state's condition (its block of profile_states.sql) over ``found``'s tables, or None (see state_names)."""
    names = state_names(found, state)
    return None if names is None else statement(state.query, None, **names)


def state_statement(found: Found, state: State, block: str = "count_profile_state") -> Statement | None:
    """The state's count over ``found``'s tables (or another ``block`` of its rows: estimate_profile_state); None
    when a table it reads is not among them (an optional one)."""
    names = state_names(found, state)
    if names is None:
        return None
    return statement(block, None, table=names["table"], condition=statement(state.query, None, **names))


def count_state(conn: psycopg.Connection, found: Found, state: State, params: Mapping[str, Any]) -> int | None:
    """How many rows are in ``state``; ``params`` holds its values (``retention``, ``stale_after``, ...)."""
    query = state_statement(found, state)
    if query is None:
        return None
    row = conn.execute(query, dict(params)).fetchone()
    assert row is not None
    return int(row[0])


def count_states(conn: psycopg.Connection, found: Found, params: Mapping[str, Any]) -> list[tuple[State, int | None]]:
    """Every state of the found shape's version, with its count (``params``, and the values the state binds itself)."""
    return [
        (state, count_state(conn, found, state, {**params, **_own_params(state)}))
        for state in profile(found.profile).states_of(found.version)
    ]


# roles whose rows are dedup records or keys: kept INBOX_RETENTION_DAYS; every other role OUTBOX_RETENTION_DAYS
_INBOX_LIKE = ("inbox", "keys")


def retention_setting(role: str) -> str:
    """The setting that keeps a table in ``role``: dedup records and keys the inbox's, anything else the outbox's."""
    return "INBOX_RETENTION_DAYS" if role in _INBOX_LIKE else "OUTBOX_RETENTION_DAYS"


def binds(state: State, name: str) -> bool:
    """Whether the state's condition binds the value ``name`` (a purge by its library's own ``keep_until`` binds no
    ``retention``)."""
    return f"%({name})s" in QUERIES[state.query].text


def state_params(settings: Settings, role: str) -> dict[str, Any]:
    """The values a state of a table in ``role`` is counted with, from the database's settings: the retention of
    its kind of table (as an interval, and as epoch milliseconds for Eventuate and DBOS), how long work may go
    unfinished (``DEFAULT_LEASE_SECONDS``: Spring Modulith's staleness, MassTransit's undelivered, Brandur's lock
    timeout, DBOS's silent executor; ``stale_before_epoch_ms`` in epoch milliseconds), the replay horizon's start in
    epoch milliseconds (``REPLAY_HORIZON``: a DBOS workflow ID called again within it replays), and the zone a
    library's naive local timestamps are written in (``LIBRARY_TIMEZONE``: CAP's)."""
    days = settings.value(retention_setting(role))
    zone = zone_name(settings.library_timezone)
    retention = timedelta(days=days)
    lease = timedelta(seconds=settings.default_lease_seconds)
    now = time.time()
    return {
        "retention": retention,
        "stale_after": lease,
        "lock_timeout": lease,
        "before_epoch_ms": int((now - retention.total_seconds()) * 1000),
        "library_zone": zone,
        "stale_before_epoch_ms": int((now - lease.total_seconds()) * 1000),
        "horizon_before_epoch_ms": int((now - settings.replay_horizon) * 1000),
    }


def params_for(state: State | Fact, settings: Settings) -> dict[str, Any]:
    """Everything a state's condition binds: the settings' values for its table (``state_params``) and its own
    (a custom shape's state values)."""
    return {**state_params(settings, state.table), **_own_params(state)}


def _own_params(state: State | Fact) -> dict[str, Any]:
    return {name: list(value) if isinstance(value, tuple) else value for name, value in state.params}


def count_configured_states(
    conn: psycopg.Connection, found: Found, settings: Settings
) -> list[tuple[State, int | None]]:
    """Every state of the found shape's version, counted with the database's own settings."""
    return [
        (state, count_state(conn, found, state, params_for(state, settings)))
        for state in profile(found.profile).states_of(found.version)
    ]


@dataclass(frozen=True)
class ConfiguredStates:
    """What the database's configured profile finds: its tables and every state's count, or why it found none."""

    found: Found | None
    problem: str | None
    counts: tuple[tuple[State, int | None], ...] = ()


def read_configured_states(conn: psycopg.Connection, settings: Settings) -> ConfiguredStates:
    try:
        found = find_configured(conn, settings)
    except ShapeNotFound as exc:
        return ConfiguredStates(None, str(exc))
    return ConfiguredStates(found, None, tuple(count_configured_states(conn, found, settings)))


@dataclass(frozen=True)
class MeasuredState:
    """A state's count and how long counting it took: what the rollup job stores for a library's database, so
    that a page counts live only the states that are quick to count (queries/rollups.py). ``estimated``: counting
    it took longer than the job's budget for one state, and ``count`` is the planner's estimate."""

    role: str
    meaning: str
    count: int | None
    ms: float
    estimated: bool = False


# The longest the rollup job counts one state for; a state slower than this (94M of 100M keys done: 110 s, a
# sequential read of the whole table) is stored as the planner's estimate, from the table's statistics.
COUNT_BUDGET_MS = 20_000


def estimate_state(conn: psycopg.Connection, found: Found, state: State, params: Mapping[str, Any]) -> int | None:
    """The planner's estimate of the rows in ``state`` (from the table's statistics: as good as its last ANALYZE);
    None when a table it reads is not among ``found``'s."""
    query = state_statement(found, state, "estimate_profile_state")
    if query is None:
        return None
    row = conn.execute(query, dict(params)).fetchone()
    assert row is not None
    return int(row[0][0]["Plan"]["Plan Rows"])


def measure_states(
    conn: psycopg.Connection, settings: Settings, budget_ms: int = COUNT_BUDGET_MS
) -> list[MeasuredState]:
    """Every state of the configured profile's tables, counted and timed, each within ``budget_ms`` (estimated
    past it); none when the tables are not found. Runs in the caller's transaction: each count in a savepoint."""
    try:
        found = find_configured(conn, settings)
    except ShapeNotFound:
        return []
    row = conn.execute(statement("get_statement_timeout")).fetchone()
    assert row is not None
    measured = []
    for state in profile(found.profile).states_of(found.version):
        params = params_for(state, settings)
        started = time.perf_counter()
        try:
            with conn.transaction():
                conn.execute(statement("set_statement_timeout"), {"ms": str(budget_ms)})
                count, estimated = count_state(conn, found, state, params), False
        except errors.QueryCanceled:
            count, estimated = estimate_state(conn, found, state, params), True
        measured.append(
            MeasuredState(state.table, state.meaning, count, (time.perf_counter() - started) * 1000, estimated)
        )
    conn.execute(statement("set_statement_timeout"), {"ms": row[0]})  # a kept savepoint kept the budget too
    return measured
