"""Aggregates that cannot be index-fast at millions of rows, precomputed by the scheduler and read by the pages.

Each rollup is a query function from ``queries/`` with one parameter (its variant: a window, a hotspot
threshold). The rollup job (``jobs/rollups.py``) computes every rollup's variants on its interval and stores
the result with how long computing it took. A page's panel then uses the stored value only when

- it is fresh (younger than ``FRESH_FACTOR`` intervals), and
- computing it live was measured to take at least ``LIVE_BUDGET_MS`` (small tables are always read live,
  so a demo or a test database shows exact, current numbers);

otherwise the panel is computed live as before (``panels.load``: statement timeout, degraded panel that names
its index). A panel from a rollup carries ``computed_at`` and the page says so.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import psycopg
from flask import current_app, has_app_context
from psycopg import errors

from dashboard import panels
from dashboard.db import get_target
from queries import Tables
from queries import rollups as q

# A panel may take this long live; a rollup measured slower than this is read precomputed instead.
LIVE_BUDGET_MS = 10.0
# A stored value older than this many of its intervals is not shown (the scheduler is behind or stopped).
FRESH_FACTOR = 3

Compute = Callable[[psycopg.Connection, Tables, Mapping[str, Any], str], Any]


@dataclass(frozen=True)
class Rollup:
    name: str
    compute: Compute                     # (conn, tables, config, variant) -> the panel's value
    variants: Callable[[Mapping[str, Any]], list[str]]   # the variants the job precomputes
    index: str | None                    # the index advice its live computation needs
    every_seconds: int                   # how often the job recomputes it


def _single(config: Mapping[str, Any]) -> list[str]:
    return [""]


def _hotspot_threshold(config: Mapping[str, Any]) -> list[str]:
    return [str(config["HOTSPOT_MIN_ATTEMPTS"])]


def _key_windows(conn, tables, config, variant):
    from queries.overview import count_keys_by_window

    return count_keys_by_window(conn, tables)


def _inbox_volume(conn, tables, config, variant):
    from queries.overview import get_inbox_volume

    return get_inbox_volume(conn, tables)


def _hotspot_groups(conn, tables, config, variant):
    from dashboard.hotspots import GROUP_LIMIT
    from queries.hotspots import list_hotspot_groups

    return list_hotspot_groups(conn, tables, int(variant), lease_seconds=config["DEFAULT_LEASE_SECONDS"],
                               limit=GROUP_LIMIT)


def _attempt_histogram(conn, tables, config, variant):
    from queries.hotspots import count_keys_by_attempts

    return count_keys_by_attempts(conn, tables)


def _suppression(conn, tables, config, variant):
    from queries.suppression import WINDOWS, get_suppression

    return get_suppression(conn, tables, WINDOWS[variant])


def _suppression_windows(config: Mapping[str, Any]) -> list[str]:
    from queries.suppression import WINDOWS

    return list(WINDOWS)


def _inbox_consumers(conn, tables, config, variant):
    from dashboard.inbox import CONSUMERS_SHOWN
    from queries.inbox import list_inbox_consumers

    return list_inbox_consumers(conn, tables, retention_days=config["INBOX_RETENTION_DAYS"], consumer=None,
                                limit=CONSUMERS_SHOWN)


def _inbox_totals(conn, tables, config, variant):
    from queries.inbox import get_inbox_totals

    return get_inbox_totals(conn, tables, retention_days=config["INBOX_RETENTION_DAYS"])


def _outbox_event_types(conn, tables, config, variant):
    from dashboard.outbox import EVENT_TYPES_SHOWN
    from queries.outbox import list_outbox_event_types

    return list_outbox_event_types(conn, tables, limit=EVENT_TYPES_SHOWN)


ROLLUPS: dict[str, Rollup] = {r.name: r for r in (
    Rollup("key_windows", _key_windows, _single, "index_keys_updated", 60),
    Rollup("inbox_volume", _inbox_volume, _single, "index_inbox_processed", 60),
    Rollup("hotspot_groups", _hotspot_groups, _hotspot_threshold, "index_keys_attempts", 60),
    # every key in the table: the one aggregate that reads all of it (an index-only count), so less often
    Rollup("attempt_histogram", _attempt_histogram, _single, "index_keys_attempts", 300),
    Rollup("suppression", _suppression, _suppression_windows, "index_keys_created", 120),
    Rollup("inbox_consumers", _inbox_consumers, _single, "index_inbox_consumer", 60),
    Rollup("inbox_totals", _inbox_totals, _single, "index_inbox_processed", 60),
    Rollup("outbox_event_types", _outbox_event_types, _single, "index_outbox_published", 60),
)}


def _usable(row: q.StoredRollup, rollup: Rollup) -> bool:
    """Fresh, and slow enough to compute that reading it precomputed is worth its age."""
    return row.duration_ms >= LIVE_BUDGET_MS and row.age_seconds <= FRESH_FACTOR * rollup.every_seconds


def load(*wanted: tuple[str, str]) -> list[panels.Panel]:
    """One panel per (rollup name, variant): precomputed when fresh and slow to compute live, else live."""
    db = get_target()
    config = current_app.config
    stored: dict[tuple[str, str], q.StoredRollup] = {}
    try:
        with db.read() as conn:
            stored = {(r.name, r.variant): r for r in q.list_rollups(conn, wanted)}
    except (errors.UndefinedTable, errors.InvalidSchemaName, errors.QueryCanceled):
        pass  # idemdash's schema not migrated yet, or the lookup itself timed out: compute live
    result = []
    for name, variant in wanted:
        rollup = ROLLUPS[name]
        row = stored.get((name, variant))
        if row is not None and _usable(row, rollup):
            try:
                result.append(panels.Panel(value=q.decode(row.payload), computed_at=row.computed_at,
                                           computed_ms=row.duration_ms))
                continue
            except (TypeError, ValueError, AttributeError, ImportError):
                pass  # written by another idemdash version: compute live
        panel = panels.load(rollup.compute, db.tables, config, variant, index=rollup.index)
        if panel.problem == "timeout":
            hint = (f" At this table size the scheduler precomputes it every {rollup.every_seconds} s (rollup "
                    f"'{name}'), and no fresh value was stored: is `idemdash scheduler` running?")
            message, marker, rest = (panel.message or "").partition(" This index would make it fast:")
            panel = replace(panel, message=message + hint + marker + rest)
        result.append(panel)
    return result


def load_one(name: str, variant: str = "") -> panels.Panel:
    return load((name, variant))[0]


def precomputed(**named: panels.Panel) -> dict[str, Any]:
    """For a JSON answer: the sections that came from a rollup, when they were computed and how long that took."""
    return {name: {"computed_at": panel.computed_at, "computed_ms": round(panel.computed_ms or 0.0, 1)}
            for name, panel in named.items() if panel.computed_at is not None}


def read(conn: psycopg.Connection, tables: Tables, name: str, variant: str = "",
         config: Mapping[str, Any] | None = None) -> Any:
    """A rollup's value for code that is not a page panel (the /metrics collector), on the caller's connection:
    precomputed when fresh and slow to compute live, as for panels; otherwise computed now."""
    rollup = ROLLUPS[name]
    try:
        with conn.transaction():  # a savepoint: idemdash's schema missing must not abort the caller's reads
            rows = q.list_rollups(conn, [(name, variant)])
    except (errors.UndefinedTable, errors.InvalidSchemaName):
        rows = []
    if rows and _usable(rows[0], rollup):
        try:
            return q.decode(rows[0].payload)
        except (TypeError, ValueError, AttributeError, ImportError):
            pass
    if config is None:
        config = current_app.config if has_app_context() else {}
    return rollup.compute(conn, tables, config, variant)
