"""Schema checks: the application tables' columns (the column contract) and the recommended indexes.

idemdash's own migrations are checked in ``checks/migrations.py``, the NULL trap in ``checks/null_trap.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from idemdash.checks import shared_reads
from idemdash.checks.finding import FAIL, OK, WARN, Check, qualified
from idemdash.core.settings import Settings
from idemdash.queries import Tables, health_fixes
from idemdash.queries.indexes import ADVICE


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


def check_tables(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(b) The three application tables exist with the columns of the README's column contract."""
    present = shared_reads.table_columns(conn, tables)
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


def check_indexes(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(d) The recommended indexes (queries/indexes.sql) exist and are valid."""
    found = shared_reads.app_indexes(conn, tables)
    valid = {i.index_name: i.valid for i in found}
    existing_tables = set(shared_reads.table_columns(conn, tables))
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
