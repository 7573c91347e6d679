"""A finding of a health check: what is wrong (or fine), and what fixes it.

Each finding says what is wrong and what fixes it (``fix_sql`` when SQL does, ``fix`` for a setting or a
command).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from idemdash.core.settings import Settings
from idemdash.queries import Tables

OK, WARN, FAIL = "ok", "warn", "fail"
SEVERITY = {FAIL: 0, WARN: 1, OK: 2}


@dataclass(frozen=True)
class KeyLink:
    scope: str
    key: str


@dataclass(frozen=True)
class Check:
    id: str
    status: str  # ok, warn or fail
    title: str
    detail: str
    fix_sql: str | None = None
    fix: str | None = None  # a setting or command, when the fix is not SQL
    keys: tuple[KeyLink, ...] = ()  # idempotency keys the finding is about (the page links them)


CheckFn = Callable[[psycopg.Connection, Tables, Settings], list[Check]]


def qualified(tables: Tables, role: str) -> str:
    return f"{tables.schema}.{getattr(tables, role)}"


def roles(tables: Tables) -> dict[str, str]:
    """Configured table name → its role (keys, inbox, outbox)."""
    return {tables.keys: "keys", tables.inbox: "inbox", tables.outbox: "outbox"}
