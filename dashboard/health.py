"""`/health` and `GET /api/v1/health/schema`: schema, retention and operational checks, each with what fixes it.

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
from dashboard.web import ago, duration, render
from jobs.purges import TABLES as PURGE_TABLES
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

# Dead tuples: a table warns above max(DEAD_TUPLES_MIN, DEAD_TUPLES_SHARE of its live rows) ...
DEAD_TUPLES_MIN = 10_000
DEAD_TUPLES_SHARE = 0.2
# ... or when this many rows changed and it was never vacuumed (or never analyzed) since the statistics reset.
NEVER_VACUUMED_CHANGES = 100_000
# What the finding suggests for the keys table (every claim and completion updates a row): 2% instead of 20%.
KEYS_AUTOVACUUM_SCALE_FACTOR = 0.02

# Sessions: one query running this long warns, a transaction idle this long warns; either this long fails.
LONG_QUERY_SECONDS = 300
IDLE_IN_TRANSACTION_SECONDS = 60
LONG_SESSION_FAIL_SECONDS = 3600
MAX_SESSION_FINDINGS = 20
QUERY_CHARS = 200          # of a session's query text shown in a finding
IDLE_TIMEOUT_SUGGESTED = "5min"

# Advisory locks: held this long by a session idle in a transaction warns; waiting always does.
ADVISORY_LOCK_IDLE_SECONDS = 300
MAX_LOCK_FINDINGS = 20     # locks listed (waiting first) and matched against keys
LOCK_KEY_CANDIDATES = 10_000  # most recently leased processing keys a lock is compared with
LOCKED_KEYS_PER_LOCK = 3
LOCK_DERIVATIONS = (
    "hashtextextended(idempotency_scope || ':' || idempotency_key, 0)",
    "hashtextextended(idempotency_key, 0)",
    "hashtext(idempotency_scope || ':' || idempotency_key)",
    "hashtext(idempotency_key)",
    "(hashtext(idempotency_scope), hashtext(idempotency_key)) for a two-key lock",
)


@dataclass(frozen=True)
class KeyLink:
    scope: str
    key: str


@dataclass(frozen=True)
class Check:
    id: str
    status: str            # ok, warn or fail
    title: str
    detail: str
    fix_sql: str | None = None
    fix: str | None = None   # a setting or command, when the fix is not SQL
    keys: tuple[KeyLink, ...] = ()  # idempotency keys the finding is about (the page links them)


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


def _roles(tables: Tables) -> dict[str, str]:
    """Configured table name → its role (keys, inbox, outbox)."""
    return {tables.keys: "keys", tables.inbox: "inbox", tables.outbox: "outbox"}


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


def check_null_trap(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(e) No unique key of the three tables has a nullable column: NULLs never conflict (seed 000)."""
    roles = _roles(tables)
    traps: dict[tuple[str, str], list[q.NullableUniqueColumn]] = {}
    nulls_equal = set()
    for column in q.list_nullable_unique_columns(conn, tables):
        if column.nulls_not_distinct:
            nulls_equal.add(f"{column.index_name} ({column.column_name})")
        else:
            traps.setdefault((column.table_name, column.index_name), []).append(column)
    findings = []
    for (table, index), columns in traps.items():
        first = columns[0]
        key = f"unique constraint {first.constraint_name}" if first.constraint_name else f"unique index {index}"
        if first.partial:
            key = f"partial {key}"
        names = ", ".join(c.column_name for c in columns)
        findings.append(Check(
            f"null_trap.{roles[table]}.{index}", FAIL,
            f"{names} may be NULL in {key} of {tables.schema}.{table}: duplicates get through",
            f"PostgreSQL treats NULLs as distinct, so two rows that differ only by a NULL in {names} never conflict: "
            "the unique key does not stop the second one, INSERT ... ON CONFLICT never fires for it, and the "
            "duplicate is written (seed 000, the NULL trap). Make the column NOT NULL and have the application write "
            "a sentinel ('' or a domain value for \"not applicable\") instead of NULL. SET NOT NULL fails while a "
            "NULL row exists, so give those rows their sentinel first (the comment counts them); it reads the whole "
            "table under an exclusive lock, so on a big table first add CHECK (column IS NOT NULL) NOT VALID and "
            "VALIDATE it, which lets SET NOT NULL skip the scan. On PostgreSQL 15+ the alternative is to recreate "
            "the key as UNIQUE NULLS NOT DISTINCT.",
            fix_sql=_fix_null_trap(tables, table, columns)))
    if not findings:
        detail = "Every column of each primary key, unique constraint and unique index is NOT NULL."
        if nulls_equal:
            detail = ("Nullable columns appear only in keys declared NULLS NOT DISTINCT, where NULLs conflict like "
                      f"any value: {', '.join(sorted(nulls_equal))}.")
        findings.append(Check("null_trap", OK, "No nullable column in a unique key of the three tables", detail))
    return findings


