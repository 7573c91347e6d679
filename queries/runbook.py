"""SQL shown on the built-in runbook pages for inspecting a stuck key or the outbox backlog by hand. idemdash never
runs these."""

from __future__ import annotations

from psycopg import sql

from idemdash.queries import QUERIES, Tables, statement

_BLOCKS = ("runbook_inspect_key", "runbook_inspect_outbox", "runbook_inspect_locks")
_OUTBOX_BLOCKS = (
    "runbook_outbox_backlog",
    "runbook_outbox_poison",
    "runbook_outbox_recent_publishes",
    "runbook_outbox_sessions",
)


def inspection_sql(tables: Tables, scope: str | None, key: str | None) -> list[tuple[str, str]]:
    """(description, SQL text) pairs with the scope and key as quoted literals."""
    values = {
        "scope": sql.Literal(scope) if scope is not None else sql.SQL(":'scope'"),
        "key": sql.Literal(key) if key is not None else sql.SQL(":'key'"),
        "keys_regclass": sql.Literal(sql.Identifier(tables.schema, tables.keys).as_string(None)),
    }
    return [(QUERIES[name].description, statement(name, tables, **values).as_string(None)) for name in _BLOCKS]


def outbox_inspection_sql(tables: Tables) -> list[tuple[str, str]]:
    """(description, SQL text) pairs for the outbox backlog runbook."""
    regclass = sql.Literal(sql.Identifier(tables.schema, tables.outbox).as_string(None))
    return [
        (QUERIES[name].description, statement(name, tables, outbox_regclass=regclass).as_string(None))
        for name in _OUTBOX_BLOCKS
    ]
