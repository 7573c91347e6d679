"""`/health` and `GET /api/v1/health/schema`: schema and retention checks, each with what fixes it.

A check is one function ``(conn, tables, config) -> list[Check]`` listed in
``CHECKS``; each runs in its own READ ONLY transaction, so one that times out
or trips over a missing table is reported and the others still run. Add a
check by writing a function and appending it there. ``run_checks`` needs no
Flask request, so a command line can print the same findings.
"""
from __future__ import annotations

import math
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import psycopg
from flask import Blueprint, current_app, jsonify
from psycopg import errors

from dashboard.db import get_db
from dashboard.web import duration, render
from queries import Tables
from queries import health as q
from queries.indexes import ADVICE
from queries.migrate import list_migrations

bp = Blueprint("health", __name__)

OK, WARN, FAIL = "ok", "warn", "fail"
SEVERITY = {FAIL: 0, WARN: 1, OK: 2}
KEY_SAMPLE = 10_000        # most recent keys the key-retention check looks at
MAX_SCOPE_FINDINGS = 20    # scopes listed one by one before the rest are summed up
# expires_at computed from a slightly earlier now() than created_at is not a misconfiguration
RETENTION_SLACK_SECONDS = 60


@dataclass(frozen=True)
class Check:
    id: str
    status: str            # ok, warn or fail
    title: str
    detail: str
    fix_sql: str | None = None
    fix: str | None = None   # a setting or command, when the fix is not SQL


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str       # the reference schema's type, for the ADD COLUMN a finding suggests
    feature: str | None  # None: required; otherwise what stops working without it


# DESIGN section 1. Required columns are what the counts, stuck lists and purges cannot do without.
COLUMNS: dict[str, tuple[Column, ...]] = {
    "keys": (
        Column("idempotency_scope", "text", None),
        Column("idempotency_key", "text", None),
        Column("status", "text", None),
        Column("request_hash", "text", None),
        Column("claimed_by", "text", None),
        Column("claimed_at", "timestamptz", None),
        Column("locked_until", "timestamptz", None),
        Column("attempt_count", "integer", None),
        Column("created_at", "timestamptz", None),
        Column("updated_at", "timestamptz", None),
        Column("expires_at", "timestamptz", None),
        Column("result_ref_type", "text", "the key page (stored result) and the already_succeeded reclassification"),
        Column("result_ref_id", "uuid", "the key page (stored result) and the already_succeeded reclassification"),
        Column("response_body", "jsonb", "the key page (stored response) and the already_succeeded reclassification"),
        Column("failure_code", "text", "the key page (failure details) and the abandoned reclassification"),
        Column("failure_message", "text", "the key page (failure details) and the abandoned reclassification"),
    ),
    "inbox": (
        Column("consumer_name", "text", None),
        Column("message_id", "text", None),
        Column("processed_at", "timestamptz", None),
        Column("message_hash", "text", "detecting a message id reused with a different payload (seed 004, section 10); "
                                       "idemdash itself does not read it"),
        Column("result_ref_type", "text", "answering a duplicate delivery with the first result; idemdash itself does "
                                          "not read it"),
        Column("result_ref_id", "uuid", "answering a duplicate delivery with the first result; idemdash itself does "
                                        "not read it"),
    ),
    "outbox": (
        Column("outbox_id", "uuid", None),
        Column("status", "text", None),
        Column("created_at", "timestamptz", None),
        Column("published_at", "timestamptz", None),
        Column("event_type", "text", "the outbox page (per event type numbers and the row list)"),
        Column("aggregate_type", "text", "the outbox page's row list"),
        Column("aggregate_id", "uuid", "the outbox page's row list"),
        Column("idempotency_scope", "text", "related outbox rows on the key page (evidence for already_succeeded) "
                                            "and the outbox row list"),
        Column("idempotency_key", "text", "related outbox rows on the key page (evidence for already_succeeded) "
                                          "and the outbox row list"),
        Column("payload", "jsonb", "the outbox page's row list (payloads)"),
        Column("attempt_count", "integer", "likely poison events (pending rows with many attempts) on the outbox page"),
    ),
}

TABLE_SETTING = {"keys": "IDEMDASH_KEYS_TABLE", "inbox": "IDEMDASH_INBOX_TABLE", "outbox": "IDEMDASH_OUTBOX_TABLE"}


def _qualified(tables: Tables, role: str) -> str:
    return f"{tables.schema}.{getattr(tables, role)}"


# -- the checks ------------------------------------------------------------------------------------------

