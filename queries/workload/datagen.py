"""Statements of the synthetic data generator (``benchmarks/datagen.py``): set-based inserts over generate_series.

Every generated value is a pure function of the row number and a seed, so a
range of rows can be written by any connection, in any order, and the same
seed writes the same data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import psycopg
from psycopg import sql

from idemdash.queries import Tables
from idemdash.queries.transactions import select_one
from idemdash.queries.workload import statement


@dataclass(frozen=True)
class KeyPlan:
    """Exact counts for ``n`` keys; ``perm`` is coprime with ``n - (processing - stuck)``: it permutes the rows
    that are not active claims (row number → status)."""

    n: int
    processing: int  # stuck ones included
    stuck: int
    failed_retryable: int
    failed_final: int
    perm: int
    response_bodies: bool = True  # succeeded keys store a response body besides their result reference


@dataclass(frozen=True)
class OutboxPlan:
    """``backlog`` (pending minus the 2 % poison rows) are the newest rows; ``perm`` is coprime with
    ``n - backlog`` and scatters the poison and failed rows over the older ones."""

    n: int
    n_keys: int
    pending: int
    failed: int
    perm: int

    @property
    def backlog(self) -> int:
        return self.pending - self.pending // 50


@dataclass(frozen=True)
class Constraint:
    relation: str  # schema-qualified, as regclass prints it
    name: str
    definition: str  # pg_get_constraintdef


@dataclass(frozen=True)
class TableCounts:
    keys: int
    inbox: int
    outbox: int


def create_datagen_functions(conn: psycopg.Connection) -> None:
    """The session's pg_temp helpers and settings; call once per connection before the inserts."""
    conn.execute(statement("set_datagen_session"))
    conn.execute(statement("create_datagen_functions"))


def count_missing_app_tables(conn: psycopg.Connection, tables: Tables) -> int:
    names = {
        name: sql.Identifier(tables.schema, getattr(tables, name)).as_string(conn)
        for name in ("keys", "inbox", "outbox")
    }
    row = conn.execute(statement("count_missing_app_tables"), names).fetchone()
    assert row is not None
    return cast(int, row[0])


def status_type(conn: psycopg.Connection, tables: Tables) -> sql.Composable:
    """The keys table's status type as an identifier (an application enum, or text)."""
    name = sql.Identifier(tables.schema, tables.keys).as_string(conn)
    row = conn.execute(statement("get_status_type"), {"table": name}).fetchone()
    if row is None:
        raise LookupError(f"{tables.schema}.{tables.keys} has no status column")
    return sql.Identifier(row[0], row[1])


def insert_generated_keys(
    conn: psycopg.Connection, tables: Tables, plan: KeyPlan, seed: int, lo: int, hi: int, status: sql.Composable
) -> int:
    return conn.execute(
        statement("insert_generated_keys", tables, status_type=status),
        {
            "n": plan.n,
            "processing": plan.processing,
            "stuck": plan.stuck,
            "failed_retryable": plan.failed_retryable,
            "failed_final": plan.failed_final,
            "perm": plan.perm,
            "response_bodies": plan.response_bodies,
            "seed": seed,
            "lo": lo,
            "hi": hi,
        },
    ).rowcount


def insert_generated_inbox(conn: psycopg.Connection, tables: Tables, n: int, seed: int, lo: int, hi: int) -> int:
    return conn.execute(
        statement("insert_generated_inbox", tables), {"n": n, "seed": seed, "lo": lo, "hi": hi}
    ).rowcount


def insert_generated_outbox(
    conn: psycopg.Connection, tables: Tables, plan: OutboxPlan, seed: int, lo: int, hi: int
) -> int:
    return conn.execute(
        statement("insert_generated_outbox", tables),
        {
            "n": plan.n,
            "n_keys": plan.n_keys,
            "pending": plan.pending,
            "failed": plan.failed,
            "backlog": plan.backlog,
            "perm": plan.perm,
            "seed": seed,
            "lo": lo,
            "hi": hi,
        },
    ).rowcount


def count_generated_rows(conn: psycopg.Connection, tables: Tables) -> TableCounts:
    row = select_one(conn, statement("count_generated_rows", tables), None, TableCounts)
    assert row is not None
    return row


def truncate_generated_tables(conn: psycopg.Connection, tables: Tables) -> None:
    conn.execute(statement("truncate_generated_tables", tables))


def vacuum_analyze(conn: psycopg.Connection, tables: Tables, table: str) -> None:
    """VACUUM (ANALYZE) one of 'keys', 'inbox', 'outbox'; needs an autocommit connection."""
    conn.execute(statement(f"vacuum_analyze_{table}", tables))


def list_deferrable_constraints(conn: psycopg.Connection, tables: Tables) -> list[Constraint]:
    names = {
        name: sql.Identifier(tables.schema, getattr(tables, name)).as_string(conn)
        for name in ("keys", "inbox", "outbox")
    }
    return [Constraint(*row) for row in conn.execute(statement("list_deferrable_constraints"), names).fetchall()]


def drop_constraint(conn: psycopg.Connection, constraint: Constraint) -> None:
    conn.execute(
        statement(
            "drop_constraint", relation=sql.SQL(constraint.relation), constraint_name=sql.Identifier(constraint.name)
        )
    )


def add_constraint(conn: psycopg.Connection, constraint: Constraint) -> None:
    # the relation and definition come from the catalog (regclass and pg_get_constraintdef quote what needs it)
    conn.execute(
        statement(
            "add_constraint",
            relation=sql.SQL(constraint.relation),
            constraint_name=sql.Identifier(constraint.name),
            definition=sql.SQL(constraint.definition),
        )
    )


# where a load keeps the constraints it dropped until they are back (create_deferred_record in datagen.sql)
DEFERRED_RECORD = "datagen_deferred_constraints"


def _record(tables: Tables) -> sql.Identifier:
    return sql.Identifier(tables.schema, DEFERRED_RECORD)


def list_deferred_record(conn: psycopg.Connection, tables: Tables) -> list[Constraint]:
    """The constraints an earlier load dropped and did not add back (it was interrupted); none without a record."""
    row = conn.execute(statement("get_deferred_record"), {"record": f"{tables.schema}.{DEFERRED_RECORD}"}).fetchone()
    if not row or not row[0]:
        return []
    return [Constraint(*r) for r in conn.execute(statement("list_deferred_record", record=_record(tables))).fetchall()]


def record_deferred(conn: psycopg.Connection, tables: Tables, constraints: list[Constraint]) -> None:
    conn.execute(statement("create_deferred_record", record=_record(tables)))
    for c in constraints:
        conn.execute(
            statement("record_deferred_constraint", record=_record(tables)),
            {"relation": c.relation, "name": c.name, "definition": c.definition},
        )


def forget_deferred(conn: psycopg.Connection, tables: Tables, constraint: Constraint) -> None:
    conn.execute(
        statement("forget_deferred_constraint", record=_record(tables)),
        {"relation": constraint.relation, "name": constraint.name},
    )


def drop_deferred_record(conn: psycopg.Connection, tables: Tables) -> None:
    conn.execute(statement("drop_deferred_record", record=_record(tables)))
