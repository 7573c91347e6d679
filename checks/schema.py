"""Schema checks: idemdash's migrations, the application tables' columns, the recommended indexes and the
NULL trap (docs/concepts.md, NULLs never conflict in a unique key)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from idemdash.checks.finding import FAIL, OK, WARN, Check, qualified, roles
from idemdash.queries import Tables, health, health_fixes
from idemdash.queries.indexes import ADVICE
from idemdash.queries.migrate import list_migrations


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # the reference schema's type, for the ADD COLUMN a finding suggests
    feature: str | None  # None: required; otherwise what stops working without it


# The README's column contract (docs/concepts.md, The three tables). Required columns are what the counts, stuck
# lists and purges cannot do without.
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
        Column(
            "message_hash",
            "text",
            "detecting a message id reused with a different payload; idemdash itself does not read it",
        ),
        Column(
            "result_ref_type",
            "text",
            "answering a duplicate delivery with the first result; idemdash itself does not read it",
        ),
        Column(
            "result_ref_id",
            "uuid",
            "answering a duplicate delivery with the first result; idemdash itself does not read it",
        ),
    ),
    "outbox": (
        Column("outbox_id", "uuid", None),
        Column("status", "text", None),
        Column("created_at", "timestamptz", None),
        Column("published_at", "timestamptz", None),
        Column("event_type", "text", "the outbox page (per event type numbers and the row list)"),
        Column("aggregate_type", "text", "the outbox page's row list"),
        Column("aggregate_id", "uuid", "the outbox page's row list"),
        Column(
            "idempotency_scope",
            "text",
            "related outbox rows on the key page (evidence for already_succeeded) and the outbox row list",
        ),
        Column(
            "idempotency_key",
            "text",
            "related outbox rows on the key page (evidence for already_succeeded) and the outbox row list",
        ),
        Column("payload", "jsonb", "the outbox page's row list (payloads)"),
        Column("attempt_count", "integer", "likely poison events (pending rows with many attempts) on the outbox page"),
    ),
}

TABLE_SETTING = {"keys": "IDEMDASH_KEYS_TABLE", "inbox": "IDEMDASH_INBOX_TABLE", "outbox": "IDEMDASH_OUTBOX_TABLE"}


def check_migrations(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(a) idemdash's own schema has every migration this version ships, unedited."""
    known = list_migrations()
    if not health.get_migration_table(conn):
        return [
            Check(
                "migrations",
                FAIL,
                "idemdash's own schema is not installed",
                "The idemdash schema (audit log, purge runs, metric snapshots) does not exist in this database, "
                "so purges cannot be recorded and actions cannot be audited. Run `idemdash migrate` (safe to "
                "run while other replicas start: it takes an advisory lock).",
                fix="idemdash migrate",
            )
        ]
    applied = {m.version: m for m in health.list_applied_migrations(conn)}
    findings = []
    edited = [m for m in known if m.version in applied and applied[m.version].checksum != m.checksum]
    if edited:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in edited)
        findings.append(
            Check(
                "migrations.edited",
                FAIL,
                f"Migration changed after it was applied: {names}",
                "Migrations are append-only; this idemdash ships a different text for a migration the "
                "database already ran, so `idemdash migrate` refuses to continue. Install the released "
                "idemdash version, which has the original files.",
            )
        )
    pending = [m for m in known if m.version not in applied]
    if pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        findings.append(
            Check(
                "migrations",
                FAIL,
                f"{len(pending)} migration{'s' if len(pending) != 1 else ''} pending: {names}",
                "This idemdash expects tables or columns those migrations create; pages that need them "
                "fail until you run `idemdash migrate`.",
                fix="idemdash migrate",
            )
        )
    newer = sorted(v for v in applied if v > (known[-1].version if known else 0))
    if newer:
        findings.append(
            Check(
                "migrations.newer",
                WARN,
                "The database was migrated by a newer idemdash",
                f"Migration{'s' if len(newer) != 1 else ''} {', '.join(f'{v:04d}' for v in newer)} "
                "are unknown to this version. Upgrade this idemdash to match the others.",
                fix="upgrade idemdash",
            )
        )
    if not findings:
        last = known[-1]
        findings.append(
            Check(
                "migrations",
                OK,
                "idemdash's schema is up to date",
                f"{len(known)} migrations applied, the latest {last.version:04d}_{last.name}.",
            )
        )
    return findings