def check_migrations(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(a) idemdash's own schema has every migration this version ships, unedited."""
    known = list_migrations()
    if not q.get_migration_table(conn):
        return [Check("migrations", FAIL, "idemdash's own schema is not installed",
                      "The idemdash schema (audit log, purge runs, metric snapshots) does not exist in this database, "
                      "so purges cannot be recorded and actions cannot be audited. Run `idemdash migrate` (safe to "
                      "run while other replicas start: it takes an advisory lock).", fix="idemdash migrate")]
    applied = {m.version: m for m in q.list_applied_migrations(conn)}
    findings = []
    edited = [m for m in known if m.version in applied and applied[m.version].checksum != m.checksum]
    if edited:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in edited)
        findings.append(Check("migrations.edited", FAIL, f"Migration changed after it was applied: {names}",
                              "Migrations are append-only; this idemdash ships a different text for a migration the "
                              "database already ran, so `idemdash migrate` refuses to continue. Install the released "
                              "idemdash version, which has the original files."))
    pending = [m for m in known if m.version not in applied]
    if pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        findings.append(Check("migrations", FAIL,
                              f"{len(pending)} migration{'s' if len(pending) != 1 else ''} pending: {names}",
                              "This idemdash expects tables or columns those migrations create; pages that need them "
                              "fail until you run `idemdash migrate`.", fix="idemdash migrate"))
    newer = sorted(v for v in applied if v > (known[-1].version if known else 0))
    if newer:
        findings.append(Check("migrations.newer", WARN, "The database was migrated by a newer idemdash",
                              f"Migration{'s' if len(newer) != 1 else ''} {', '.join(f'{v:04d}' for v in newer)} "
                              "are unknown to this version. Upgrade this idemdash to match the others.",
                              fix="upgrade idemdash"))
    if not findings:
        last = known[-1]
        findings.append(Check("migrations", OK, "idemdash's schema is up to date",
                              f"{len(known)} migrations applied, the latest {last.version:04d}_{last.name}."))
    return findings


