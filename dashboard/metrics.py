"""`GET /metrics` in the Prometheus text format (prometheus_client).

The database numbers are read at most once per IDEMDASH_METRICS_CACHE_SECONDS
per worker, however often Prometheus (or several of them) scrape, so a scrape
never loads the application's tables.

Request counts and latencies add up across gunicorn's workers: with ``PROMETHEUS_MULTIPROC_DIR`` set (``idemdash
serve`` sets it for its workers) each worker writes its histogram to files there and a scrape, whichever worker
answers it, sums every worker's files, including those of workers that have exited, so a counter never goes
backwards between scrapes. Samples are summed per label set. Every sample names its database (``database``:
the name in IDEMDASH_CONFIG, ``default`` without it). Without it (one process: ``flask run``, the demo, the tests) the process keeps them in memory.
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

from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.dashboard.databases import plain_endpoint
from idemdash.dashboard.targets import all_targets, current_database
from idemdash.queries import metrics, overview, rollups, snapshots
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.rollups import read_library_states
from idemdash.queries.target import Target

bp = Blueprint("metrics", __name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

# name: (help, labels besides ``database``)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "idemdash_database_up": ("1 when the last read of the database succeeded.", ()),
    "idemdash_stuck_keys": ("Keys in processing whose lease has run out, by scope.", ("scope",)),
    "idemdash_stuck_keys_total": ("Keys in processing whose lease has run out, all scopes.", ()),
    "idemdash_processing_keys": ("Keys in processing, stuck ones included.", ()),
    "idemdash_needs_review_keys": ("Keys an operator holds for review (needs_review), held or hold ended.", ()),
    "idemdash_failed_retryable_keys": ("Keys in failed_retryable.", ()),
    "idemdash_failed_final_keys_24h": ("Keys that became failed_final in the last 24 hours.", ()),
    "idemdash_outbox_pending": ("Outbox rows not yet published.", ()),
    "idemdash_outbox_lag_seconds": ("Age of the oldest pending outbox row (0 when none).", ()),
    "idemdash_inbox_rows_24h": ("Inbox rows recorded in the last 24 hours.", ()),
    "idemdash_purge_last_success_timestamp_seconds": ("When the last successful real purge of each table "
                                                      "finished.", ("table",)),
    "idemdash_purge_last_rows_deleted": ("Rows the last successful real purge of each table deleted.", ("table",)),
    "idemdash_purge_last_run_failed": ("1 when the latest finished real purge run of each table failed.", ("table",)),
    "idemdash_snapshot_last_timestamp_seconds": ("When the scheduler last recorded a metric snapshot (its "
                                                 "heartbeat).", ()),
    "idemdash_profile_rows": ("Rows of a library's tables in each state, by the library's own definition (a "
                              "database of another library's profile; /tables).", ("profile", "table", "state")),
}


# the families /metrics keeps per database with IDEMDASH_METRICS_PER_DATABASE=alerts (auto: past AUTO_ALL databases):
# those deploy/prometheus/idemdash-alerts.yml uses; the request histogram's database label is then "all"
ALERT_FAMILIES = ("idemdash_database_up", "idemdash_stuck_keys_total", "idemdash_outbox_lag_seconds",
                  "idemdash_purge_last_run_failed", "idemdash_purge_last_success_timestamp_seconds",
                  "idemdash_snapshot_last_timestamp_seconds")
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
        held = GaugeMetricFamily("idemdash_worker_connections", WORKER_FAMILIES["idemdash_worker_connections"],
                                 labels=["kind"])
        held.add_metric(["pools"], usage.pool_connections)
        held.add_metric(["background"], usage.background_connections)
        yield held
        yield GaugeMetricFamily("idemdash_worker_open_pools", WORKER_FAMILIES["idemdash_worker_open_pools"],
                                value=usage.open_pools)
        budget = GaugeMetricFamily("idemdash_worker_connection_budget",
                                   WORKER_FAMILIES["idemdash_worker_connection_budget"])
        if usage.budget is not None:
            budget.add_metric([], usage.budget)
        yield budget

    def _read(self) -> list[GaugeMetricFamily]:
        # every family is served, with its help line, even without a sample (no stuck keys): rules and panels
        # that use it can be checked against a quiet database
        families = {name: GaugeMetricFamily(name, doc, labels=["database", *labels])
                    for name, (doc, labels) in FAMILIES.items()}
        targets = self.targets
        alerts_only = self.alerts_only(len(targets))
        for database, target in targets.items():
            for name, labels, value in self._samples(target):
                if alerts_only and name not in ALERT_FAMILIES:
                    continue  # the family stays, with its help line, and no sample
                families[name].add_metric([database, *labels], float("nan") if value is None else value)
        return list(families.values())

    def _samples(self, target: Target) -> list[tuple[str, tuple[str, ...], float | None]]:
        samples: list[tuple[str, tuple[str, ...], float | None]] = []
        try:
            self._database(target, lambda name, labels, value: samples.append((name, labels, value)))
        except Exception:  # an outage must not break the scrape; idemdash_database_up says what happened
            return [("idemdash_database_up", (), 0)]
        samples.append(("idemdash_database_up", (), 1))
        return samples

    @staticmethod
    def _database(target: Target, sample: Callable[[str, tuple[str, ...], float | None], None]) -> None:
        if target.settings["PROFILE"] != DEFAULT_PROFILE:  # another library's tables: their states, nothing else
            with _read(target) as conn:
                read, _ = read_library_states(conn, target.settings)
            if read.found is None:
                raise LookupError(read.problem)
            names = dict(read.found.tables)
            for state, count in read.counts:
                if count is not None:
                    sample("idemdash_profile_rows", (read.found.profile, names[state.table], state.meaning), count)
            return
        tables, lease = target.tables, target.settings["DEFAULT_LEASE_SECONDS"]
        with _read(target) as conn:
            # counts by status and window and the inbox volume: precomputed at scale (queries/rollups.py)
            keys = overview.KeyCounts.combine(overview.count_processing_keys(conn, tables, lease),
                                              rollups.read_value(conn, tables, target.settings, "key_windows"))
            by_scope = metrics.count_stuck_keys_by_scope(conn, tables, lease)
            outbox = overview.get_outbox_backlog(conn, tables)
            inbox = rollups.read_value(conn, tables, target.settings, "inbox_volume")
            purges = metrics.list_purge_status_by_table(conn)
            last_runs = metrics.list_last_purge_run_by_table(conn)
            last_snapshot = snapshots.get_last_snapshot_at(conn)
        for row in by_scope:
            sample("idemdash_stuck_keys", (row.scope,), row.stuck)
        sample("idemdash_stuck_keys_total", (), keys.stuck)
        sample("idemdash_processing_keys", (), keys.processing)
        sample("idemdash_needs_review_keys", (), keys.needs_review)
        sample("idemdash_failed_retryable_keys", (), keys.failed_retryable)
        sample("idemdash_failed_final_keys_24h", (), keys.failed_final_24h)
        sample("idemdash_outbox_pending", (), outbox.pending)
        sample("idemdash_outbox_lag_seconds", (), outbox.lag_seconds or 0.0)
        sample("idemdash_inbox_rows_24h", (), inbox.rows_24h)
        for status in purges:
            if status.last_success_at is not None:
                sample("idemdash_purge_last_success_timestamp_seconds", (status.table_name,),
                       status.last_success_at.timestamp())
            sample("idemdash_purge_last_rows_deleted", (status.table_name,), status.last_rows_deleted)
        for run in last_runs:
            sample("idemdash_purge_last_run_failed", (run.table_name,), 1.0 if run.failed else 0.0)
        # the scheduler's heartbeat: it records a snapshot every IDEMDASH_SNAPSHOT_INTERVAL_SECONDS while it runs
        if last_snapshot is not None:
            sample("idemdash_snapshot_last_timestamp_seconds", (), last_snapshot.timestamp())


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
    latency = Histogram("idemdash_http_request_duration_seconds", "Time to answer a request, by endpoint.",
                        ["database", "endpoint", "method", "status"], registry=None if shared else registry,
                        buckets=LATENCY_BUCKETS)
    collector = DatabaseCollector(app.extensions["idemdash_targets"], float(app.config["METRICS_CACHE_SECONDS"]),
                                  app.extensions["idemdash_pools"], app.config["METRICS_PER_DATABASE"])
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
            latency.labels(database, plain_endpoint(request.endpoint), request.method,
                           str(response.status_code)).observe(time.perf_counter() - started)
        return response


@bp.get("/metrics")
def scrape() -> Any:
    body = generate_latest(current_app.extensions["idemdash_metrics"])
    return Response(body, mimetype=CONTENT_TYPE_LATEST)
