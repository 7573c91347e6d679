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
import logging
import typing
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import psycopg
from psycopg import errors
from psycopg.types.json import Jsonb

from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.profiles import profile
from idemdash.core.profiles.shape import MEANINGS, Meaning
from idemdash.core.settings import Settings
from idemdash.queries import Tables, hotspots, inbox, outbox, overview, profile_states, statement, suppression, workers
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.transactions import select_all

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


@dataclass(frozen=True)
class StoredCount:
    """A state's count as the rollup job stored it: when it was counted, and whether it is the planner's estimate
    (counting it took longer than the job's budget for one state: profile_states.COUNT_BUDGET_MS)."""

    count: int | None
    computed_at: datetime
    estimated: bool


def stored_state_counts(conn: psycopg.Connection) -> dict[tuple[str, str], StoredCount]:
    """The profile's states whose stored count is fresh and was slow to count live: (role, meaning) -> its stored
    count. Nothing when idemdash's schema is not in the database (nothing is stored there then)."""
    rollup = ROLLUPS["library_states"]
    try:
        with conn.transaction():  # a savepoint: idemdash's schema missing must not abort the caller's reads
            stored = list_rollups(conn, [(rollup.name, "")])
    except (errors.UndefinedTable, errors.InvalidSchemaName):
        return {}
    if not stored or stored[0].age_seconds > FRESH_FACTOR * interval_seconds(rollup, stored[0].duration_ms):
        return {}
    try:
        rows = decode_rows(rollup, stored[0].payload)
    except RollupDecodeError as exc:
        log.warning("%s; counting live", exc)
        return {}
    return {
        (r.role, r.meaning): StoredCount(r.count, stored[0].computed_at, r.estimated)
        for r in rows
        if r.ms >= LIVE_BUDGET_MS or r.estimated
    }  # estimated: too slow even for the job


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


# -- stored rows ------------------------------------------------------------------------------------------------


def encode_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    return [{f.name: _plain(getattr(row, f.name)) for f in dataclasses.fields(row)} for row in rows]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a rollup row holds a {type(value).__name__}: store plain values")


def decode_rows(rollup: Rollup, payload: Any) -> list[Any]:
    """The stored rows as ``rollup.row`` instances; RollupDecodeError when they do not fit."""
    hints = typing.get_type_hints(rollup.row)
    names = {f.name for f in dataclasses.fields(rollup.row)}
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


@dataclass(frozen=True)
class StoredRollup:
    name: str
    variant: str
    computed_at: datetime
    duration_ms: float
    payload: Any
    age_seconds: float


@dataclass(frozen=True)
class RollupAge:
    name: str
    variant: str
    computed_at: datetime
    duration_ms: float
    age_seconds: float


def list_rollups(conn: psycopg.Connection, wanted: Sequence[tuple[str, str]]) -> list[StoredRollup]:
    return select_all(
        conn,
        statement("list_rollups"),
        {"names": [n for n, _ in wanted], "variants": [v for _, v in wanted]},
        StoredRollup,
    )


def list_rollup_ages(conn: psycopg.Connection) -> list[RollupAge]:
    return select_all(conn, statement("list_rollup_ages"), None, RollupAge)


def try_rollup_lock(conn: psycopg.Connection) -> bool:
    row = conn.execute(statement("try_rollup_lock")).fetchone()
    return bool(row and row[0])


def release_rollup_lock(conn: psycopg.Connection) -> None:
    conn.execute(statement("release_rollup_lock"))


def get_clock(conn: psycopg.Connection) -> datetime:
    row = conn.execute(statement("get_clock")).fetchone()
    assert row is not None
    return cast(datetime, row[0])


def upsert_rollup(
    conn: psycopg.Connection, name: str, variant: str, computed_at: datetime, duration_ms: float, rows: Sequence[Any]
) -> None:
    conn.execute(
        statement("upsert_rollup"),
        {
            "name": name,
            "variant": variant,
            "computed_at": computed_at,
            "duration_ms": duration_ms,
            "payload": Jsonb(encode_rows(rows)),
        },
    )


def read_library_states(
    conn: psycopg.Connection,
    settings: Settings,
    meanings: Collection[str] = MEANINGS,
    roles: Collection[str] | None = None,
) -> tuple[profile_states.ConfiguredStates, dict[tuple[str, Meaning], StoredCount]]:
    """A database's tables (as its profile reads them) and the count of every state (of ``meanings`` only, and of
    the tables of ``roles`` only, when given): the stored one where counting it live was measured slow and it is
    fresh (``stored_state_counts``), counted now otherwise; and the stored ones."""
    stored = stored_state_counts(conn)
    try:
        found = find_configured(conn, settings)
    except ShapeNotFound as exc:
        return profile_states.ConfiguredStates(None, str(exc)), {}
    counts, used = [], {}
    for state in profile(found.profile).states_of(found.version):
        if state.meaning not in meanings or (roles is not None and state.table not in roles):
            continue
        key = (state.table, state.meaning)
        if key in stored:
            used[key] = stored[key]
            count = stored[key].count
        else:
            count = profile_states.count_state(conn, found, state, profile_states.params_for(state, settings))
        counts.append((state, count))
    return profile_states.ConfiguredStates(found, None, tuple(counts)), used
