"""Rows of a library's table found from pasted text (`/search` on a database whose tables record no operator's
decisions): the row's whole identity (the JSON array its URL has), else each identity column an index starts with,
equal to the text or, for a text column, starting with it; and its owners by name. Blocks of
``queries/profile_search.sql`` filled with the found table's names (``psycopg.sql.Identifier``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors, sql

from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import Table
from idemdash.queries import Statement, statement
from idemdash.queries.profile_rows import identity_values
from idemdash.queries.profile_tables import TableColumn, column_of, identity_of, table_of
from idemdash.queries.transactions import select_all, select_one

# rows found per table at most; index entries a prefix search reads per column
FOUND_LIMIT = 20
PREFIX_EXAMINE = 500


@dataclass(frozen=True)
class Identity:
    identity: str


@dataclass(frozen=True)
class _Found:
    found: bool


def find_rows(conn: psycopg.Connection, found: Found, table: Table | None, q: str) -> tuple[list[str], list[str]]:
    """The identities of ``role``'s rows the text names: the whole identity (its JSON array, as a row's URL has it),
    else each identity column an index starts with, equal to the text (cast to its type) or, for a text column,
    starting with it; and the columns compared (exact, then prefix, each as ``column`` or ``column (prefix)``)."""
    names = table_of(found, table)
    if names is None:
        return [], []
    table, ident = names
    if identity_values(table, q) is not None:
        return [q], ["identity"]
    regclass = ident.as_string(conn)
    indexed = {
        c.name: c.data_type
        for c in select_all(conn, statement("list_leading_index_columns"), {"regclass": regclass}, TableColumn)
    }
    hits: list[str] = []
    compared: list[str] = []
    for column in (named(c, found.naming) for c in table.identity):
        if column not in indexed:
            continue
        compared.append(column)
        hits += _probe(
            conn,
            statement(
                "find_profile_rows_exact",
                None,
                table=ident,
                column=sql.Identifier(column),
                identity_value=identity_of(found, table),
            ),
            {"q": q, "limit": FOUND_LIMIT},
        )
        if not hits and indexed[column] in ("text", "character varying"):
            compared.append(f"{column} (prefix)")
            hits += _probe(
                conn,
                statement(
                    "find_profile_rows_prefix",
                    None,
                    table=ident,
                    column=sql.Identifier(column),
                    identity_value=identity_of(found, table),
                ),
                {"q": q, "limit": FOUND_LIMIT, "examine": PREFIX_EXAMINE},
            )
        if hits:
            break
    return list(dict.fromkeys(hits))[:FOUND_LIMIT], compared


def find_owner(conn: psycopg.Connection, found: Found, table: Table | None, q: str) -> bool:
    """Whether a row of the table is owned by the text (its owner column, as text)."""
    names = table_of(found, table)
    if names is None or names[0].owner is None:
        return False
    table, ident = names
    row = select_one(
        conn,
        statement("find_profile_owner", None, table=ident, owner=column_of(found, str(table.owner))),
        {"q": q},
        _Found,
    )
    return bool(row and row.found)


def _probe(conn: psycopg.Connection, query: Statement, params: dict[str, Any]) -> list[str]:
    """A lookup whose text may not be a value of the column's type (a word for a uuid): no row, not an error."""
    try:
        with conn.transaction():
            return [r.identity for r in select_all(conn, query, params, Identity)]
    except errors.DataError:
        return []
