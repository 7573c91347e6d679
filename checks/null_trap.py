"""The NULL trap check: no unique key of the three tables has a nullable column, since NULLs never conflict in a
unique key (docs/concepts.md)."""

from __future__ import annotations

import psycopg

from idemdash.checks.finding import FAIL, OK, Check, roles
from idemdash.core.settings import Settings
from idemdash.queries import Tables, health, health_fixes


def check_null_trap(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
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
