"""What /metrics says about one database (dashboard/metrics.py collects them for every database and caches them):
the families, each with its help line and labels, and one database's samples, read once through its profile
(queries/fleet_numbers.py), under the same names for every profile; the reference tables' own detail; idemdash's
purges and heartbeat where its schema is."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import psycopg

from idemdash.core.profiles.shape import MEANINGS
from idemdash.dashboard import one_model
from idemdash.queries import fleet_numbers, metrics, overview, rollups, snapshots
from idemdash.queries.target import Target

# name: (help, labels besides ``database``)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "idemdash_database_up": ("1 when the last read of the database succeeded.", ()),
    # every profile's numbers (the all-databases overview's), each by its library's own states; a number the
    # library does not record has no sample
    "idemdash_stuck": ("Work in progress past what its library allows: stuck keys, stale publications.", ("profile",)),
    "idemdash_in_progress": (
        "Work someone holds now (keys in processing, publications being sent), stuck included.",
        ("profile",),
    ),
    "idemdash_needs_review": ("Work an operator holds for review.", ("profile",)),
    "idemdash_failed": ("Rows given up on: failed keys, parked or dead-lettered messages.", ("profile",)),
    "idemdash_outbox_pending": ("Outbox rows not yet published.", ("profile",)),
    "idemdash_outbox_lag_seconds": (
        "Age of the oldest pending outbox row that is not likely poison (0 when none).",
        ("profile",),
    ),
    "idemdash_outbox_poison": (
        "Likely poison outbox rows: pending with 3 or more delivery attempts, left out of the lag.",
        ("profile",),
    ),
    "idemdash_outbox_poison_oldest_seconds": (
        "Age of the oldest likely poison outbox row (0 when none).",
        ("profile",),
    ),
    "idemdash_profile_rows": (
        "Rows of a library's tables in each state, by the library's own definition (a "
        "database of another library's profile; /tables).",
        ("profile", "table", "role", "state"),
    ),
    # the reference tables' own detail
    "idemdash_stuck_keys": ("Keys in processing whose lease has run out, by scope.", ("scope",)),
    "idemdash_stuck_keys_total": ("Keys in processing whose lease has run out, all scopes.", ()),
    "idemdash_processing_keys": ("Keys in processing, stuck ones included.", ()),
    "idemdash_needs_review_keys": ("Keys an operator holds for review (needs_review), held or hold ended.", ()),
    "idemdash_failed_retryable_keys": ("Keys in failed_retryable.", ()),
    "idemdash_failed_final_keys_24h": ("Keys that became failed_final in the last 24 hours.", ()),
    "idemdash_inbox_rows_24h": ("Inbox rows recorded in the last 24 hours.", ()),
    # idemdash's own records, wherever its schema is
    "idemdash_purge_last_success_timestamp_seconds": (
        "When the last successful real purge of each table finished.",
        ("table",),
    ),
    "idemdash_purge_last_rows_deleted": ("Rows the last successful real purge of each table deleted.", ("table",)),
    "idemdash_purge_last_run_failed": ("1 when the latest finished real purge run of each table failed.", ("table",)),
    "idemdash_snapshot_last_timestamp_seconds": (
        "When the scheduler last recorded a metric snapshot (its heartbeat).",
        (),
    ),
    "idemdash_counts_timestamp_seconds": (
        "When the reference tables' counts of this scrape were taken: the scheduler's latest metric snapshot, which "
        "they come from while it is younger than three snapshot intervals; else the scrape's own time (counted live).",
        (),
    ),
}


# the families /metrics keeps per database with IDEMDASH_METRICS_PER_DATABASE=alerts (auto: past AUTO_ALL databases):
# those deploy/prometheus/idemdash-alerts.yml uses; the request histogram's database label is then "all"
ALERT_FAMILIES = (
    "idemdash_database_up",
    "idemdash_stuck",
    "idemdash_outbox_lag_seconds",
    "idemdash_outbox_poison",
    "idemdash_purge_last_run_failed",
    "idemdash_purge_last_success_timestamp_seconds",
    "idemdash_snapshot_last_timestamp_seconds",
)
# the reference tables' counts come from the snapshot job's latest snapshot while it is younger than this many of its
# intervals (the scheduler runs); older, or none, and a scrape counts them live
SNAPSHOT_INTERVALS = 3
# how long /metrics' own connection to a database whose pool is closed may take to connect
CONNECT_TIMEOUT_SECONDS = 2
APPLICATION_NAME = "idemdash-metrics"


Sample = Callable[[str, tuple[str, ...], float | None], None]


def database_samples(target: Target, sample: Sample, alerts_only: bool) -> None:
    """One database's samples: its summary, read once through its profile (queries/fleet_numbers.py), under the same
    names for every profile; a library's rows by state (not with ``alerts_only``: no rule uses them); the reference
    tables' own detail, from the scheduler's latest snapshot while it is fresh; idemdash's purges and heartbeat where
    its schema is."""
    reference = one_model.owns_tables(target.settings)
    read = None
    with _read(target) as conn:
        snapshot = _fresh_snapshot(conn, target) if reference else None
        if snapshot is not None:  # what the snapshot job counted: one row read, whatever the tables' size
            summary = _snapshot_summary(snapshot)
            sample("idemdash_counts_timestamp_seconds", (), snapshot.taken_at.timestamp())
            _reference_snapshot(snapshot, summary, sample, alerts_only)
        else:
            summary, read = fleet_numbers.get_database_numbers(
                conn, target.tables, target.settings, () if alerts_only else MEANINGS
            )
            if reference:
                sample("idemdash_counts_timestamp_seconds", (), time.time())
                _reference(conn, target, summary, sample, alerts_only)
        housekeeping = metrics.get_housekeeping(conn, required=reference)
    profile = read.found.profile if read is not None and read.found is not None else target.settings.profile
    _summary(profile, summary, sample)
    if not reference and read is not None and read.found is not None:
        names = dict(read.found.tables)
        for state, count in read.counts:
            if state.table in names:  # an optional table the database does not have: not there, no sample
                sample("idemdash_profile_rows", (profile, names[state.table], state.table, state.meaning), count)
    for status in housekeeping.purges:
        if status.last_success_at is not None:
            sample(
                "idemdash_purge_last_success_timestamp_seconds",
                (status.table_name,),
                status.last_success_at.timestamp(),
            )
        sample("idemdash_purge_last_rows_deleted", (status.table_name,), status.last_rows_deleted)
    for run in housekeeping.last_runs:
        sample("idemdash_purge_last_run_failed", (run.table_name,), 1.0 if run.failed else 0.0)
    # the scheduler's heartbeat: it records a snapshot every IDEMDASH_SNAPSHOT_INTERVAL_SECONDS while it runs
    if housekeeping.last_snapshot_at is not None:
        sample("idemdash_snapshot_last_timestamp_seconds", (), housekeeping.last_snapshot_at.timestamp())


def _fresh_snapshot(conn: psycopg.Connection, target: Target) -> snapshots.Snapshot | None:
    """The snapshot job's latest snapshot while younger than SNAPSHOT_INTERVALS intervals and recorded with every
    number /metrics serves (not by an idemdash from before 0.3); else None: counted live."""
    max_age = SNAPSHOT_INTERVALS * target.settings.snapshot_interval_seconds
    snapshot = snapshots.get_snapshot_younger_than(conn, max_age)
    if snapshot is None or snapshot.failed_keys is None or snapshot.stuck_by_scope is None:
        return None
    return snapshot


def _snapshot_summary(snapshot: snapshots.Snapshot) -> fleet_numbers.DatabaseSummary:
    return fleet_numbers.DatabaseSummary(
        snapshot.stuck_keys,
        snapshot.processing_keys,
        snapshot.needs_review_keys,
        snapshot.outbox_pending,
        snapshot.outbox_lag_seconds,
        snapshot.failed_keys,
        None,
        snapshot.outbox_poison,
        snapshot.outbox_poison_oldest_seconds,
    )


def _reference_snapshot(
    snapshot: snapshots.Snapshot, summary: fleet_numbers.DatabaseSummary, sample: Sample, alerts_only: bool
) -> None:
    """The reference tables' own series, as the snapshot job recorded them."""
    _totals(summary, sample)
    if alerts_only:
        return
    for scope, stuck in sorted((snapshot.stuck_by_scope or {}).items()):
        sample("idemdash_stuck_keys", (scope,), stuck)
    sample("idemdash_failed_retryable_keys", (), snapshot.failed_retryable_keys)
    sample("idemdash_failed_final_keys_24h", (), snapshot.failed_final_keys_24h)
    sample("idemdash_inbox_rows_24h", (), snapshot.inbox_rows_24h)