def check_tables(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(b) The three application tables exist with the columns of DESIGN section 1."""
    present = q.list_table_columns(conn, tables)
    findings = []
    for role, expected in COLUMNS.items():
        name = _qualified(tables, role)
        if role not in present:
            findings.append(Check(
                f"table.{role}", FAIL, f"Table {name} does not exist",
                f"idemdash reads the {role} table from {name}. If yours has another name or schema, set "
                f"IDEMDASH_APP_SCHEMA and {TABLE_SETTING[role]}; for a new application, `idemdash init-app-schema` "
                "creates the reference tables.",
                fix=f"IDEMDASH_APP_SCHEMA / {TABLE_SETTING[role]}, or idemdash init-app-schema"))
            continue
        columns = present[role]
        missing = [c for c in expected if c.name not in columns]
        for column in missing:
            fix_sql = q.fix_add_column(tables, role, column.name, column.data_type)
            if column.feature is None:
                findings.append(Check(
                    f"column.{role}.{column.name}", FAIL, f"{name} has no column {column.name}",
                    f"{column.name} is required: the overview, the lists and the purges of this table read it, "
                    "so they fail. Add it (idemdash never changes your tables itself), or point the settings at "
                    "the right table.", fix_sql=fix_sql))
            else:
                findings.append(Check(
                    f"column.{role}.{column.name}", WARN, f"{name} has no column {column.name}",
                    f"Without it this stops working: {column.feature}. Everything else works.", fix_sql=fix_sql))
        if not missing:
            findings.append(Check(f"table.{role}", OK, f"{name} has every column idemdash uses",
                                  f"{len(expected)} columns checked."))
    return findings


def check_retention_settings(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(c) The inbox and outbox purges keep rows at least as long as a retry or redelivery may still come."""
    horizon = config["REPLAY_HORIZON_HOURS"]
    findings = []
    retained = [("inbox", "INBOX_RETENTION_DAYS",
                 "a message redelivered after its inbox row was purged is processed a second time")]
    if "OUTBOX_RETENTION_DAYS" in config:
        retained.append(("outbox", "OUTBOX_RETENTION_DAYS",
                         "a command retried after its published outbox row was purged can insert and publish the "
                         "same event again"))
    for role, setting, harm in retained:
        days = config[setting]
        if days * 24 < horizon:
            findings.append(Check(
                f"retention.{role}", WARN,
                f"{role.capitalize()} retention ({days} d) is shorter than the replay horizon ({horizon} h)",
                f"Rows are purged after {days} d but retries and redeliveries may come for {horizon} h "
                f"(IDEMDASH_REPLAY_HORIZON_HOURS): {harm} (seed 003, \"retention shorter than replay horizon\"). "
                f"Keep rows at least as long as the horizon, or lower the horizon if it is really shorter.",
                fix=f"IDEMDASH_{setting}={math.ceil(horizon / 24)}"))
        else:
            findings.append(Check(f"retention.{role}", OK,
                                  f"{role.capitalize()} retention ({days} d) covers the replay horizon ({horizon} h)",
                                  f"IDEMDASH_{setting}={days}, IDEMDASH_REPLAY_HORIZON_HOURS={horizon}."))
    return findings


def check_key_retention(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(c) Each scope's keys live (expires_at - created_at) at least the replay horizon."""
    horizon = config["REPLAY_HORIZON_HOURS"]
    scopes = q.list_key_retention_by_scope(conn, tables, sample=KEY_SAMPLE)
    short = [s for s in scopes if s.min_retention_seconds < horizon * 3600 - RETENTION_SLACK_SECONDS]
    findings = []
    for scope in short[:MAX_SCOPE_FINDINGS]:
        findings.append(Check(
            f"retention.keys.{scope.scope}", WARN,
            f"Keys in scope {scope.scope!r} expire after {duration(scope.min_retention_seconds)}, less than the "
            f"replay horizon ({horizon} h)",
            f"Shortest expires_at - created_at among this scope's {scope.sampled} key(s) in the {KEY_SAMPLE:,} most "
            "recently created. Once such a key is purged, a client retry with the same key runs the command a second "
            "time. Have the application set expires_at at least the horizon after created_at (the reference claim "
            "function's p_retention); the SQL below extends the keys already written (batch it on a big table).",
            fix_sql=q.fix_extend_key_retention(tables, scope.scope, horizon)))
    if len(short) > MAX_SCOPE_FINDINGS:
        rest = short[MAX_SCOPE_FINDINGS:]
        findings.append(Check("retention.keys.more", WARN, f"{len(rest)} more scopes expire keys before the horizon",
                              "Scopes: " + ", ".join(repr(s.scope) for s in rest[:50]) + ("…" if len(rest) > 50 else "")))
    if not short:
        sampled = sum(s.sampled for s in scopes)
        findings.append(Check(
            "retention.keys", OK, f"Keys live at least the replay horizon ({horizon} h)",
            f"Checked {sampled:,} recent key(s) in {len(scopes)} scope(s)." if sampled
            else "No keys yet; checked again once there are some."))
    return findings


def check_indexes(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(d) The recommended indexes (queries/indexes.sql) exist and are valid."""
    found = q.list_table_indexes(conn, tables)
    valid = {i.index_name: i.valid for i in found}
    existing_tables = set(q.list_table_columns(conn, tables))
    findings = []
    checked = 0
    for advice in ADVICE.values():
        if advice.table not in existing_tables:
            continue  # the table check reports the missing table
        checked += 1
        name = advice.index_name(tables)
        create = advice.as_text(tables)
        if name not in valid:
            findings.append(Check(
                f"index.{advice.name}", WARN, f"Recommended index {name} is missing",
                f"For: {advice.why} Without it that query scans {_qualified(tables, advice.table)}: fine while the "
                "table is small, a timed-out panel once it is big. The statement does not block writes (run it "
                "outside a transaction block).", fix_sql=create))
        elif not valid[name]:
            findings.append(Check(
                f"index.{advice.name}", WARN, f"Index {name} is invalid",
                "An index build (CONCURRENTLY) that failed or was cancelled leaves an invalid index: PostgreSQL "
                "maintains it on every write but never uses it. Drop it and create it again.",
                fix_sql=f"{q.fix_drop_index(tables, name)};\n{create}"))
    if not findings and checked:
        findings.append(Check("index", OK, f"All {checked} recommended indexes exist",
                              "Listed by `idemdash check` and in queries/indexes.sql."))
    return findings


CheckFn = Callable[[psycopg.Connection, Tables, Mapping[str, Any]], list[Check]]

CHECKS: tuple[tuple[str, str, CheckFn], ...] = (
    ("migrations", "idemdash's schema", check_migrations),
    ("tables", "Application tables and columns", check_tables),
    ("retention.settings", "Inbox and outbox retention", check_retention_settings),
    ("retention.keys", "Key retention", check_key_retention),
    ("indexes", "Recommended indexes", check_indexes),
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
    db = get_db()
    return run_checks(db.read, db.tables, current_app.config)


@bp.get("/health")
def page():
    checks = sorted(_checks(), key=lambda c: SEVERITY[c.status])
    return render("health.html", "health_panel", checks=checks, counts=summary(checks),
                  as_of=datetime.now(timezone.utc), horizon=current_app.config["REPLAY_HORIZON_HOURS"])


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
