"""SQL that only the demo, the workload simulator and the benchmarks run, kept apart from the product's statements
(queries/*.sql): the same named blocks and the same ``statement()``, from this folder's ``*.sql``."""

from __future__ import annotations

from psycopg import sql

from idemdash.queries import Statement, Tables, load_all, render

QUERIES = load_all(__name__)


def statement(name: str, tables: Tables | None = None, **identifiers: sql.Composable) -> Statement:
    return render(QUERIES[name], tables, **identifiers)