def _totals(summary: fleet_numbers.DatabaseSummary, sample: Sample) -> None:
    sample("idemdash_stuck_keys_total", (), summary.stuck)
    sample("idemdash_processing_keys", (), summary.processing)
    sample("idemdash_needs_review_keys", (), summary.needs_review)


def _summary(profile: str, summary: fleet_numbers.DatabaseSummary, sample: Sample) -> None:
    sample("idemdash_stuck", (profile,), summary.stuck)
    sample("idemdash_in_progress", (profile,), summary.processing)
    sample("idemdash_needs_review", (profile,), summary.needs_review)
    sample("idemdash_failed", (profile,), summary.failed)
    sample("idemdash_outbox_pending", (profile,), summary.outbox_pending)
    lag = summary.outbox_lag_seconds
    # none pending: 0, as ever; rows pending whose age the library does not record: no sample
    sample(
        "idemdash_outbox_lag_seconds",
        (profile,),
        0.0
        if lag is None and summary.outbox_pending is not None and summary.outbox_pending == (summary.outbox_poison or 0)
        else lag,
    )
    # the reference outbox's likely poison rows: no sample where the profile does not record them
    sample("idemdash_outbox_poison", (profile,), summary.outbox_poison)
    if summary.outbox_poison is not None:
        sample("idemdash_outbox_poison_oldest_seconds", (profile,), summary.outbox_poison_oldest_seconds or 0.0)


