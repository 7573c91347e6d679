"""Statements only the benchmark (``benchmarks/page_bench.py``) runs: the four textbook queries as written
(docs/concepts.md, The four textbook queries), and setup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import psycopg
from psycopg import sql

from idemdash.queries import Tables
from idemdash.queries.transactions import select_all, select_one
from idemdash.queries.workload import statement

# The four textbook queries (docs/concepts.md, The four textbook queries), and the page each is compared with.
TEXTBOOK_QUERIES = {
    "textbook_stuck_keys": "active keys older than their lock horizon",
    "textbook_high_retry_commands": "high retry commands",
    "textbook_suppression_by_scope": "duplicate suppression rate by scope",
    "textbook_pending_outbox": "pending outbox rows",
}


@dataclass(frozen=True)
class ServerFacts:
    version: str
    shared_buffers: str
    work_mem: str
    effective_cache_size: str
    max_parallel_workers_per_gather: str
    jit: str
    random_page_cost: str


@dataclass(frozen=True)
class TableSize:
    table_name: str
    estimated_rows: int
    heap_bytes: int
    index_bytes: int


@dataclass(frozen=True)
class SampleKey:
    scope: str
    key: str


def run_textbook_query(conn: psycopg.Connection, name: str) -> int:
    """Run one of the textbook queries exactly as written and fetch every row; returns the row count."""
    if name not in TEXTBOOK_QUERIES:
        raise KeyError(name)
    with conn.cursor() as cur:
        cur.execute(statement(name))
        return len(cur.fetchall())


def analyze_app_tables(conn: psycopg.Connection, tables: Tables) -> None:
    conn.execute(statement("analyze_app_tables", tables))


def get_server_facts(conn: psycopg.Connection) -> ServerFacts:
    row = select_one(conn, statement("get_server_facts"), None, ServerFacts)
    assert row is not None
    return row


def list_app_table_sizes(conn: psycopg.Connection, tables: Tables) -> list[TableSize]:
    names = {
        name: sql.Identifier(tables.schema, getattr(tables, name)).as_string(conn)
        for name in ("keys", "inbox", "outbox")
    }
    return select_all(conn, statement("list_app_table_sizes"), names, TableSize)


def get_sample_stuck_key_with_outbox(
    conn: psycopg.Connection, tables: Tables, *, path_safe: bool = True
) -> SampleKey | None:
    return select_one(conn, statement("get_sample_stuck_key_with_outbox", tables), {"path_safe": path_safe}, SampleKey)


@dataclass(frozen=True)
class SampleMessage:
    consumer: str
    message_id: str


def get_sample_inbox_message(conn: psycopg.Connection, tables: Tables) -> SampleMessage | None:
    return select_one(conn, statement("get_sample_inbox_message", tables), None, SampleMessage)


def get_setting(conn: psycopg.Connection, name: str) -> str:
    row = conn.execute(statement("get_setting"), {"name": name}).fetchone()
    assert row is not None
    return cast(str, row[0])


def alter_system_set(conn: psycopg.Connection, name: str, value: str) -> None:
    """For the benchmark's own server only; needs autocommit."""
    conn.execute(statement("alter_system_set", setting=sql.Identifier(name), value=sql.Literal(value)))


@dataclass(frozen=True)
class RunPacing:
    probe_baseline_ms: float | None
    probe_p99_ms: float | None
    probes: int | None
    backoffs: int | None
    final_batch_size: int | None
    final_duty_cycle: float | None
    app_backends: int | None
    lock_backoffs: int | None


def get_run_pacing(conn: psycopg.Connection, run_id: int) -> RunPacing | None:
    return select_one(conn, statement("get_run_pacing"), {"run_id": run_id}, RunPacing)


def list_client_waits(conn: psycopg.Connection) -> list[str]:
    return [wait for (wait,) in conn.execute(statement("list_client_waits")).fetchall()]


def list_backends_of(conn: psycopg.Connection, application_name: str) -> list[int]:
    return [
        pid for (pid,) in conn.execute(statement("list_backends_of"), {"application_name": application_name}).fetchall()
    ]


def insert_quiet_scope(conn: psycopg.Connection, tables: Tables, scope: str, keys: int) -> None:
    """A scope whose ``keys`` keys all succeeded weeks ago, and one stuck key in it with an outbox row that the
    benchmark then takes as its sample key (a key page in a scope without a recent success)."""
    conn.execute(statement("insert_quiet_scope", tables), {"scope": scope, "keys": keys})


def delete_due_pages(conn: psycopg.Connection, tables: Tables, first_page: int, pages: int) -> int:
    """The frontier benchmark's bare batch: the due keys on ``pages`` heap pages from ``first_page``, deleted
    (autocommit: one statement, one commit); how many."""
    row = conn.execute(
        statement("frontier_delete_pages", tables),
        {"first_tid": f"({first_page},0)", "next_tid": f"({first_page + pages},0)"},
        prepare=False,
    ).fetchone()
    assert row is not None
    return int(row[0])


def set_session_setting(conn: psycopg.Connection, name: str, value: str) -> None:
    conn.execute(statement("set_session_setting", setting=sql.Identifier(name), value=sql.Literal(value)))
