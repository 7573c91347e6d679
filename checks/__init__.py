"""Health checks, one home for `/health`, `GET /api/v1/health/schema` and `idemdash check` alike.

A check is one function ``(conn, tables, config) -> list[Check]`` in this package (one module per concern)
listed in ``CHECKS``; they share one READ ONLY transaction, and one that times out or trips over a missing table is
reported and the checks after it go on in a new one. Catalog reads several checks make are read once a run
(``shared_reads``). Add a check by writing a function and appending it there.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import psycopg
from psycopg import errors

from idemdash.checks import shared_reads
from idemdash.checks.activity import check_advisory_locks, check_sessions
from idemdash.checks.finding import FAIL, OK, SEVERITY, WARN, Check, CheckFn, KeyLink
from idemdash.checks.maintenance import check_vacuum
from idemdash.checks.migrations import check_migrations
from idemdash.checks.null_trap import check_null_trap
from idemdash.checks.outbox import check_outbox_parked
from idemdash.checks.partitioning import check_partitioning
from idemdash.checks.privileges import check_privileges
from idemdash.checks.purging import check_delete_settings, check_purge_indexes
from idemdash.checks.retention import check_key_retention, check_retention_settings
from idemdash.checks.schema import check_indexes, check_tables
from idemdash.core.settings import Settings
from idemdash.queries import Tables

__all__ = ["CHECKS", "FAIL", "OK", "SEVERITY", "WARN", "Check", "KeyLink", "run_checks", "summary"]

CHECKS: tuple[tuple[str, str, CheckFn], ...] = (
    ("migrations", "idemdash's schema", check_migrations),
    ("tables", "Application tables and columns", check_tables),
    ("privileges", "Privileges of the database role", check_privileges),
    ("null_trap", "Nullable columns in unique keys", check_null_trap),
    ("retention.settings", "Inbox and outbox retention", check_retention_settings),
    ("retention.keys", "Key retention", check_key_retention),
    ("indexes", "Recommended indexes", check_indexes),
    ("vacuum", "Dead tuples and vacuum", check_vacuum),
    ("sessions", "Long-running and idle-in-transaction sessions", check_sessions),
    ("advisory_lock", "Advisory locks", check_advisory_locks),
    ("purge.index", "Purges read only due rows", check_purge_indexes),
    ("purge.server", "Server settings for deletes", check_delete_settings),
    ("partition", "Partitioned tables", check_partitioning),
    ("outbox.parked", "Outbox rows can be parked", check_outbox_parked),
)


def run_checks(
    read: Callable[[], AbstractContextManager[psycopg.Connection]], tables: Tables, config: Settings
) -> list[Check]:
    """Every check, in order, in one transaction from ``read()``: at 100M keys under load, 14 transactions (or a
    savepoint each) were nearly half of /health's round trips. A check that fails or times out says why; its error ended
    the transaction, so the checks after it go on in a new one."""
    results: list[Check] = []
    pending = list(CHECKS)
    with shared_reads.once_per_run():  # what several checks read, read once
        while pending:
            try:
                with read() as conn:
                    while pending:
                        check_id, title, fn = pending.pop(0)
                        found, failed = _run_one(conn, check_id, title, fn, tables, config)
                        results.extend(found)
                        if failed:
                            raise _Aborted  # rolled back by read(); the rest in a new transaction
            except _Aborted:
                continue
    return results


class _Aborted(Exception):
    """A check's error ended the transaction the checks share."""


def _run_one(
    conn: psycopg.Connection, check_id: str, title: str, fn: CheckFn, tables: Tables, config: Settings
) -> tuple[list[Check], bool]:
    """The check's findings, and whether it failed (then a finding says why, and the transaction is aborted)."""
    try:
        return list(fn(conn, tables, config)), False
    except errors.QueryCanceled:
        return [
            Check(
                check_id,
                WARN,
                f"{title}: the check timed out",
                "Its catalog or sample query ran past the statement timeout; try again when the database is less busy.",
            )
        ], True
    except (
        errors.UndefinedTable,
        errors.UndefinedColumn,
        errors.InvalidSchemaName,
        errors.InsufficientPrivilege,
    ) as exc:
        detail = (exc.diag.message_primary or str(exc)).strip()
        return [
            Check(
                check_id,
                WARN,
                f"{title}: the check could not run",
                f"{detail}. The table and column findings say what is missing.",
            )
        ], True


def summary(checks: list[Check]) -> dict[str, int]:
    return {status: sum(c.status == status for c in checks) for status in (FAIL, WARN, OK)}
