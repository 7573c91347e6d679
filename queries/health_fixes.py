"""The SQL a `/health` finding suggests to fix what it found: text to show beside the finding, never run by idemdash.
Configured names enter through psycopg.sql.Identifier, values as literals, as every statement does."""

from __future__ import annotations

from psycopg import sql

from idemdash.queries import Tables, statement


def fix_add_column(tables: Tables, role: str, column: str, data_type: str) -> str:
    return statement(
        "fix_add_column",
        table=sql.Identifier(tables.schema, getattr(tables, role)),
        column=sql.Identifier(column),
        data_type=sql.SQL(data_type),
    ).as_string(None)


def fix_extend_key_retention(tables: Tables, scope: str, horizon_seconds: int) -> str:
    return statement(
        "fix_extend_key_retention", tables, horizon=sql.Literal(f"{horizon_seconds} seconds"), scope=sql.Literal(scope)
    ).as_string(None)


def fix_drop_index(tables: Tables, index_name: str) -> str:
    return statement("fix_drop_index", index=sql.Identifier(tables.schema, index_name)).as_string(None)


def fix_set_not_null(tables: Tables, table: str, column: str) -> str:
    return statement(
        "fix_set_not_null", table=sql.Identifier(tables.schema, table), column=sql.Identifier(column)
    ).as_string(None)


def fix_count_nulls(tables: Tables, table: str, column: str) -> str:
    return statement(
        "fix_count_nulls", table=sql.Identifier(tables.schema, table), column=sql.Identifier(column)
    ).as_string(None)


def fix_vacuum(tables: Tables, table: str) -> str:
    return statement("fix_vacuum", table=sql.Identifier(tables.schema, table)).as_string(None)


def fix_autovacuum_scale_factor(tables: Tables, table: str, scale_factor: float) -> str:
    return statement(
        "fix_autovacuum_scale_factor",
        table=sql.Identifier(tables.schema, table),
        scale_factor=sql.Literal(scale_factor),
    ).as_string(None)


def fix_cancel_backend(pid: int) -> str:
    return statement("fix_cancel_backend", pid=sql.Literal(pid)).as_string(None)


def fix_terminate_backend(pid: int) -> str:
    return statement("fix_terminate_backend", pid=sql.Literal(pid)).as_string(None)


def fix_idle_in_transaction_timeout(role: str, timeout: str) -> str:
    return statement(
        "fix_idle_in_transaction_timeout", role=sql.Identifier(role), timeout=sql.Literal(timeout)
    ).as_string(None)


def fix_grant_read_all_stats(role: str) -> str:
    return statement("fix_grant_read_all_stats", role=sql.Identifier(role)).as_string(None)
