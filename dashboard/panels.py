"""Run one panel's query in its own READ ONLY transaction, degrading instead of failing.

PgHero's ``rescue_timeout``: when a panel's query hits the statement timeout,
that panel says so and names the index that would help, and the rest of the
page still renders. A missing table or column (a schema that differs from
the contract) degrades the panel the same way, with what to check.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

import psycopg
from psycopg import errors

from dashboard.db import get_db
from queries.indexes import ADVICE

T = TypeVar("T")


@dataclass(frozen=True)
class Panel(Generic[T]):
    value: T | None = None
    problem: str | None = None     # None, 'timeout' or 'schema'
    message: str | None = None
    index_sql: str | None = None
    index_why: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "message": self.message, "index": self.index_sql}


class PanelError(Exception):
    """Raised by ``require`` for the JSON API: a panel the answer depends on did not load."""

    def __init__(self, panel: Panel) -> None:
        super().__init__(panel.message)
        self.panel = panel


def load(fn: Callable[..., T], *args: Any, index: str | None = None, **kwargs: Any) -> Panel[T]:
    """Call ``fn(conn, *args, **kwargs)`` in a read transaction; ``index`` names the advice in indexes.sql."""
    db = get_db()
    try:
        with db.read() as conn:
            return Panel(value=fn(conn, *args, **kwargs))
    except errors.QueryCanceled:
        advice = ADVICE.get(index) if index else None
        return Panel(
            problem="timeout",
            message=f"This query ran longer than the {db.statement_timeout_ms} ms statement timeout and was "
                    "stopped, so this panel is empty." + (" This index would make it fast:" if advice else ""),
            index_sql=advice.as_text(db.tables) if advice else None,
            index_why=advice.why if advice else None)
    except (errors.UndefinedTable, errors.UndefinedColumn, errors.InvalidSchemaName,
            errors.UndefinedFunction) as exc:
        return Panel(problem="schema", message=_schema_message(exc, db))


def require(panel: Panel[T]) -> T:
    if not panel.ok:
        raise PanelError(panel)
    return panel.value  # type: ignore[return-value]


def _schema_message(exc: psycopg.Error, db) -> str:
    detail = (exc.diag.message_primary or str(exc)).strip()
    if "idemdash." in detail:
        return f"idemdash's own schema is missing or out of date ({detail}): run `idemdash migrate`."
    t = db.tables
    return (f"The application tables do not match what idemdash expects ({detail}). It reads "
            f"{t.schema}.{t.keys}, {t.schema}.{t.inbox} and {t.schema}.{t.outbox}: check IDEMDASH_APP_SCHEMA "
            "and the table settings, or create the reference schema with `idemdash init-app-schema`.")
