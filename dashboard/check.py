"""`idemdash check`: the recommended indexes (with the statement that creates each and why), the /health findings,
and `--apply-indexes` to build what is missing, CONCURRENTLY and one at a time.

The exit status is what a deploy script or a cron alert needs: 0 when every recommended index exists (valid)
and no health check fails, 1 otherwise.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import click
import psycopg
from psycopg_pool import ConnectionPool

from checks import FAIL, run_checks
from queries import Tables
from queries import indexes as q
from queries.db import read_tx

Echo = Callable[[str], None]


def run(url: str, config: Mapping[str, Any], *, apply_indexes: bool, echo: Echo = click.echo) -> int:
    """Print the report (building missing indexes first when asked); returns the exit status."""
    tables = Tables.from_config(config)
    with psycopg.connect(url, autocommit=True, application_name="idemdash-check") as conn:
        statuses = q.list_index_status(conn, tables)
        build_failed = False
        if apply_indexes:
            build_failed = _apply(conn, tables, statuses, echo)
            statuses = q.list_index_status(conn, tables)
    _print_indexes(tables, statuses, echo)
    failed_checks = _print_health(url, tables, config, echo)

    missing = [s for s in statuses if s.missing]
    no_table = [s for s in statuses if s.state == q.NO_TABLE]
    echo("")
    parts = [f"{len(statuses) - len(missing) - len(no_table)} of {len(statuses)} recommended indexes present"]
    if missing:
        parts.append(f"{len(missing)} missing or invalid")
    if no_table:
        parts.append(f"{len(no_table)} for tables that do not exist")
    parts.append(f"{failed_checks} health check{'s' if failed_checks != 1 else ''} failed")
    echo("summary: " + "; ".join(parts))
    if missing:
        echo("Run `idemdash check --apply-indexes` to build them (concurrently, one at a time: writes go on "
             "meanwhile), or run the statements above yourself, outside a transaction block.")
    return 1 if (missing or no_table or failed_checks or build_failed) else 0


def _apply(conn: psycopg.Connection, tables: Tables, statuses: list[q.IndexStatus], echo: Echo) -> bool:
    todo = [s for s in statuses if s.missing]
    if not todo:
        echo("every recommended index already exists; nothing to build")
        echo("")
        return False
    failed = False
    for n, status in enumerate(todo, 1):
        what = "rebuilding invalid" if status.state == q.INVALID else "building"
        echo(f"[{n}/{len(todo)}] {what} {status.index_name} on {status.table} ...")
        started = time.monotonic()
        try:
            q.create_index(conn, tables, status)
        except psycopg.Error as exc:
            failed = True
            detail = (exc.diag.message_primary or str(exc)).strip()
            echo(f"        failed after {time.monotonic() - started:.1f} s: {detail}")
            echo("        (a failed concurrent build leaves an invalid index; `idemdash check --apply-indexes` "
                 "drops and rebuilds it)")
            continue
        echo(f"        done in {time.monotonic() - started:.1f} s")
    echo("")
    return failed


def _print_indexes(tables: Tables, statuses: list[q.IndexStatus], echo: Echo) -> None:
    echo(f"Recommended indexes (queries/indexes.sql) for {tables.schema}.{tables.keys}, "
         f"{tables.schema}.{tables.inbox} and {tables.schema}.{tables.outbox}:")
    for status in statuses:
        echo("")
        echo(f"{status.state:<8} {status.index_name} on {status.table}  [{status.advice.name}]")
        echo(f"         why: {status.advice.why}")
        if status.state == q.INVALID:
            echo("         (exists but is invalid: a concurrent build failed; it is maintained on every write and "
                 "never used. --apply-indexes drops and rebuilds it)")
        if status.state == q.NO_TABLE:
            echo(f"         ({status.table} does not exist: check IDEMDASH_APP_SCHEMA and the table settings)")
        echo(f"         {status.create_sql};")


def _print_health(url: str, tables: Tables, config: Mapping[str, Any], echo: Echo) -> int:
    """The /health findings (dashboard/health.py), minus its index findings (listed above); the count of fails."""

    pool = ConnectionPool(url, min_size=1, max_size=1, open=True, name="idemdash-check",
                          kwargs={"application_name": "idemdash-check"})
    try:
        @contextmanager
        def read() -> Iterator[psycopg.Connection]:
            with read_tx(pool, config["STATEMENT_TIMEOUT_MS"]) as conn:
                yield conn

        checks = [c for c in run_checks(read, tables, config) if not c.id.startswith("index")]
    finally:
        pool.close()
    echo("")
    echo("Schema, retention and operational checks (the /health page):")
    for check in checks:
        echo("")
        echo(f"{check.status:<8} {check.title}  [{check.id}]")
        for key in check.keys:
            echo(f"         key: scope {key.scope!r}, key {key.key!r}")
        if check.status != "ok":
            echo(f"         {check.detail}")
            if check.fix_sql:
                for line in check.fix_sql.splitlines():
                    echo(f"         {line}")
            if check.fix:
                echo(f"         fix: {check.fix}")
    return sum(c.status == FAIL for c in checks)
