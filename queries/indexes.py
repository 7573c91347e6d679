"""The indexes idemdash's queries need, named so a timed-out panel can say which would help, whether each exists,
and building the missing ones with CREATE INDEX CONCURRENTLY (`idemdash check --apply-indexes`)."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from idemdash.queries import QUERIES, Query, Statement, Tables, render, statement
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class IndexAdvice:
    name: str  # the block in indexes.sql, e.g. index_keys_leases
    table: str  # 'keys', 'inbox' or 'outbox'
    why: str

    def index_name(self, tables: Tables) -> str:
        base = getattr(tables, self.table)
        return f"{base}_{self.name.removeprefix('index_').split('_', 1)[1]}_idemdash_idx"[:63]

    def create_statement(self, tables: Tables) -> Statement:
        return statement(self.name, tables, index_name=sql.Identifier(self.index_name(tables)))

    def create_statement_in_transaction(self, tables: Tables) -> Statement:
        """The same index built inside a transaction (no CONCURRENTLY): for a table being created, and the only
        way on a partitioned table, where PostgreSQL cannot build an index concurrently."""
        query = QUERIES[self.name]
        plain = Query(query.name, query.description, query.text.replace(" CONCURRENTLY", "", 1), query.source)
        return render(plain, tables, index_name=sql.Identifier(self.index_name(tables)))

    def as_text(self, tables: Tables) -> str:
        return self.create_statement(tables).as_string(None)


ADVICE = {
    name: IndexAdvice(name, name.split("_")[1], QUERIES[name].description)
    for name in QUERIES
    if name.startswith("index_")
}


OK, MISSING, INVALID, NO_TABLE = "ok", "missing", "invalid", "no table"


@dataclass(frozen=True)
class AppIndex:
    table_name: str
    index_name: str
    valid: bool


@dataclass(frozen=True)
class IndexStatus:
    advice: IndexAdvice
    index_name: str  # the name idemdash gives it
    table: str  # schema-qualified table it belongs on
    state: str  # ok, missing, invalid or 'no table'
    create_sql: str

    @property
    def missing(self) -> bool:
        return self.state in (MISSING, INVALID)


def list_app_indexes(conn: psycopg.Connection, tables: Tables) -> list[AppIndex]:
    return select_all(
        conn,
        statement("list_app_indexes"),
        {"schema": tables.schema, "names": [tables.keys, tables.inbox, tables.outbox]},
        AppIndex,
    )


def list_index_status(
    conn: psycopg.Connection, tables: Tables, found: list[AppIndex] | None = None
) -> list[IndexStatus]:
    """Each recommended index, by the name idemdash gives it, and whether it exists and is valid (``found``: the
    tables' indexes, when the caller has read them already)."""
    found = list_app_indexes(conn, tables) if found is None else found
    by_name = {(i.table_name, i.index_name): i.valid for i in found}
    present_tables = {i.table_name for i in found}
    result = []
    for advice in ADVICE.values():
        table = getattr(tables, advice.table)
        name = advice.index_name(tables)
        valid = by_name.get((table, name))
        if valid is None:
            state = MISSING if table in present_tables or _table_exists(conn, tables, advice.table) else NO_TABLE
        else:
            state = OK if valid else INVALID
        result.append(IndexStatus(advice, name, f"{tables.schema}.{table}", state, advice.as_text(tables)))
    return result


def _table_exists(conn: psycopg.Connection, tables: Tables, role: str) -> bool:
    # an application table without any index (not even a primary key) still exists
    ident = sql.Identifier(tables.schema, getattr(tables, role)).as_string(conn)
    row = conn.execute(statement("get_table_exists"), {"table": ident}).fetchone()
    return bool(row and row[0])


def create_index(conn: psycopg.Connection, tables: Tables, status: IndexStatus) -> None:
    """Build one recommended index CONCURRENTLY (dropping an invalid leftover first); needs autocommit."""
    conn.execute(statement("set_index_build_session"))
    if status.state == INVALID:
        conn.execute(statement("drop_index_concurrently", index=sql.Identifier(tables.schema, status.index_name)))
    conn.execute(status.advice.create_statement(tables))


def drop_index(conn: psycopg.Connection, tables: Tables, index_name: str) -> None:
    """DROP INDEX CONCURRENTLY IF EXISTS (the benchmark's phase without the recommended indexes); needs autocommit."""
    conn.execute(statement("drop_index_concurrently", index=sql.Identifier(tables.schema, index_name)))
