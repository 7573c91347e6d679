"""Catalog reads that more than one check makes, read once per ``run_checks``.

At 100M keys under load every statement is a round trip and a plan, and /health made 29: the three tables'
partitions twice each, their columns three times, their indexes twice. Inside ``once_per_run()`` (``run_checks``
opens it) each of these is read once and handed to every check that asks; outside it (a check called on its own)
each call reads. The catalog does not change between two checks of one run in any way a finding depends on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg

from idemdash.queries import Tables, health, indexes, partitions

T = TypeVar("T")

_reads: ContextVar[dict[str, Any] | None] = ContextVar("idemdash_check_reads", default=None)


@contextmanager
def once_per_run() -> Iterator[None]:
    token = _reads.set({})
    try:
        yield
    finally:
        _reads.reset(token)


def _once(name: str, read: Callable[[], T]) -> T:
    memo = _reads.get()
    if memo is None:
        return read()
    if name not in memo:
        memo[name] = read()  # a read that fails stores nothing: the next check that asks reads again
    value: T = memo[name]
    return value


def table_columns(conn: psycopg.Connection, tables: Tables) -> dict[str, dict[str, str]]:
    """Each existing application table's columns (name → type), keyed by its role."""
    return _once("columns", lambda: health.list_table_columns(conn, tables))


def app_indexes(conn: psycopg.Connection, tables: Tables) -> list[indexes.AppIndex]:
    """Every index on the application tables, with whether it is valid."""
    return _once("indexes", lambda: indexes.list_app_indexes(conn, tables))


def table_partitions(conn: psycopg.Connection, tables: Tables, table: str) -> list[partitions.Partition]:
    """The direct partitions of ``table`` (a role); [] when it is not partitioned."""
    return _once("partitions", lambda: partitions.list_partitions_by_role(conn, tables)).get(table, [])
