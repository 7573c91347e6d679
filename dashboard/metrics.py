"""`GET /metrics` in the Prometheus text format (prometheus_client).

The database numbers are read at most once per IDEMDASH_METRICS_CACHE_SECONDS
per worker, however often Prometheus (or several of them) scrape, so a scrape
never loads the application's tables. Every database, whatever its profile (core/profiles), answers the same
names for the numbers every profile has (queries/fleet_numbers.py: stuck, in progress, failed, the outbox's
backlog and lag), labelled by its profile, so the same alert rules watch them all.

Request counts and latencies add up across gunicorn's workers: with ``PROMETHEUS_MULTIPROC_DIR`` set (``idemdash
serve`` sets it for its workers) each worker writes its histogram to files there and a scrape, whichever worker
answers it, sums every worker's files, including those of workers that have exited, so a counter never goes
backwards between scrapes. Samples are summed per label set. Every sample names its database (``database``:
the name in IDEMDASH_CONFIG, ``default`` without it). Without it (one process: ``flask run``, the demo, the tests)
the process keeps them in memory.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from idemdash.core.profiles.shape import MEANINGS
from idemdash.dashboard import one_model
from idemdash.dashboard.targets import all_targets, app_settings, current_database
from idemdash.queries import fleet_numbers, metrics, rollups
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.target import Target

bp = Blueprint("metrics", __name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

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
ALL_DATABASES = "all"
AUTO_ALL = 20

# this worker's own connections (queries/pool_budget.py), served fresh at every scrape and without a database label
WORKER_FAMILIES: dict[str, str] = {
    "idemdash_worker_connections": "Connections the web worker that answered holds now: `pools` (its databases' "
    "pools) and `background` (the all-databases refresh's and /metrics' own).",
    "idemdash_worker_open_pools": "Databases whose pool the web worker that answered has open now.",
    "idemdash_worker_connection_budget": "IDEMDASH_FLEET_MAX_CONNECTIONS: most connections a web worker holds with "
    "several databases (absent with one database: no budget applies).",
}
# how long /metrics' own connection to a database whose pool is closed may take to connect
CONNECT_TIMEOUT_SECONDS = 2
APPLICATION_NAME = "idemdash-metrics"


class DatabaseCollector(Collector):
    """Reads every database's headline numbers, cached for ``ttl`` seconds; each sample carries the database's name
    (``default`` without IDEMDASH_CONFIG) in a ``database`` label. A database whose pool is open is read on it; with
    several databases one whose pool is closed is read on a short connection of its own (one at a time: the scrape
    holds a lock), so a scrape opens no pool. The worker's own connections are read afresh at every scrape."""

    def __init__(self, targets: Mapping[str, Target], ttl: float, pools: PoolBudget, per_database: str = "all") -> None:
        self.targets = targets
        self.per_database = per_database
        self.ttl = ttl
        self.pools = pools
        self._lock = threading.Lock()
        self._cached: tuple[float, list[GaugeMetricFamily]] | None = None

    def replace_targets(self, targets: Mapping[str, Target]) -> None:
        """The databases served now (a fleet's members joined or left): the next scrape reads them afresh."""
        self.targets = targets  # a new dict, never one changed in place: a scrape under way reads the old one whole
        self._cached = None

    def alerts_only(self, databases: int | None = None) -> bool:
        """Only ALERT_FAMILIES per database (IDEMDASH_METRICS_PER_DATABASE)."""
        count = len(self.targets) if databases is None else databases
        return self.per_database == "alerts" or (self.per_database == "auto" and count > AUTO_ALL)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached[0] > self.ttl:
                self._cached = (time.monotonic(), self._read())
            yield from self._cached[1]
        yield from self._worker()

    def _worker(self) -> Iterator[GaugeMetricFamily]:
        usage = self.pools.usage()
        held = GaugeMetricFamily(
            "idemdash_worker_connections", WORKER_FAMILIES["idemdash_worker_connections"], labels=["kind"]
        )
        held.add_metric(["pools"], usage.pool_connections)
        held.add_metric(["background"], usage.background_connections)
        yield held
        yield GaugeMetricFamily(
            "idemdash_worker_open_pools", WORKER_FAMILIES["idemdash_worker_open_pools"], value=usage.open_pools
        )
        budget = GaugeMetricFamily(
            "idemdash_worker_connection_budget", WORKER_FAMILIES["idemdash_worker_connection_budget"]
        )
        if usage.budget is not None:
            budget.add_metric([], usage.budget)
        yield budget

    def _read(self) -> list[GaugeMetricFamily]:
        # every family is served, with its help line, even without a sample (no stuck keys): rules and panels
        # that use it can be checked against a quiet database
        families = {
            name: GaugeMetricFamily(name, doc, labels=["database", *labels]) for name, (doc, labels) in FAMILIES.items()
        }
        targets = self.targets
        alerts_only = self.alerts_only(len(targets))
        for database, target in targets.items():
            for name, labels, value in self._samples(target, alerts_only):
                if alerts_only and name not in ALERT_FAMILIES:
                    continue  # the family stays, with its help line, and no sample
                families[name].add_metric([database, *labels], value)
        return list(families.values())

    def _samples(self, target: Target, alerts_only: bool) -> list[tuple[str, tuple[str, ...], float]]:
        samples: list[tuple[str, tuple[str, ...], float]] = []

        def sample(name: str, labels: tuple[str, ...], value: float | None) -> None:
            if value is not None:  # not recorded (by this library): no sample, never 0
                samples.append((name, labels, value))

        try:
            _database(target, sample, alerts_only)
        except Exception:  # an outage must not break the scrape; idemdash_database_up says what happened
            return [("idemdash_database_up", (), 0)]
        samples.append(("idemdash_database_up", (), 1))
        return samples


