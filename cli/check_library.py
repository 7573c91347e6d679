"""`idemdash check` on a database of another library's profile: its tables found where the configuration points,
every state's count, and the indexes idemdash advises for its pages (queries/profile_indexes.sql), built
CONCURRENTLY with `--apply-indexes`; the library's own indexes and rows are never touched, and idemdash needs
no schema of its own there to read them."""

from __future__ import annotations

import time
from collections.abc import Callable

import click
import psycopg

from idemdash.cli.common import connect
from idemdash.queries.profile_indexes import ProfileIndexStatus, create_profile_index, list_profile_index_status
from idemdash.queries.profile_states import read_configured_states
from idemdash.queries.target import Target

Echo = Callable[[str], None]


def report_library(db: Target, *, apply_indexes: bool, echo: Echo = click.echo) -> int:
    """Print the report; 0 when the tables are found and every advised index exists (valid), 1 otherwise."""
    build_failed = False
    with connect(db, "idemdash-check") as conn:
        read = read_configured_states(conn, db.settings)
        if read.found is None:
            echo(f"Ready (what /readyz asks): no\n  FAIL {read.problem}")
            return 1
        statuses = list_profile_index_status(conn, read.found)
        if apply_indexes:
            build_failed = _apply(conn, read.found, statuses, echo)
            statuses = list_profile_index_status(conn, read.found)
    found = read.found
    tables = dict(found.tables)
    version = f" {found.version}" if found.version else ""
    echo(
        f"Ready (what /readyz asks): yes\n{found.profile}{version} in schema {found.schema}, read-only: "
        + ", ".join(f"{name} ({role})" for role, name in found.tables)
    )
    for state, count in read.counts:
        echo(
            f"  {tables.get(state.table, state.table)} {state.meaning}: "
            + (f"{count:,}" if count is not None else "no table")
        )
    echo("")
    echo(f"Advised indexes for the pages over these tables ({len(statuses)}; the library's own are left as they are):")
    for status in statuses:
        echo(f"  [{status.state}] {status.index_name} on {status.table}: {status.advice.why}")
        if status.missing:
            echo(f"        {status.create_sql};")
    missing = [s for s in statuses if s.missing]
    if missing:
        echo(
            "Run `idemdash check --apply-indexes` with the tables' owner's database URL to build them "
            "concurrently, or have the owner run the statements above, outside a transaction block."
        )
    return 1 if missing or build_failed else 0


def _apply(conn: psycopg.Connection, found, statuses: list[ProfileIndexStatus], echo: Echo) -> bool:
    failed = False
    for status in (s for s in statuses if s.missing):
        echo(f"building {status.index_name} on {status.table} ...")
        started = time.monotonic()
        try:
            create_profile_index(conn, found, status)
        except psycopg.Error as exc:
            failed = True
            echo(
                f"        failed after {time.monotonic() - started:.1f} s: "
                f"{(exc.diag.message_primary or str(exc)).strip()}"
            )
            continue
        echo(f"        done in {time.monotonic() - started:.1f} s")
    return failed
