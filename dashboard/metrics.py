"""`GET /metrics` in the Prometheus text format (prometheus_client).

The database numbers are read at most once per IDEMDASH_METRICS_CACHE_SECONDS
per worker, however often Prometheus (or several of them) scrape, so a scrape
never loads the application's tables.

Request counts and latencies add up across gunicorn's workers: with ``PROMETHEUS_MULTIPROC_DIR`` set (``idemdash
serve`` sets it for its workers) each worker writes its histogram to files there and a scrape, whichever worker
answers it, sums every worker's files, including those of workers that have exited, so a counter never goes
backwards between scrapes. Samples are summed per label set, so a label added later (which database) needs no
change here. Without it (one process: ``flask run``, the demo, the tests) the process keeps them in memory.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Iterator

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from queries.target import Target
from queries import metrics as qm
from queries import overview as qo
from queries import rollups as qr
from queries import snapshots as qs

bp = Blueprint("metrics", __name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class DatabaseCollector(Collector):
    """Reads the headline numbers through the app's pool, cached for ``ttl`` seconds."""

    def __init__(self, db: Target, lease_seconds: int, ttl: float) -> None:
        self.db = db
        self.lease_seconds = lease_seconds
        self.ttl = ttl
        self._lock = threading.Lock()
        self._cached: tuple[float, list[GaugeMetricFamily]] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached[0] > self.ttl:
                self._cached = (time.monotonic(), self._read())
            yield from self._cached[1]

    def _read(self) -> list[GaugeMetricFamily]:
        up = GaugeMetricFamily("idemdash_database_up", "1 when the last read of the database succeeded.")
        try:
            families = self._families()
        except Exception:  # an outage must not break the scrape; idemdash_database_up says what happened
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        return [up, *families]

    def _families(self) -> list[GaugeMetricFamily]:
        tables = self.db.tables
        with self.db.read() as conn:
            # counts by status and window and the inbox volume: precomputed at scale (dashboard/rollups.py)
            keys = qo.KeyCounts.combine(qo.count_processing_keys(conn, tables, self.lease_seconds),
                                        qr.read_value(conn, tables, self.db.settings, "key_windows"))
            by_scope = qm.count_stuck_keys_by_scope(conn, tables, self.lease_seconds)
            outbox = qo.get_outbox_backlog(conn, tables)
            inbox = qr.read_value(conn, tables, self.db.settings, "inbox_volume")
            purges = qm.list_purge_status_by_table(conn)
            last_runs = qm.list_last_purge_run_by_table(conn)
            last_snapshot = qs.get_last_snapshot_at(conn)
        stuck = GaugeMetricFamily("idemdash_stuck_keys", "Keys in processing whose lease has run out, by scope.",
                                  labels=["scope"])
        for row in by_scope:
            stuck.add_metric([row.scope], row.stuck)
        out = [stuck]

        def gauge(name: str, doc: str, value: float | None) -> None:
            family = GaugeMetricFamily(name, doc)
            family.add_metric([], float("nan") if value is None else value)
            out.append(family)

        gauge("idemdash_stuck_keys_total", "Keys in processing whose lease has run out, all scopes.", keys.stuck)
        gauge("idemdash_processing_keys", "Keys in processing, stuck ones included.", keys.processing)
        gauge("idemdash_needs_review_keys", "Keys an operator holds for review (needs_review), held or hold ended.",
              keys.needs_review)
        gauge("idemdash_failed_retryable_keys", "Keys in failed_retryable.", keys.failed_retryable)
        gauge("idemdash_failed_final_keys_24h", "Keys that became failed_final in the last 24 hours.",
              keys.failed_final_24h)
        gauge("idemdash_outbox_pending", "Outbox rows not yet published.", outbox.pending)
        gauge("idemdash_outbox_lag_seconds", "Age of the oldest pending outbox row (0 when none).",
              outbox.lag_seconds or 0.0)
        gauge("idemdash_inbox_rows_24h", "Inbox rows recorded in the last 24 hours.", inbox.rows_24h)
        last_success = GaugeMetricFamily("idemdash_purge_last_success_timestamp_seconds",
                                         "When the last successful real purge of each table finished.",
                                         labels=["table"])
        last_rows = GaugeMetricFamily("idemdash_purge_last_rows_deleted",
                                      "Rows the last successful real purge of each table deleted.", labels=["table"])
        for row in purges:
            if row.last_success_at is not None:
                last_success.add_metric([row.table_name], row.last_success_at.timestamp())
            last_rows.add_metric([row.table_name], row.last_rows_deleted)
        last_failed = GaugeMetricFamily("idemdash_purge_last_run_failed",
                                        "1 when the latest finished real purge run of each table failed.",
                                        labels=["table"])
        for run in last_runs:
            last_failed.add_metric([run.table_name], 1.0 if run.failed else 0.0)
        out += [last_success, last_rows, last_failed]
        # the scheduler's heartbeat: it records a snapshot every IDEMDASH_SNAPSHOT_INTERVAL_SECONDS while it runs
        if last_snapshot is not None:
            gauge("idemdash_snapshot_last_timestamp_seconds",
                  "When the scheduler last recorded a metric snapshot (its heartbeat).", last_snapshot.timestamp())
        return out


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
                        ["endpoint", "method", "status"], registry=None if shared else registry,
                        buckets=LATENCY_BUCKETS)
    registry.register(DatabaseCollector(app.extensions["idemdash_target"], app.config["DEFAULT_LEASE_SECONDS"],
                                        float(app.config["METRICS_CACHE_SECONDS"])))
    app.extensions["idemdash_metrics"] = registry

    @app.before_request
    def start_timer() -> None:
        g.request_started = time.perf_counter()

    @app.after_request
    def observe(response: Response) -> Response:
        started = g.pop("request_started", None)
        if started is not None and request.endpoint not in (None, "static", "metrics.scrape"):
            latency.labels(request.endpoint, request.method, str(response.status_code)).observe(
                time.perf_counter() - started)
        return response


@bp.get("/metrics")
def scrape() -> Any:
    body = generate_latest(current_app.extensions["idemdash_metrics"])
    return Response(body, mimetype=CONTENT_TYPE_LATEST)
