"""`idemdash check`: the recommended indexes (with the statement that creates each and why), the /health findings,
and `--apply-indexes` to build what is missing, CONCURRENTLY and one at a time.

The exit status is what a deploy script or a cron alert needs: 0 when every recommended index exists (valid)
and no health check fails, 1 otherwise.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial

import click
import psycopg

from idemdash.checks import FAIL, run_checks
from idemdash.checks.readiness import readiness
from idemdash.cli.check_library import report_library
from idemdash.cli.common import connect, database_errors, databases_option, targets
from idemdash.cli.fleet import Outcome, each_database, keep_going_option
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.queries import Tables, indexes
from idemdash.queries.target import Target


@click.command()
@databases_option
@click.option(
    "--apply-indexes", is_flag=True, help="Build the missing recommended indexes, concurrently and one at a time."
)
@keep_going_option
def check(database_url: str, database: str | None, apply_indexes: bool, keep_going: bool) -> None:
    """The indexes the pages and purges need (statement and why for each), the schema checks; exit 1 if any missing."""
    sys.exit(
        each_database(
            targets(database_url, database), partial(_check, apply_indexes=apply_indexes), keep_going=keep_going
        )
    )


def _check(db: Target, *, apply_indexes: bool) -> Outcome:
    """One database's report. Findings (an index missing, a check failing) give status 1 but are no failure:
    --fail-fast stops only at a database that could not be checked."""
    connect(db).close()  # a clear error for a wrong URL before anything else
    with database_errors(db, "checking"):
        status = report(db, apply_indexes=apply_indexes)
    if status == 0:
        return Outcome("passed")
    return Outcome("with findings", status, "not ready, an index missing or a check failing: see its summary above")


Echo = Callable[[str], None]


def report(db: Target, *, apply_indexes: bool, echo: Echo = click.echo) -> int:
    """Print the report (building missing indexes first when asked); returns the exit status."""
    if db.settings.profile != DEFAULT_PROFILE:
        return report_library(db, apply_indexes=apply_indexes, echo=echo)
    tables = db.tables
    with connect(db, "idemdash-check") as conn:
        problems = readiness(conn, tables)
        statuses = indexes.list_index_status(conn, tables)
        build_failed = False
        if apply_indexes:
            build_failed = _apply(conn, tables, statuses, echo)
            statuses = indexes.list_index_status(conn, tables)
    echo("Ready (what /readyz asks): " + ("yes" if not problems else "no"))
    for problem in problems:
        echo(f"  {problem.message}")
    echo("")
    _print_indexes(tables, statuses, echo)
    failed_checks = _print_health(db, echo)

    missing = [s for s in statuses if s.missing]
    no_table = [s for s in statuses if s.state == indexes.NO_TABLE]
    echo("")
    parts = [f"{len(statuses) - len(missing) - len(no_table)} of {len(statuses)} recommended indexes present"]
    if missing:
        parts.append(f"{len(missing)} missing or invalid")
    if no_table:
        parts.append(f"{len(no_table)} for tables that do not exist")
    parts.append(f"{failed_checks} health check{'s' if failed_checks != 1 else ''} failed")
    echo("summary: " + "; ".join(parts))
    if missing:
        echo(
            "Run `idemdash check --apply-indexes` with the tables' owner's database URL (`--database-url`; only the "
            "owner may build indexes) to build them concurrently, one at a time (writes go on meanwhile), or have "
            "the owner run the statements above, outside a transaction block."
        )
    return 1 if (problems or missing or no_table or failed_checks or build_failed) else 0


def _apply(conn: psycopg.Connection, tables: Tables, statuses: list[indexes.IndexStatus], echo: Echo) -> bool:
    todo = [s for s in statuses if s.missing]
    if not todo:
        echo("every recommended index already exists; nothing to build")
        echo("")
        return False
    failed = False
    for n, status in enumerate(todo, 1):
        what = "rebuilding invalid" if status.state == indexes.INVALID else "building"
        echo(f"[{n}/{len(todo)}] {what} {status.index_name} on {status.table} ...")
        started = time.monotonic()
        try:
            indexes.create_index(conn, tables, status)
        except psycopg.Error as exc:
            failed = True
            detail = (exc.diag.message_primary or str(exc)).strip()
            echo(f"        failed after {time.monotonic() - started:.1f} s: {detail}")
            if isinstance(exc, psycopg.errors.InsufficientPrivilege):
                echo(
                    "        (only the table's owner or a superuser may create its indexes: run `idemdash check "
                    "--apply-indexes` with the owner's database URL, or the statement below as the owner)"
                )
            else:
                echo(
                    "        (a failed concurrent build leaves an invalid index; `idemdash check --apply-indexes` "
                    "drops and rebuilds it)"
                )
            continue
        echo(f"        done in {time.monotonic() - started:.1f} s")
    echo("")
    return failed


def _print_indexes(tables: Tables, statuses: list[indexes.IndexStatus], echo: Echo) -> None:
    echo(
        f"Recommended indexes (queries/indexes.sql) for {tables.schema}.{tables.keys}, "
        f"{tables.schema}.{tables.inbox} and {tables.schema}.{tables.outbox}:"
    )
    for status in statuses:
        if status.state == indexes.OK:  # present and valid: nothing to do, one line
            echo(f"{status.state:<8} {status.index_name} on {status.table}")
            continue
        echo("")
        echo(f"{status.state:<8} {status.index_name} on {status.table}  [{status.advice.name}]")
        echo(f"         why: {status.advice.why}")
        if status.state == indexes.INVALID:
            echo(
                "         (exists but is invalid: a concurrent build failed; it is maintained on every write and "
                "never used. --apply-indexes drops and rebuilds it)"
            )
        if status.state == indexes.NO_TABLE:
            echo(f"         ({status.table} does not exist: check IDEMDASH_APP_SCHEMA and the table settings)")
        echo(f"         {status.create_sql};")


def _print_health(db: Target, echo: Echo) -> int:
    """The /health findings (checks/), minus its index findings (listed above); the count of fails."""
    db.open_pool("idemdash-check")
    try:
        found = run_checks(partial(db.read, primary=True), db.tables, db.settings)
        checks = [c for c in found if not c.id.startswith("index")]
    finally:
        db.close()
    echo("")
    echo("Schema, privileges, retention and operational checks (the /health page):")
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