def check_tables(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(b) The three application tables exist with the columns of the README's column contract."""
    present = health.list_table_columns(conn, tables)
    findings = []
    for role, expected in COLUMNS.items():
        name = qualified(tables, role)
        if role not in present:
            findings.append(
                Check(
                    f"table.{role}",
                    FAIL,
                    f"Table {name} does not exist",
                    f"idemdash reads the {role} table from {name}. If yours has another name or schema, set "
                    f"IDEMDASH_APP_SCHEMA and {TABLE_SETTING[role]}; for a new application, `idemdash init-app-schema` "
                    "creates the reference tables.",
                    fix=f"IDEMDASH_APP_SCHEMA / {TABLE_SETTING[role]}, or idemdash init-app-schema",
                )
            )
            continue
        columns = present[role]
        missing = [c for c in expected if c.name not in columns]
        for column in missing:
            fix_sql = health_fixes.fix_add_column(tables, role, column.name, column.data_type)
            if column.feature is None:
                findings.append(
                    Check(
                        f"column.{role}.{column.name}",
                        FAIL,
                        f"{name} has no column {column.name}",
                        f"{column.name} is required: the overview, the lists and the purges of this table read it, "
                        "so they fail. Add it (idemdash never changes your tables itself), or point the settings at "
                        "the right table.",
                        fix_sql=fix_sql,
                    )
                )
            else:
                findings.append(
                    Check(
                        f"column.{role}.{column.name}",
                        WARN,
                        f"{name} has no column {column.name}",
                        f"Without it this stops working: {column.feature}. Everything else works.",
                        fix_sql=fix_sql,
                    )
                )
        if not missing:
            findings.append(
                Check(
                    f"table.{role}", OK, f"{name} has every column idemdash uses", f"{len(expected)} columns checked."
                )
            )
    return findings


def check_indexes(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(d) The recommended indexes (queries/indexes.sql) exist and are valid."""
    found = health.list_table_indexes(conn, tables)
    valid = {i.index_name: i.valid for i in found}
    existing_tables = set(health.list_table_columns(conn, tables))
    findings = []
    checked = 0
    for advice in ADVICE.values():
        if advice.table not in existing_tables:
            continue  # the table check reports the missing table
        checked += 1
        name = advice.index_name(tables)
        create = advice.as_text(tables)
        if name not in valid:
            findings.append(
                Check(
                    f"index.{advice.name}",
                    WARN,
                    f"Recommended index {name} is missing",
                    f"For: {advice.why} Without it that query scans {qualified(tables, advice.table)}: fine while the "
                    "table is small, a timed-out panel once it is big. The statement does not block writes (run it "
                    "outside a transaction block).",
                    fix_sql=create,
                )
            )
        elif not valid[name]:
            findings.append(
                Check(
                    f"index.{advice.name}",
                    WARN,
                    f"Index {name} is invalid",
                    "An index build (CONCURRENTLY) that failed or was cancelled leaves an invalid index: PostgreSQL "
                    "maintains it on every write but never uses it. Drop it and create it again.",
                    fix_sql=f"{health_fixes.fix_drop_index(tables, name)};\n{create}",
                )
            )
    if not findings and checked:
        findings.append(
            Check(
                "index",
                OK,
                f"All {checked} recommended indexes exist",
                "Listed by `idemdash check` and in queries/indexes.sql.",
            )
        )
    return findings


def check_null_trap(conn: psycopg.Connection, tables: Tables, config: Mapping[str, Any]) -> list[Check]:
    """(e) No unique key of the three tables has a nullable column: NULLs never conflict (docs/concepts.md, NULLs
    never conflict in a unique key)."""
    role_of = roles(tables)
    traps: dict[tuple[str, str], list[health.NullableUniqueColumn]] = {}
    nulls_equal = set()
    for column in health.list_nullable_unique_columns(conn, tables):
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
        findings.append(
            Check(
                f"null_trap.{role_of[table]}.{index}",
                FAIL,
                f"{names} may be NULL in {key} of {tables.schema}.{table}: duplicates get through",
                f"PostgreSQL treats NULLs as distinct, so two rows that differ only by a NULL in {names} never "
                "conflict: "
                "the unique key does not stop the second one, INSERT ... ON CONFLICT never fires for it, and the "
                "duplicate is written (the NULL trap). Make the column NOT NULL and have the application write "
                "a sentinel ('' or a domain value for \"not applicable\") instead of NULL. SET NOT NULL fails while a "
                "NULL row exists, so give those rows their sentinel first (the comment counts them); it reads the "
                "whole "
                "table under an exclusive lock, so on a big table first add CHECK (column IS NOT NULL) NOT VALID and "
                "VALIDATE it, which lets SET NOT NULL skip the scan. On PostgreSQL 15+ the alternative is to recreate "
                "the key as UNIQUE NULLS NOT DISTINCT.",
                fix_sql=_fix_null_trap(tables, table, columns),
            )
        )
    if not findings:
        detail = "Every column of each primary key, unique constraint and unique index is NOT NULL."
        if nulls_equal:
            detail = (
                "Nullable columns appear only in keys declared NULLS NOT DISTINCT, where NULLs conflict like "
                f"any value: {', '.join(sorted(nulls_equal))}."
            )
        findings.append(Check("null_trap", OK, "No nullable column in a unique key of the three tables", detail))
    return findings


def _fix_null_trap(tables: Tables, table: str, columns: list[health.NullableUniqueColumn]) -> str:
    lines = ["-- first give the rows these count a value (SET NOT NULL fails while one is NULL):"]
    lines += [f"-- {health_fixes.fix_count_nulls(tables, table, c.column_name)};" for c in columns]
    lines.append(";\n".join(health_fixes.fix_set_not_null(tables, table, c.column_name) for c in columns))
    return "\n".join(lines)
