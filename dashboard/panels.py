"""Run one panel's query in a READ ONLY transaction, degrading instead of failing.

The panels of a request share one transaction (dashboard/page_reads.py); a panel that fails ends it, alone.

PgHero's ``rescue_timeout``: when a panel's query hits the statement timeout,
that panel says so and names the index that would help, and the rest of the
page still renders. A missing table or column (a schema that differs from
the contract) degrades the panel the same way, with what to check.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import psycopg
from flask import g, has_request_context
from psycopg import errors

from idemdash.dashboard import page_reads
from idemdash.dashboard.targets import get_target
from idemdash.queries.indexes import ADVICE

T = TypeVar("T")


@dataclass(frozen=True)
class Panel(Generic[T]):
    value: T | None = None
    problem: str | None = None  # None, 'timeout' or 'schema'
    message: str | None = None
    index_sql: str | None = None
    index_why: str | None = None
    # set when the value was precomputed by the scheduler's rollup job (dashboard/rollups.py), not read now
    computed_at: datetime | None = None
    computed_ms: float | None = None  # how long computing it took
    # computed live by an earlier view and kept in this process (a rollup variant the job does not compute)
    kept: bool = False

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


# A page's panels together get this many statement timeouts: without its indexes a page with several slow panels
# still answers in bounded time (each later panel gets what is left, but at least MIN_PANEL_TIMEOUT_MS).
PAGE_BUDGET_TIMEOUTS = 1.5
MIN_PANEL_TIMEOUT_MS = 250


def _panel_timeout_ms(db) -> int:
    if not has_request_context():
        return db.statement_timeout_ms
    now = time.monotonic()
    started = g.setdefault("panels_started_at", now)
    left_ms = db.statement_timeout_ms * PAGE_BUDGET_TIMEOUTS - (now - started) * 1000
    configured = db.statement_timeout_ms
    return int(max(min(MIN_PANEL_TIMEOUT_MS, configured), min(configured, left_ms)))


def load(fn: Callable[..., T], *args: Any, index: str | None = None, **kwargs: Any) -> Panel[T]:
    """Call ``fn(conn, *args, **kwargs)`` in a read transaction; ``index`` names the advice in indexes.sql."""
    db = get_target()
    timeout_ms = _panel_timeout_ms(db)
    try:
        with page_reads.read(db, timeout_ms) as conn:  # the request's panels share one transaction
            return Panel(value=fn(conn, *args, **kwargs))
    except errors.QueryCanceled:
        advice = ADVICE.get(index) if index else None
        limit = (
            f"the {timeout_ms} ms statement timeout"
            if timeout_ms >= db.statement_timeout_ms
            else f"the {timeout_ms} ms left of this page's time budget (slower panels before it used the rest of "
            f"{db.statement_timeout_ms * PAGE_BUDGET_TIMEOUTS:.0f} ms)"
        )
        return Panel(
            problem="timeout",
            message=f"This query ran longer than {limit} and was "
            "stopped, so this panel is empty." + (" This index would make it fast:" if advice else ""),
            index_sql=advice.as_text(db.tables) if advice else None,
            index_why=advice.why if advice else None,
        )
    except (
        errors.UndefinedTable,
        errors.UndefinedColumn,
        errors.InvalidSchemaName,
        errors.UndefinedFunction,
        errors.InsufficientPrivilege,
    ) as exc:
        cause = db.cause_of(exc, privilege="SELECT")
        db.problems.failed(cause)  # logged once, however many panels and requests trip over it
        return Panel(problem="schema", message=_schema_message(exc, cause.message))


def failed(panel: Panel[Any]) -> Panel[Any]:
    """A panel that did not load, passed on as what a panel built from it shows (its problem and index advice)."""
    return Panel(problem=panel.problem, message=panel.message, index_sql=panel.index_sql, index_why=panel.index_why)


def require(panel: Panel[T]) -> T:
    if not panel.ok:
        raise PanelError(panel)
    return panel.value  # type: ignore[return-value]  # a panel that is ok holds its T


def _schema_message(exc: psycopg.Error, cause: str) -> str:
    if isinstance(exc, errors.UndefinedFunction):  # not a missing table: say what PostgreSQL said
        detail = (exc.diag.message_primary or str(exc)).strip()
        return (
            f"The application tables do not match what idemdash expects ({detail}): `idemdash check` lists "
            "what differs."
        )
    return f"This panel cannot be read: {cause}"
