"""Rollups: aggregates that cannot be index-fast at millions of rows, precomputed by the scheduler.

Each rollup in ``ROLLUPS`` names the query that fetches its rows, the one flat row type it stores, and how those rows
become what a page shows (``assemble``). The rollup job (jobs/rollups.py) fetches each rollup's variants on its
interval and stores the rows in ``idemdash.rollup`` with how long fetching them took; a reader (``read_value``, or a
page's panel in dashboard/rollups.py) uses the stored rows only while they are fresh (younger than ``FRESH_FACTOR``
intervals) and only when fetching them live was measured to be slow (at least ``LIVE_BUDGET_MS``): small tables are
always read live, so a demo or a test database shows exact numbers.

Stored rows are plain JSON objects of their row type's fields (times as ISO 8601); a stored value that does not decode
into the row type (another idemdash version wrote it) is logged and fetched live instead.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import typing
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors

from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.settings import Settings
from idemdash.queries import Tables, hotspots, inbox, outbox, overview, profile_states, suppression, workers
from idemdash.queries.rollup_store import StoredRollup, list_rollups

log = logging.getLogger(__name__)

# Fetching may take this long live; a rollup measured slower than this is read precomputed instead.
LIVE_BUDGET_MS = 10.0
# A stored value older than this many of its intervals is not used (the scheduler is behind or stopped).
FRESH_FACTOR = 3
# A rollup is recomputed no more often than this many times what computing it last took: one that reads all of
# 100M keys for 40 s is refreshed every 400 s rather than every minute, so the cheap ones around it still fit
# their interval and the job spends at most about a tenth of a backend on each (docs/benchmarks.md, XL).
COST_FACTOR = 10

Fetch = Callable[[psycopg.Connection, Tables, Settings, str], list[Any]]


@dataclass(frozen=True)
class Rollup:
    name: str
    row: type  # the dataclass of the rows it stores
    fetch: Fetch  # (conn, tables, settings, variant) -> rows
    assemble: Callable[[list[Any]], Any]  # rows -> the value a page shows
    variants: Callable[[Settings], list[str]]  # the variants the job precomputes
    index: str | None  # the index advice its live fetch needs
    every_seconds: int  # how often the job recomputes it
    profiles: str = "reference"  # whose databases: "reference", "library" or "any"

    def compute(self, conn: psycopg.Connection, tables: Tables, settings: Settings, variant: str) -> Any:
        return self.assemble(self.fetch(conn, tables, settings, variant))


class RollupDecodeError(ValueError):
    """A stored rollup's rows do not fit its row type (written by another idemdash version)."""


def _single(settings: Settings) -> list[str]:
    return [""]


def _one(rows: list[Any]) -> Any:
    return rows[0]


def _as_list(rows: list[Any]) -> Any:
    return list(rows)


ROLLUPS: dict[str, Rollup] = {
    r.name: r
    for r in (
        Rollup(
            "key_windows",
            overview.WindowCounts,
            lambda conn, tables, s, v: [overview.count_keys_by_window(conn, tables)],
            _one,
            _single,
            "index_keys_updated",
            60,
        ),
        # the overview's processing keys (stuck, processing, held, the oldest stuck lease): each count reads every
        # processing key's index entry, and the heap page of each one not marked all-visible, which are the pages
        # the application's claims touched last (docs/benchmarks.md, "The overview's heap reads")
        Rollup(
            "key_processing",
            overview.ProcessingCounts,
            lambda conn, tables, s, v: [overview.count_processing_keys(conn, tables, s.default_lease_seconds)],
            _one,
            _single,
            "index_keys_leases",
            60,
        ),
        # the overview's outbox backlog: pending rows are the newest, whose heap pages are seldom all-visible
        Rollup(
            "outbox_backlog",
            overview.OutboxBacklog,
            lambda conn, tables, s, v: [overview.get_outbox_backlog(conn, tables)],
            _one,
            _single,
            "index_outbox_pending",
            60,
        ),
        Rollup(
            "inbox_volume",
            overview.InboxVolume,
            lambda conn, tables, s, v: [overview.get_inbox_volume(conn, tables)],
            _one,
            _single,
            "index_inbox_processed",
            60,
        ),
        # variant '<window>:<min_attempts>' (hotspot_variant), each window at the default min_attempts
        Rollup(
            "hotspot_groups",
            hotspots.HotspotGroupRow,
            lambda conn, tables, s, v: hotspots.list_hotspot_group_rows(
                conn,
                tables,
                int(v.partition(":")[2]),
                lease_seconds=s.default_lease_seconds,
                window=hotspots.WINDOWS[v.partition(":")[0]],
            ),
            hotspots.group_hotspots,
            lambda s: [hotspots.hotspot_variant(w, s.hotspot_min_attempts) for w in hotspots.WINDOWS],
            "index_keys_hotspots",
            60,
        ),
        # variant: the window. Window 'all' counts every key in the table, the one aggregate that reads all of it
        # (an index-only count), so less often
        Rollup(
            "attempt_histogram",
            hotspots.AttemptBucket,
            lambda conn, tables, s, v: hotspots.count_keys_by_attempts(conn, tables, hotspots.WINDOWS[v]),
            _as_list,
            lambda s: list(hotspots.WINDOWS),
            "index_keys_hotspots",
            300,
        ),
        Rollup(
            "suppression",
            suppression.ScopeSuppression,
            lambda conn, tables, s, v: suppression.list_suppression_rows(conn, tables, suppression.WINDOWS[v]),
            suppression.assemble_suppression,
            lambda s: list(suppression.WINDOWS),
            "index_keys_created",
            120,
        ),
        Rollup(
            "inbox_consumers",
            inbox.ConsumerVolume,
            lambda conn, tables, s, v: inbox.list_inbox_consumer_rows(
                conn, tables, retention_days=s.inbox_retention_days
            ),
            inbox.bounded_consumers,
            _single,
            "index_inbox_consumer",
            60,
        ),
        Rollup(
            "inbox_totals",
            inbox.InboxTotals,
            lambda conn, tables, s, v: [inbox.get_inbox_totals(conn, tables, retention_days=s.inbox_retention_days)],
            _one,
            _single,
            "index_inbox_processed",
            60,
        ),
        Rollup(
            "outbox_event_types",
            outbox.EventTypeSummary,
            lambda conn, tables, s, v: outbox.list_outbox_event_types(conn, tables),
            _as_list,
            _single,
            "index_outbox_published",
            60,
        ),
        Rollup(
            "workers",
            workers.Owner,
            workers.fetch_owner_rows,
            workers.bounded_owners,
            lambda s: list(workers.WINDOWS),
            "index_keys_updated",
            60,
        ),
        # /tables (any profile's: a library's, or the reference tables read as a profile): every state's count with
        # how long it took; a page counts live the quick ones. The name is older than the reference profile's /tables
        Rollup(
            "library_states",
            profile_states.MeasuredState,
            lambda conn, tables, s, v: profile_states.measure_states(conn, s),
            _as_list,
            _single,
            None,
            60,
            profiles="any",
        ),
    )
}


