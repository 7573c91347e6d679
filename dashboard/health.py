"""`/health` and `GET /api/v1/health/schema`: schema, retention and operational checks, each with what fixes it.

A check is one function ``(conn, tables, config) -> list[Check]`` in ``dashboard/checks/`` (one module per
concern) listed in ``CHECKS``; each runs in its own READ ONLY transaction, so one that times out or trips over
a missing table is reported and the others still run. Add a check by writing a function and appending it
there. ``run_checks`` needs no
Flask request, so a command line can print the same findings.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import psycopg
from flask import Blueprint, current_app, jsonify
from psycopg import errors

from dashboard.checks import FAIL, OK, SEVERITY, WARN, Check, CheckFn
from dashboard.checks.activity import check_advisory_locks, check_sessions
from dashboard.checks.maintenance import check_vacuum
from dashboard.checks.retention import check_key_retention, check_retention_settings
from dashboard.checks.schema import check_indexes, check_migrations, check_null_trap, check_tables
from dashboard.db import get_target
from dashboard.web import render
from queries import Tables

bp = Blueprint("health", __name__)

CHECKS: tuple[tuple[str, str, CheckFn], ...] = (
    ("migrations", "idemdash's schema", check_migrations),
    ("tables", "Application tables and columns", check_tables),
    ("null_trap", "Nullable columns in unique keys", check_null_trap),
    ("retention.settings", "Inbox and outbox retention", check_retention_settings),
    ("retention.keys", "Key retention", check_key_retention),
    ("indexes", "Recommended indexes", check_indexes),
    ("vacuum", "Dead tuples and vacuum", check_vacuum),
    ("sessions", "Long-running and idle-in-transaction sessions", check_sessions),
    ("advisory_lock", "Advisory locks", check_advisory_locks),
)


def run_checks(read: Callable[[], AbstractContextManager[psycopg.Connection]], tables: Tables,
               config: Mapping[str, Any]) -> list[Check]:
    """Every check, each in its own transaction from ``read()``; a check that cannot run says why."""
    results: list[Check] = []
    for check_id, title, fn in CHECKS:
        try:
            with read() as conn:
                results.extend(fn(conn, tables, config))
        except errors.QueryCanceled:
            results.append(Check(check_id, WARN, f"{title}: the check timed out",
                                 "Its catalog or sample query ran past the statement timeout; try again when the "
                                 "database is less busy."))
        except (errors.UndefinedTable, errors.UndefinedColumn, errors.InvalidSchemaName) as exc:
            detail = (exc.diag.message_primary or str(exc)).strip()
            results.append(Check(check_id, WARN, f"{title}: the check could not run",
                                 f"{detail}. The table and column findings say what is missing."))
    return results


def summary(checks: list[Check]) -> dict[str, int]:
    return {status: sum(c.status == status for c in checks) for status in (FAIL, WARN, OK)}


def _checks() -> list[Check]:
    db = get_target()
    return run_checks(db.read, db.tables, current_app.config)


@bp.get("/health")
def page():
    checks = sorted(_checks(), key=lambda c: SEVERITY[c.status])
    return render("health.html", "health_panel", checks=checks, counts=summary(checks),
                  as_of=datetime.now(timezone.utc), horizon=current_app.config["REPLAY_HORIZON"])


@bp.get("/api/v1/health/schema")
def api():
    checks = _checks()
    counts = summary(checks)
    return jsonify({
        "status": FAIL if counts[FAIL] else WARN if counts[WARN] else OK,
        "counts": counts,
        "items": [asdict(c) for c in checks],
        "next_cursor": None,
    })

