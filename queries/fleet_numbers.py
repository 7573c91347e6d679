"""One database's numbers on the all-databases overview, the same for every profile (core/profiles): stuck and in
progress work, the outbox's pending rows and lag, what the library gave up on, the newest purge run. The reference
tables answer from the overview's own statements (their indexes keep them cheap at any size); another library's from
its profile's states, counted as /tables counts them (the rollup job's stored count where counting live is slow).
A number the library does not record is None, never 0."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import psycopg

from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.profiles.shape import FAILED, IN_PROGRESS, PENDING, STUCK, Meaning
from idemdash.core.settings import Settings
from idemdash.queries import Tables
from idemdash.queries.catalog import ShapeNotFound
from idemdash.queries.overview import count_processing_keys, get_outbox_backlog, list_recent_purge_runs
from idemdash.queries.profile_rows import get_state_lag
from idemdash.queries.profile_states import ConfiguredStates
from idemdash.queries.purge_history import PurgeRun
from idemdash.queries.rollup_states import read_library_states

OUTBOX = "outbox"


@dataclass(frozen=True)
class DatabaseSummary:
    stuck: int | None  # work in progress past what the library allows (stuck keys, stale publications)
    processing: int | None  # work someone holds now
    needs_review: int | None  # keys an operator held for review (the reference tables' own)
    outbox_pending: int | None  # what the outbox still has to send
    outbox_lag_seconds: float | None  # how long its oldest pending row has waited; None when none is pending
    failed: int | None  # rows given up on: failed keys, parked or dead-lettered messages
    last_purge: PurgeRun | None
    # the reference outbox's likely poison rows (pending, POISON_MIN_ATTEMPTS or more attempts), left out of its lag
    # and counted apart; None where the library does not record attempts that way
    outbox_poison: int | None = None
    outbox_poison_oldest_seconds: float | None = None


def _total(counts: Mapping[tuple[str, Meaning], int | None], meaning: Meaning, role: str | None = None) -> int | None:
    """The count of ``meaning`` over the tables that record it (of ``role`` only, when given); None when none does."""
    found = [n for (r, m), n in counts.items() if m == meaning and (role is None or r == role) and n is not None]
    return sum(found) if found else None


def _last_purge(conn: psycopg.Connection) -> PurgeRun | None:
    """The newest purge run, in a savepoint: a library's database may have no idemdash schema (none ran then)."""
    try:
        with conn.transaction():
            runs = list_recent_purge_runs(conn, limit=1)
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return None
    return runs[0] if runs else None


def get_database_summary(conn: psycopg.Connection, tables: Tables, settings: Settings) -> DatabaseSummary:
    """The database's numbers, through its profile (raises ShapeNotFound when a library's tables are not found)."""
    return get_database_numbers(conn, tables, settings)[0]


def get_database_numbers(
    conn: psycopg.Connection, tables: Tables, settings: Settings, meanings: Collection[str] = ()
) -> tuple[DatabaseSummary, ConfiguredStates]:
    """The summary, and a library's count of every state of ``meanings`` besides, counted in the same pass as the
    summary's own (/metrics' rows by state). The reference tables answer the summary only: their states beyond it
    have series of their own."""
    reference = settings.profile == DEFAULT_PROFILE
    wanted = (FAILED,) if reference else (STUCK, IN_PROGRESS, PENDING, FAILED, *meanings)
    read, _ = read_library_states(conn, settings, wanted)
    if read.found is None and not reference:  # the reference tables' own statements say what is missing
        raise ShapeNotFound(read.problem or "the tables were not found where the configuration points")
    counts = {(state.table, state.meaning): n for state, n in read.counts}
    if reference:
        keys = count_processing_keys(conn, tables, settings.default_lease_seconds)
        outbox = get_outbox_backlog(conn, tables)
        return DatabaseSummary(
            keys.stuck,
            keys.processing,
            keys.needs_review,
            outbox.pending,
            outbox.lag_seconds,
            _total(counts, FAILED),
            _last_purge(conn),
            outbox.poison,
            outbox.poison_oldest_seconds,
        ), read
    pending = next((state for state, _ in read.counts if state.table == OUTBOX and state.meaning == PENDING), None)
    lag = get_state_lag(conn, read.found, pending, settings) if pending is not None and read.found else None
    return DatabaseSummary(
        _total(counts, STUCK),
        _total(counts, IN_PROGRESS),
        None,
        _total(counts, PENDING, OUTBOX),
        lag,
        _total(counts, FAILED),
        _last_purge(conn),
    ), read
