"""A library's found table in SQL (core/profiles/detect.Found): its name, a column's name in the library's naming,
a row's identity, the state of a meaning; shared by the dimensions (queries/profile_dimensions.py) and the search
by identity (queries/profile_search.py)."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import State, Table
from idemdash.queries import statement


@dataclass(frozen=True)
class TableColumn:
    name: str
    data_type: str


def state_of(found: Found, role: str, meaning: str) -> State | None:
    """The state of the table meaning ``meaning`` in the found version of the shape, or None."""
    for state in profile(found.profile).states_of(found.version):
        if state.table == role and state.meaning == meaning:
            return state
    return None


def table_of(found: Found, table: Table | None) -> tuple[Table, sql.Composable] | None:
    name = found.table(table.role) if table is not None else None
    return None if name is None or table is None else (table, sql.Identifier(found.schema, name))


def column_of(found: Found, column: str) -> sql.Identifier:
    return sql.Identifier(named(column, found.naming))


def identity_of(found: Found, table: Table) -> sql.Composable:
    return statement(
        "profile_identity", None, identity_columns=sql.SQL(", ").join(column_of(found, c) for c in table.identity)
    )
