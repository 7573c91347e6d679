"""Every state's count of a database's tables as its profile reads them (/tables, the fleet's numbers, a
library's pages): the rollup job's stored count where counting it live was measured slow, counted now otherwise."""

from __future__ import annotations

import logging
from collections.abc import Collection
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import errors

from idemdash.core.profiles import profile
from idemdash.core.profiles.shape import MEANINGS, Meaning
from idemdash.core.settings import Settings
from idemdash.queries import profile_states
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.rollup_store import list_rollups
from idemdash.queries.rollups import (
    FRESH_FACTOR,
    LIVE_BUDGET_MS,
    ROLLUPS,
    RollupDecodeError,
    decode_rows,
    interval_seconds,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredCount:
    """A state's count as the rollup job stored it: when it was counted, and whether it is the planner's estimate
    (counting it took longer than the job's budget for one state: profile_states.COUNT_BUDGET_MS)."""

    count: int | None
    computed_at: datetime
    estimated: bool


def stored_state_counts(conn: psycopg.Connection, *, savepoint: bool = True) -> dict[tuple[str, str], StoredCount]:
    """The profile's states whose stored count is fresh and was slow to count live: (role, meaning) -> its stored
    count. Nothing when idemdash's schema is not in the database (nothing is stored there then). ``savepoint=False``:
    as ``rollups.read_stored``'s."""
    rollup = ROLLUPS["library_states"]
    try:
        # a savepoint: idemdash's schema missing must not abort the caller's reads
        with conn.transaction() if savepoint else nullcontext():
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