def _fix_null_trap(tables: Tables, table: str, columns: list[q.NullableUniqueColumn]) -> str:
    lines = ["-- first give the rows these count a value (SET NOT NULL fails while one is NULL):"]
    lines += [f"-- {q.fix_count_nulls(tables, table, c.column_name)};" for c in columns]
    lines.append(";\n".join(q.fix_set_not_null(tables, table, c.column_name) for c in columns))
    return "\n".join(lines)


def check_vacuum(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(f) Dead tuples stay bounded and each busy table has been vacuumed and analyzed."""
    roles = _roles(tables)
    stats = q.list_table_vacuum_stats(conn, tables)
    findings = []
    for table in stats:
        reasons = []
        if table.dead_tuples > max(DEAD_TUPLES_MIN, DEAD_TUPLES_SHARE * table.live_tuples):
            reasons.append(f"{table.dead_tuples:,} dead tuples against {table.live_tuples:,} live")
        if table.changes > NEVER_VACUUMED_CHANGES and table.vacuumed is None:
            reasons.append(f"{table.changes:,} rows inserted, updated or deleted and never vacuumed")
        if table.changes_since_analyze > NEVER_VACUUMED_CHANGES and table.analyzed is None:
            reasons.append(f"{table.changes_since_analyze:,} rows changed and never analyzed")
        if not reasons:
            continue
        role = roles[table.table_name]
        findings.append(Check(
            f"vacuum.{role}", WARN, f"{tables.schema}.{table.table_name} needs a vacuum: " + "; ".join(reasons),
            "Updates and deletes leave dead row versions (every claim, completion and purge makes some) that only "
            "VACUUM reclaims; until then they bloat the table and its indexes and slow every scan, and without "
            "ANALYZE the planner works from stale row counts. Autovacuum should keep up on its own: when it does "
            "not, something holds it back (a long or idle-in-transaction session: see the session findings) or its "
            f"settings are too lax for this table. {_vacuum_numbers(table)}; {_VACUUM_THRESHOLDS}",
            fix_sql=_fix_vacuum(tables, role, table)))
    if stats and not findings:
        numbers = "; ".join(f"{tables.schema}.{t.table_name}: {_vacuum_numbers(t)}" for t in stats)
        findings.append(Check(
            "vacuum", OK, "Dead tuples of the three tables are within bounds",
            f"{numbers}; {_VACUUM_THRESHOLDS}"))
    return findings


_VACUUM_THRESHOLDS = (f"counted since the statistics were last reset. A table warns above {DEAD_TUPLES_MIN:,} dead "
                      f"tuples and {DEAD_TUPLES_SHARE:.0%} of its live rows, or when more than "
                      f"{NEVER_VACUUMED_CHANGES:,} rows changed and it was never vacuumed or analyzed.")


def _vacuum_numbers(table: q.VacuumStats) -> str:
    return (f"{table.live_tuples:,} live and {table.dead_tuples:,} dead tuples, last vacuumed {ago(table.vacuumed)}, "
            f"last analyzed {ago(table.analyzed)}")


def _fix_vacuum(tables: Tables, role: str, table: q.VacuumStats) -> str:
    fix = q.fix_vacuum(tables, table.table_name)
    if role == "keys" and "autovacuum_vacuum_scale_factor" not in table.options:
        fix += (";\n-- and have autovacuum visit this hot table after "
                f"{KEYS_AUTOVACUUM_SCALE_FACTOR:.0%} of its rows changed instead of the default 20%:\n"
                + q.fix_autovacuum_scale_factor(tables, table.table_name, KEYS_AUTOVACUUM_SCALE_FACTOR))
    return fix


def check_sessions(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(g) No session runs one query for long or sits idle in an open transaction (they hold locks and vacuum)."""
    sessions = q.list_long_sessions(conn, active_seconds=LONG_QUERY_SECONDS, idle_seconds=IDLE_IN_TRANSACTION_SECONDS,
                                    query_chars=QUERY_CHARS, limit=MAX_SESSION_FINDINGS + 1)
    count = q.count_sessions(conn)
    findings = [_session_finding(s) for s in sessions[:MAX_SESSION_FINDINGS]]
    if len(sessions) > MAX_SESSION_FINDINGS:
        findings.append(Check("session.more", WARN, f"More long or idle-in-transaction sessions than the "
                                                    f"{MAX_SESSION_FINDINGS} listed",
                              "The oldest transactions are listed first; deal with those, then look again."))
    if count.hidden:
        findings.append(Check(
            "sessions.hidden", WARN,
            f"{count.hidden} session{'s' if count.hidden != 1 else ''} of other roles cannot be checked",
            "PostgreSQL shows another role's session (its state, times and query) only to superusers and members "
            "of pg_read_all_stats, so idemdash cannot tell whether those sessions run long or sit idle in a "
            "transaction, nor who holds an advisory lock. Grant that role to the one idemdash connects as (it also "
            "lets it read every session's query text), or accept that these checks cover its own sessions only.",
            fix_sql=q.fix_grant_read_all_stats(count.role)))
    if not sessions:
        findings.append(Check(
            "sessions", OK, "No long-running or idle-in-transaction sessions",
            f"Checked {count.sessions - count.hidden} other client session(s) of this database: none has run one query "
            f"for {duration(LONG_QUERY_SECONDS)} or been idle in a transaction for "
            f"{duration(IDLE_IN_TRANSACTION_SECONDS)}."))
    return findings


def _session_finding(session: q.Session) -> Check:
    idle = session.state.startswith("idle in transaction")
    seconds = (session.state_seconds if idle else session.query_seconds) or 0
    longest = max(seconds, session.transaction_seconds or 0)
    who = _who(session.pid, session.application_name, session.user_name, session.client_addr)
    if idle:
        title = f"Session {session.pid} idle in a transaction for {duration(seconds)}"
        why = ("An open transaction keeps every row lock it took (a claimed key row stays locked: reclassifying and "
               "purging skip it or wait) and its snapshot stops VACUUM from removing dead tuples in every table.")
        fix_sql = ("-- check first that nobody works in it (ask the application's owner); ending it rolls its "
                   f"transaction back and releases its locks:\n{q.fix_terminate_backend(session.pid)}")
        fix = (f"idle_in_transaction_session_timeout, so PostgreSQL ends such sessions itself: "
               f"{q.fix_idle_in_transaction_timeout(session.user_name, IDLE_TIMEOUT_SUGGESTED)}"
               if session.user_name else "idle_in_transaction_session_timeout")
    else:
        title = f"Session {session.pid} running one query for {duration(seconds)}"
        why = ("A long query holds its snapshot, so VACUUM cannot remove dead tuples newer than it in any table, and "
               "it may hold locks that purges, claims and reclassifications wait for.")
        fix_sql = ("-- check first what it is (the query above); cancelling stops the query, the session stays:\n"
                   f"{q.fix_cancel_backend(session.pid)};\n"
                   "-- if it does not stop, end the session (its transaction rolls back):\n"
                   f"{q.fix_terminate_backend(session.pid)}")
        fix = None
    return Check(
        f"session.{session.pid}", FAIL if longest >= LONG_SESSION_FAIL_SECONDS else WARN, title,
        f"{who}; {session.state} for {duration(seconds)}, transaction open "
        f"{duration(session.transaction_seconds)}. {'Last query' if idle else 'Query'}: "
        f"{_query_text(session.query)} {why}",
        fix_sql=fix_sql, fix=fix)


def _who(pid: int, application: str | None, user: str | None, client_addr: str | None) -> str:
    return (f"pid {pid}, user {user or '?'}, application {application!r}, "
            f"from {client_addr or 'a local socket'}")


def _query_text(query: str | None) -> str:
    if not query or query == "<insufficient privilege>":
        return "(hidden: only superusers and members of pg_read_all_stats see another role's query text)."
    text = " ".join(query.split())
    return repr(text + ("…" if len(query) >= QUERY_CHARS else "")) + "."


def idemdash_locks() -> dict[str, str]:
    """The text idemdash hashes for each of its own advisory locks → what holds it."""
    own = {
        q.lock_name("migration_lock"): "idemdash migrate",
        q.lock_name("try_rollup_lock"): "idemdash's rollup writer",
        q.lock_name("try_snapshot_lock"): "idemdash's snapshot writer",
    }
    prefix = q.lock_name("try_purge_lock")  # the statement appends the table: 'idemdash.purge.' || table
    own.update({f"{prefix}{table}": f"idemdash's {table} purge" for table in PURGE_TABLES})
    return own


def check_advisory_locks(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(h) Who holds advisory locks (seed 001), linked to the processing key each guards where that can be told."""
    locks = q.list_advisory_locks(conn, idemdash_locks(), limit=MAX_LOCK_FINDINGS)
    if not locks:
        return [Check("advisory_lock", OK, "No advisory locks held in this database",
                      "Neither the application nor idemdash (migrations, purges, rollups, snapshots) holds one.")]
    guarded: dict[tuple[int, bool], list[q.LockedKey]] = {}
    others = [lock for lock in locks if lock.idemdash_lock is None]
    key_columns = {"idempotency_scope", "idempotency_key", "status", "claimed_by", "locked_until"}
    if others and key_columns <= set(q.list_table_columns(conn, tables).get("keys", {})):
        for match in q.list_advisory_lock_keys(conn, tables, others, candidates=LOCK_KEY_CANDIDATES,
                                               per_lock=LOCKED_KEYS_PER_LOCK):
            guarded.setdefault((match.lock_key, match.two_keys), []).append(match)
    findings = [_lock_finding(lock, guarded.get((lock.lock_key, lock.two_keys), [])) for lock in locks]
    if locks[0].total > len(locks):
        findings.append(Check("advisory_lock.more", OK, f"{locks[0].total - len(locks)} more advisory locks",
                              f"Only {len(locks)} are listed and linked to keys: waiting ones first, then those of "
                              "the oldest transactions."))
    return findings


def _lock_finding(lock: q.AdvisoryLock, keys: list[q.LockedKey]) -> Check:
    idle = (lock.state or "").startswith("idle in transaction")
    held_idle = lock.granted and idle and (lock.state_seconds or 0) >= ADVISORY_LOCK_IDLE_SECONDS
    what = f"{lock.idemdash_lock}'s lock" if lock.idemdash_lock else f"advisory lock {lock.key_text}"
    for_key = f" for key {keys[0].key!r} in scope {keys[0].scope!r}" if len(keys) == 1 else ""
    holder = f"Session {lock.pid}" if lock.pid is not None else "A prepared transaction"
    title = f"{holder} {'holds' if lock.granted else 'waits for'} {what}{for_key}"
    if lock.pid is None:
        session = ("A prepared transaction (PREPARE TRANSACTION) holds it until someone runs COMMIT PREPARED or "
                   "ROLLBACK PREPARED: see pg_prepared_xacts.")
    elif lock.hidden:
        session = (f"pid {lock.pid}, user {lock.user_name or '?'}, application {lock.application_name!r}: this role "
                   "may not see that session's state, times or client (grant it pg_read_all_stats).")
    else:
        session = (f"{_who(lock.pid, lock.application_name, lock.user_name, lock.client_addr)}; {lock.state} for "
                   f"{duration(lock.state_seconds)}, connected for {duration(lock.session_seconds)}, "
                   + (f"transaction open {duration(lock.transaction_seconds)}." if lock.transaction_seconds is not None
                      else "no transaction open (a session-level lock)."))
    kind = ("two int4 keys, pg_advisory_lock(int, int)" if lock.two_keys
            else "bigint key, pg_advisory_lock(bigint)")
    parts = [session, f"Lock key {lock.key_text} ({kind}{', shared' if lock.mode == 'ShareLock' else ''})."]
    if lock.idemdash_lock:
        parts.append(f"This is idemdash's own lock ({lock.idemdash_lock}).")
    else:
        parts.append(_guarded_text(keys))
    status, fix_sql, fix = OK, None, None
    if not lock.granted:
        status = WARN
        blockers = lock.blocked_by or []
        parts.append(f"It is waiting, behind session{'s' if len(blockers) != 1 else ''} "
                     f"{', '.join(map(str, blockers)) or '?'}: whatever this session does stands still until the "
                     "holder unlocks, ends its transaction (for a transaction-level lock) or disconnects.")
        if blockers:
            fix_sql = ("-- check first what the holding session does; ending it releases its locks and rolls back "
                       "its transaction:\n" + ";\n".join(q.fix_terminate_backend(pid) for pid in blockers))
    elif held_idle:
        status = WARN
        parts.append(f"Its session has been idle in a transaction for {duration(lock.state_seconds)} while holding "
                     "it: the lock stays until the application commits or disconnects, and a worker that gave up "
                     "mid-request on a pooled connection looks just like this.")
        fix_sql = ("-- check first that nobody works in it; ending it releases the lock and rolls back its "
                   f"transaction:\n{q.fix_terminate_backend(lock.pid)}")
        fix = "idle_in_transaction_session_timeout, so PostgreSQL ends such sessions itself"
    key_id = f"{lock.key1}.{lock.key2}" if lock.two_keys else str(lock.lock_key)
    shared = ".shared" if lock.mode == "ShareLock" else ""
    return Check(f"advisory_lock.{lock.pid or 'prepared'}.{key_id}{shared}", status, title, " ".join(parts),
                 fix_sql=fix_sql, fix=fix, keys=tuple(KeyLink(k.scope, k.key) for k in keys))


def _guarded_text(keys: list[q.LockedKey]) -> str:
    tried = (f"Compared with these derivations of the {LOCK_KEY_CANDIDATES:,} most recently leased processing keys "
             f"(hashtext's int4 widened to bigint): {'; '.join(LOCK_DERIVATIONS)}; and with claimed_by = the "
             "holder's application_name.")
    if not keys:
        return f"Not linked to a key: nothing matched. {tried}"
    if keys[0].derivation == q.BY_HOLDER:
        listed = ", ".join(f"{k.key!r} in scope {k.scope!r}" for k in keys)
        return (f"No derivation matched, but processing key(s) {listed} are claimed_by this session's "
                f"application_name, so it probably guards one of them. {tried}")
    texts = []
    for k in keys:
        text = f"{k.key!r} in scope {k.scope!r}: {k.derivation} equals the lock key"
        if k.same_holder:
            text += " and the key is claimed_by this session's application_name"
        texts.append(text)
    return f"Guards processing key {'; '.join(texts)}. {tried}"


CheckFn = Callable[[psycopg.Connection, Tables, Mapping[str, Any]], list[Check]]

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