def _reference(
    conn: psycopg.Connection, target: Target, summary: fleet_numbers.DatabaseSummary, sample: Sample, alerts_only: bool
) -> None:
    """The reference tables' own series counted now (no rule uses them: not read with ``alerts_only``)."""
    _totals(summary, sample)
    if alerts_only:
        return
    tables = target.tables
    # counts by window and the inbox volume: precomputed at scale (queries/rollups.py)
    windows = rollups.read_value(conn, tables, target.settings, "key_windows")
    inbox = rollups.read_value(conn, tables, target.settings, "inbox_volume")
    for row in overview.count_stuck_keys_by_scope(conn, tables, target.settings.default_lease_seconds):
        sample("idemdash_stuck_keys", (row.scope,), row.stuck)
    sample("idemdash_failed_retryable_keys", (), windows.failed_retryable)
    sample("idemdash_failed_final_keys_24h", (), windows.failed_final_24h)
    sample("idemdash_inbox_rows_24h", (), inbox.rows_24h)


def _read(target: Target) -> AbstractContextManager[psycopg.Connection]:
    """On the database's pool when it is open (its standby, if any, while close enough), else (several databases,
    pool closed) on a short connection of /metrics' own to the primary, which opens no pool."""
    keeper = target.keeper
    if keeper is None or not keeper.lazy or target.pool_is_open():
        return target.read()
    return target.read_once(APPLICATION_NAME, target.statement_timeout_ms, CONNECT_TIMEOUT_SECONDS)