def applies(rollup: Rollup, settings: Settings) -> bool:
    """Whether the rollup job computes ``rollup`` for a database with these settings (its profile's kind)."""
    if rollup.profiles == "any":
        return True
    library: bool = settings.profile != DEFAULT_PROFILE
    return (rollup.profiles == "library") == library


def interval_seconds(rollup: Rollup, duration_ms: float | None) -> float:
    """How often ``rollup`` is recomputed when computing it last took ``duration_ms`` (None: never computed):
    its own interval, or COST_FACTOR times that duration when longer."""
    return max(float(rollup.every_seconds), COST_FACTOR * (duration_ms or 0.0) / 1000)


def usable(stored: StoredRollup, rollup: Rollup) -> bool:
    """Fresh (within FRESH_FACTOR of its intervals), and slow enough to fetch that reading it precomputed is worth
    its age."""
    return stored.duration_ms >= LIVE_BUDGET_MS and stored.age_seconds <= FRESH_FACTOR * interval_seconds(
        rollup, stored.duration_ms
    )


@functools.cache
def _fields(row: type) -> tuple[dict[str, Any], frozenset[str]]:
    """A row class's field types and names, worked out once (``get_type_hints`` evaluates every annotation)."""
    return typing.get_type_hints(row), frozenset(f.name for f in dataclasses.fields(row))


def decode_rows(rollup: Rollup, payload: Any) -> list[Any]:
    """The stored rows as ``rollup.row`` instances; RollupDecodeError when they do not fit."""
    hints, names = _fields(rollup.row)
    if not isinstance(payload, list):
        raise RollupDecodeError(f"rollup {rollup.name!r}: expected a list of rows, got {type(payload).__name__}")
    rows = []
    for item in payload:
        if not isinstance(item, dict) or set(item) != names:
            got = sorted(item) if isinstance(item, dict) else type(item).__name__
            raise RollupDecodeError(
                f"rollup {rollup.name!r}: a stored row has {got}, {rollup.row.__name__} has {sorted(names)}"
            )
        try:
            rows.append(rollup.row(**{k: _typed(hints[k], v) for k, v in item.items()}))
        except (TypeError, ValueError) as exc:
            raise RollupDecodeError(f"rollup {rollup.name!r}: {exc}") from None
    return rows


def _typed(hint: Any, value: Any) -> Any:
    if value is not None and datetime in (hint, *typing.get_args(hint)):
        return datetime.fromisoformat(value)
    return value


def read_stored(conn: psycopg.Connection, name: str, variant: str = "", *, savepoint: bool = True) -> Any | None:
    """A rollup's stored value while it is fresh and was slow to fetch live (what a page would read), else None:
    never computed here (for a number that only spares a page a bounded read when the job already has it).
    ``savepoint=False``: nothing reads after it in the transaction (a panel of its own, which ends a transaction it
    left failed), so idemdash's schema missing needs no savepoint, two round trips fewer."""
    rollup = ROLLUPS[name]
    try:
        with conn.transaction() if savepoint else nullcontext():
            stored = list_rollups(conn, [(name, variant)])
    except (errors.UndefinedTable, errors.InvalidSchemaName):
        return None
    if not stored or not usable(stored[0], rollup):
        return None
    try:
        return rollup.assemble(decode_rows(rollup, stored[0].payload))
    except RollupDecodeError:
        return None


def read_value(conn: psycopg.Connection, tables: Tables, settings: Settings, name: str, variant: str = "") -> Any:
    """A rollup's value for code that is not a page panel (the /metrics collector, the snapshot job), on the
    caller's connection: precomputed when fresh and slow to fetch live, as for panels; otherwise fetched now."""
    rollup = ROLLUPS[name]
    try:
        with conn.transaction():  # a savepoint: idemdash's schema missing must not abort the caller's reads
            stored = list_rollups(conn, [(name, variant)])
    except (errors.UndefinedTable, errors.InvalidSchemaName):
        stored = []
    if stored and usable(stored[0], rollup):
        try:
            return rollup.assemble(decode_rows(rollup, stored[0].payload))
        except RollupDecodeError as exc:
            log.warning("%s; computing it live", exc)
    return rollup.compute(conn, tables, settings, variant)
