"""The indexes idemdash advises on a library's tables (``Profile.indexes``, queries/profile_indexes.sql): whether
each exists under the name idemdash gives it, and building a missing one CONCURRENTLY (`idemdash check
--apply-indexes`). The library's own indexes are never touched."""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter

import psycopg
from psycopg import sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import Index
from idemdash.queries import QUERIES, Statement, statement
from idemdash.queries.indexes import INVALID, MISSING, OK
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class LibraryIndex:
    table_name: str
    index_name: str
    valid: bool


@dataclass(frozen=True)
class ProfileIndexStatus:
    advice: Index
    index_name: str  # the name idemdash gives it
    table: str  # schema-qualified table it belongs on
    state: str  # ok, missing or invalid
    create_sql: str

    @property
    def missing(self) -> bool:
        return self.state in (MISSING, INVALID)


def index_name(found: Found, advice: Index) -> str:
    return f"{found.table(advice.table)}_{advice.purpose}_idemdash_idx"[:63]


def create_statement(found: Found, advice: Index) -> Statement:
    names: dict[str, sql.Composable] = {
        "index": sql.Identifier(index_name(found, advice)),
        "table": sql.Identifier(found.schema, found.table(advice.table) or advice.table),
    }
    for _, field, _, _ in Formatter().parse(QUERIES[advice.query].text):
        if field and field not in names:
            names[field] = sql.Identifier(named(field, found.naming))
    return statement(advice.query, None, **names)


def advised(found: Found) -> list[Index]:
    """The indexes advised for the found version's tables that are there."""
    return [
        i
        for i in profile(found.profile).indexes
        if (i.version is None or i.version == found.version) and found.table(i.table) is not None
    ]


def list_profile_index_status(conn: psycopg.Connection, found: Found) -> list[ProfileIndexStatus]:
    present = {
        (i.table_name, i.index_name): i.valid
        for i in select_all(
            conn,
            statement("list_app_indexes"),
            {"schema": found.schema, "names": [n for _, n in found.tables]},
            LibraryIndex,
        )
    }
    result = []
    for advice in advised(found):
        name = index_name(found, advice)
        valid = present.get((found.table(advice.table) or "", name))
        state = MISSING if valid is None else OK if valid else INVALID
        result.append(
            ProfileIndexStatus(
                advice,
                name,
                f"{found.schema}.{found.table(advice.table)}",
                state,
                create_statement(found, advice).as_string(conn),
            )
        )
    return result


def create_profile_index(conn: psycopg.Connection, found: Found, status: ProfileIndexStatus) -> None:
    """Build one advised index CONCURRENTLY (dropping an invalid leftover of idemdash's first); needs autocommit."""
    conn.execute(statement("set_index_build_session"))
    if status.state == INVALID:
        conn.execute(statement("drop_index_concurrently", index=sql.Identifier(found.schema, status.index_name)))
    conn.execute(create_statement(found, status.advice))
