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
from collections.abc import Iterator, Mapping
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from idemdash.dashboard import metric_samples
from idemdash.dashboard.targets import all_targets, app_settings, current_database
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.target import Target

bp = Blueprint("metrics", __name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

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
        """Only metric_samples.ALERT_FAMILIES per database (IDEMDASH_METRICS_PER_DATABASE)."""
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
            name: GaugeMetricFamily(name, doc, labels=["database", *labels])
            for name, (doc, labels) in metric_samples.FAMILIES.items()
        }
        targets = self.targets
        alerts_only = self.alerts_only(len(targets))
        for database, target in targets.items():
            for name, labels, value in self._samples(target, alerts_only):
                if alerts_only and name not in metric_samples.ALERT_FAMILIES:
                    continue  # the family stays, with its help line, and no sample
                families[name].add_metric([database, *labels], value)
        return list(families.values())

    def _samples(self, target: Target, alerts_only: bool) -> list[tuple[str, tuple[str, ...], float]]:
        samples: list[tuple[str, tuple[str, ...], float]] = []

        def sample(name: str, labels: tuple[str, ...], value: float | None) -> None:
            if value is not None:  # not recorded (by this library): no sample, never 0
                samples.append((name, labels, value))

        try:
            metric_samples.database_samples(target, sample, alerts_only)
        except Exception:  # an outage must not break the scrape; idemdash_database_up says what happened
            return [("idemdash_database_up", (), 0)]
        samples.append(("idemdash_database_up", (), 1))
        return samples


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