Sample = Callable[[str, tuple[str, ...], float | None], None]


def _database(target: Target, sample: Sample, alerts_only: bool) -> None:
    """One database's samples: its summary, read once through its profile (queries/fleet_numbers.py), under the same
    names for every profile; a library's rows by state (not with ``alerts_only``: no rule uses them); the reference
    tables' own detail; idemdash's purges and heartbeat where its schema is."""
    reference = one_model.owns_tables(target.settings)
    with _read(target) as conn:
        summary, read = fleet_numbers.get_database_numbers(
            conn, target.tables, target.settings, () if alerts_only else MEANINGS
        )
        housekeeping = metrics.get_housekeeping(conn, required=reference)
        if reference:
            _reference(conn, target, summary, sample, alerts_only)
    profile = read.found.profile if read.found is not None else target.settings.profile
    _summary(profile, summary, sample)
    if not reference and read.found is not None:
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
    """The reference tables' own series (no rule uses them: not read with ``alerts_only``)."""
    sample("idemdash_stuck_keys_total", (), summary.stuck)
    sample("idemdash_processing_keys", (), summary.processing)
    sample("idemdash_needs_review_keys", (), summary.needs_review)
    if alerts_only:
        return
    tables = target.tables
    # counts by window and the inbox volume: precomputed at scale (queries/rollups.py)
    windows = rollups.read_value(conn, tables, target.settings, "key_windows")
    inbox = rollups.read_value(conn, tables, target.settings, "inbox_volume")
    for row in metrics.count_stuck_keys_by_scope(conn, tables, target.settings.default_lease_seconds):
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


def multiprocess_dir() -> str | None:
    """Where gunicorn's workers share their metrics (prometheus_client reads the variable when it is imported)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def init_app(app: Flask) -> None:
    registry = CollectorRegistry(auto_describe=False)
    shared = multiprocess_dir()
    if shared:
        # the histogram lives in files; every worker's, summed, are what a scrape reports
        MultiProcessCollector(registry, path=shared)
    latency = Histogram(
        "idemdash_http_request_duration_seconds",
        "Time to answer a request, by endpoint.",
        ["database", "endpoint", "method", "status"],
        registry=None if shared else registry,
        buckets=LATENCY_BUCKETS,
    )
    collector = DatabaseCollector(
        app.extensions["idemdash_targets"],
        float(app_settings(app).metrics_cache_seconds),
        app.extensions["idemdash_pools"],
        app_settings(app).metrics_per_database,
    )
    app.extensions["idemdash_fleets"].on_change(collector.replace_targets)  # a fleet's members joined or left
    registry.register(collector)
    app.extensions["idemdash_metrics"] = registry

    @app.before_request
    def start_timer() -> None:
        g.request_started = time.perf_counter()

    @app.after_request
    def observe(response: Response) -> Response:
        started = g.pop("request_started", None)
        if started is not None and request.endpoint not in (None, "static", "metrics.scrape"):
            # the URL's database (which may have left its fleet since), else the first; none while only fleets
            # are described and none has answered
            database = current_database() or next(iter(all_targets()), "none")
            if collector.alerts_only():  # a fleet: one series per endpoint, not per endpoint and database
                database = ALL_DATABASES
            latency.labels(database, request.endpoint, request.method, str(response.status_code)).observe(
                time.perf_counter() - started
            )
        return response


@bp.get("/metrics")
def scrape() -> Any:
    body = generate_latest(current_app.extensions["idemdash_metrics"])
    return Response(body, mimetype=CONTENT_TYPE_LATEST)
