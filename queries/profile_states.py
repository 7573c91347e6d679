"""How many rows of a library's tables are in each state of its profile (``core.profiles``): the state's block of
``queries/profile_states.sql``, with the shape's table and column names as ``idemdash detect`` found them."""
from __future__ import annotations

from collections.abc import Mapping
from string import Formatter
from typing import Any

import psycopg
from psycopg import sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import State
from idemdash.queries import QUERIES, Statement, statement


def state_statement(found: Found, state: State) -> Statement | None:
    """The state's count over ``found``'s tables; None when a table it reads is not among them (an optional one)."""
    tables = dict(found.tables)
    roles = {t.role for t in profile(found.profile).tables}
    if state.table not in tables:
        return None
    names: dict[str, sql.Composable] = {"table": sql.Identifier(found.schema, tables[state.table])}
    for _, field, _, _ in Formatter().parse(QUERIES[state.query].text):
        if not field or field in names:
            continue
        if field in roles:
            if field not in tables:
                return None
            names[field] = sql.Identifier(found.schema, tables[field])
        else:
            names[field] = sql.Identifier(named(field, found.naming))
    return statement(state.query, None, **names)


def count_state(conn: psycopg.Connection, found: Found, state: State, params: Mapping[str, Any]) -> int | None:
    """How many rows are in ``state``; ``params`` holds its values (``retention``, ``stale_after``, ...)."""
    query = state_statement(found, state)
    if query is None:
        return None
    row = conn.execute(query, dict(params)).fetchone()
    assert row is not None
    return int(row[0])


def count_states(conn: psycopg.Connection, found: Found,
                 params: Mapping[str, Any]) -> list[tuple[State, int | None]]:
    """Every state of the found shape's version, with its count."""
    return [(state, count_state(conn, found, state, params))
            for state in profile(found.profile).states_of(found.version)]
