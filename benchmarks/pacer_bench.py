"""What a purge run does to the application's commits, measured as a new user would (docs/benchmarks.md; the runs
in benchmarks/results/pacer-2026-11-27-latency-budget.md).

    python -m benchmarks.pacer_bench --pgdata /var/tmp/idemdash-pacer-bench/pgdata --runs 3
    python -m benchmarks.pacer_bench --pgdata … --runs 3 --set PURGE_LATENCY_BUDGET=off   # the fixed duty cycle
    python -m benchmarks.pacer_bench --pgdata … --runs 1 --server-set wal_compression=pglz  # a server setting

The client is the reference schema's own claim and mark functions (``claim_idempotency_key``, then
``complete_idempotency_key``) on fresh keys, from ``--clients`` threads (2) in a closed loop, each on its own
autocommit connection; a claim's time is its round trip and commit. The data: ``--keys`` keys (1,000,000) of which
``--due`` (882,439) have expired, with the recommended indexes, written as an application writes them
(``benchmarks/purge_data.py``). The project's default settings, except what ``--set NAME=VALUE`` changes
(an ``IDEMDASH_`` setting without its prefix).

Each run: the due keys written again where the last run purged them, VACUUM and CHECKPOINT, the clients started,
``--warmup-seconds`` (3), ``--before-seconds`` (15) of claims without a purge ("before"), then one purge run in a
process of its own ("during", its start to its end). It prints rows/s, the claims' p50 / p99 in both windows
(nearest rank; their count in brackets), p99 during / before, the load average at the start and end of the run,
and what the run's pacer recorded (its probe's idle baseline and p99 during the run, the backoffs).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from benchmarks import purge_data
from benchmarks.purge_bench import SCHEMA, STATUS_TYPE, build_indexes, fresh_schema, key_indexes, start_embedded
from idemdash.core import settings
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key
from idemdash.queries.workload import benchmark


class Client(threading.Thread):
    """Claims a fresh key and marks it done, again and again, timing each claim (autocommit: one round trip and
    its commit)."""

    def __init__(self, url: str, tables: Tables, n: int, options: str = "") -> None:
        super().__init__(name=f"client-{n}", daemon=True)
        self.url, self.tables, self.n, self.options = url, tables, n, options
        self.samples: list[tuple[float, float]] = []  # (when, seconds)
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(
            self.url,
            autocommit=True,
            application_name=f"pacer-bench-client-{self.n}",
            **({"options": self.options} if self.options else {}),
        ) as conn:
            while not self.stop.is_set():
                key = str(uuid.uuid4())
                t0 = time.monotonic()
                claim = claim_key(conn, self.tables, "bench_client", key, "h", f"client-{self.n}", lock_seconds=60)
                self.samples.append((t0, time.monotonic() - t0))
                complete_key(
                    conn, self.tables, "bench_client", key, "order", None, {"ok": True}, attempt=claim.attempt_count
                )

    def window(self, start: float, end: float) -> list[float]:
        return [seconds for when, seconds in self.samples if start <= when < end]


# The purge's backends, by their application name (--purge-nice).
PURGE_APPLICATION = "pacer-bench-purge"


class Watcher(threading.Thread):
    """Beside the run, on a connection of its own: counts what the clients' active backends wait for, every 2 ms
    (``--sample-waits``; the sampling costs the clients a little), and renices the purge's backends to ``nice``
    (``--purge-nice``: the server must run on this machine; a diagnostic of CPU priority, not a setting)."""

    def __init__(self, url: str, sample: bool, nice: int | None) -> None:
        super().__init__(name="pacer-bench-watcher", daemon=True)
        self.url, self.sample, self.nice = url, sample, nice
        self.counts: Counter[str] = Counter()
        self.reniced: set[int] = set()
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True, application_name="pacer-bench-watcher") as conn:
            while not self.stop.is_set():
                if self.sample:
                    self.counts.update(benchmark.list_client_waits(conn))
                if self.nice is not None:
                    for pid in benchmark.list_backends_of(conn, PURGE_APPLICATION):
                        if pid not in self.reniced:
                            os.setpriority(os.PRIO_PROCESS, pid, self.nice)
                            self.reniced.add(pid)
                self.stop.wait(0.002 if self.sample else 0.05)

    def summary(self) -> str:
        total = sum(self.counts.values())
        return ", ".join(f"{w} {100 * n / total:.0f} %" for w, n in self.counts.most_common(5)) if total else "-"


def _watch(url: str, args: argparse.Namespace) -> Watcher | None:
    if not args.sample_waits and args.purge_nice is None:
        return None
    watcher = Watcher(url, args.sample_waits, args.purge_nice)
    watcher.start()
    return watcher


def _stop(watcher: Watcher | None) -> Watcher | None:
    if watcher is not None:
        watcher.stop.set()
        watcher.join(10)
    return watcher


def describe_pacing(pacing: Any) -> str:
    if pacing is None or pacing.probes is None:
        return "-"
    seen = getattr(pacing, "app_backends", None)  # None: a version whose pacer timed a commit probe
    ms = lambda v: "-" if v is None else f"{v:.1f} ms"  # noqa: E731
    if seen is None:
        looked = (
            f"probe p99 {ms(pacing.probe_baseline_ms)} idle, {ms(pacing.probe_p99_ms)} during "
            f"({pacing.probes:,} probes)"
        )
    elif seen == 0:
        looked = f"saw no application in {pacing.probes:,} looks"
    else:
        looked = (
            f"saw up to {seen} application statements at once in {pacing.probes:,} looks, their waits (p90) "
            f"{ms(pacing.probe_baseline_ms)} between batches, {ms(pacing.probe_p99_ms)} during"
        )
    locks = f" ({pacing.lock_backoffs} for locks)" if seen else ""
    return (
        f"{looked}; {pacing.backoffs} backoffs{locks}; ended at {pacing.final_batch_size:,} rows, "
        f"{pacing.final_duty_cycle:.0f} %"
    )


def _restore(conn: psycopg.Connection, tables: Tables, total: int, due: int, fresh: bool) -> None:
    if fresh:
        fresh_schema(conn, tables)
        purge_data.load_keys(conn, tables, STATUS_TYPE, total, due)
        build_indexes(conn, tables, key_indexes(due=True))
    else:  # the due keys again where the last run purged them (the live ones are still there)
        conn.execute(f"VACUUM {SCHEMA}.{tables.keys}")
        purge_data.load_keys(conn, tables, STATUS_TYPE, total, due, first=0, last=due)
    conn.execute(f"DELETE FROM {SCHEMA}.{tables.keys} WHERE idempotency_scope = 'bench_client'")
    purge_data.vacuum(conn, tables.identifiers()["keys"])
    conn.execute("CHECKPOINT")


def one_run(url: str, tables: Tables, config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    clients = [Client(url, tables, n, args.client_options) for n in range(args.clients)]
    for c in clients:
        c.start()
    time.sleep(args.warmup_seconds)
    load_start = purge_data.load_average()
    t0 = time.monotonic()
    watching = _watch(url, args) if args.sample_waits else None
    time.sleep(args.before_seconds)
    waits_before = _stop(watching)
    before = (t0, time.monotonic())
    watching = _watch(url, args)
    options = " ".join(
        o
        for o in (args.purge_options, f"-c application_name={PURGE_APPLICATION}" if args.purge_nice is not None else "")
        if o
    )
    result, started, ended, _burst = purge_data.run_purge_in_process(config, pgoptions=options)
    waits_during = _stop(watching)
    load_end = purge_data.load_average()
    for c in clients:
        c.stop.set()
    for c in clients:
        c.join(10)
    windows = {
        "before": [s for c in clients for s in c.window(*before)],
        "during": [s for c in clients for s in c.window(started, ended)],
    }
    p = {
        k: (purge_data.percentile(v, 50) * 1000, purge_data.percentile(v, 99) * 1000, len(v))
        for k, v in windows.items()
    }
    with psycopg.connect(url) as conn:
        pacing = benchmark.get_run_pacing(conn, result.run_id)
    return {
        "result": result,
        "seconds": ended - started,
        "p": p,
        "load": (load_start, load_end),
        "pacing": pacing,
        "waits": (waits_before, waits_during),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="", help=f"use this server (tables go into schema {SCHEMA!r})")
    parser.add_argument("--pgdata", type=Path, default=None, help="the embedded server's data directory")
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--due", type=int, default=882_439)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--warmup-seconds", type=float, default=3.0)
    parser.add_argument("--before-seconds", type=float, default=15.0)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an idemdash setting (without IDEMDASH_) for the purge; repeatable",
    )
    parser.add_argument(
        "--server-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting for the embedded server (wal_compression=pglz, say); repeatable",
    )
    parser.add_argument(
        "--purge-options",
        default="",
        metavar="'-c NAME=VALUE ...'",
        help="libpq options for the purge's connections (PGOPTIONS), to test a session setting",
    )
    parser.add_argument(
        "--client-options", default="", metavar="'-c NAME=VALUE ...'", help="libpq options for the clients' connections"
    )
    parser.add_argument(
        "--sample-waits",
        action="store_true",
        help="print what the clients' backends waited for before and during each run (sampled)",
    )
    parser.add_argument(
        "--purge-nice",
        type=int,
        default=None,
        metavar="N",
        help="renice the purge's backends to N (a server on this machine): is the tail CPU?",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    def out(line: str) -> None:
        print(line, flush=True)

    tmp = None
    url = args.database_url
    stop = None
    if not url:
        pgdata = args.pgdata
        if pgdata is None:
            tmp = tempfile.TemporaryDirectory(prefix="idemdash-pacer-bench-")
            pgdata = Path(tmp.name) / "pgdata"
        url, stop = start_embedded(pgdata, args.server_set, out)
    try:
        given = dict(item.split("=", 1) for item in args.set)  # parsed as the environment's values are
        config = settings.load(
            {f"IDEMDASH_{k.strip()}": v.strip() for k, v in given.items()}, DATABASE_URL=url, APP_SCHEMA=SCHEMA
        )
        tables = Tables(schema=SCHEMA)
        with psycopg.connect(url, autocommit=True) as conn:
            out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
            out(
                f"settings: batch {config.purge_batch_size}, least pause {config.purge_pause_ms} ms, duty cycle "
                f"{config.purge_duty_cycle} %, latency budget {config.purge_latency_budget or 'off'}; "
                f"{args.clients} client threads"
            )
            out("")
            out(
                "| run | rows deleted | rows/s | claim p50 / p99 before | during | p99 ratio | pacer: what the run "
                "recorded | load average (start → end) |"
            )
            out("|---|---:|---:|---|---|---:|---|---|")
            loaded = False
            waits: list[str] = []
            for run in range(args.runs):
                fresh = (
                    not loaded
                    and conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.{tables.keys}",)).fetchone()[0] is None
                )
                _restore(conn, tables, args.keys, args.due, fresh)
                loaded = True
                m = one_run(url, tables, config, args)
                r, p, pacing = m["result"], m["p"], m["pacing"]
                recorded = describe_pacing(pacing)
                out(
                    f"| {run + 1} | {r.rows:,} | {r.rows / m['seconds']:,.0f} | "
                    f"{p['before'][0]:.2f} / {p['before'][1]:.2f} ms ({p['before'][2]:,}) | "
                    f"{p['during'][0]:.2f} / {p['during'][1]:.2f} ms ({p['during'][2]:,}) | "
                    f"**{p['during'][1] / p['before'][1]:.2f}x** | {recorded} | {m['load'][0]} → {m['load'][1]} |"
                )
                before_w, during_w = m["waits"]
                if args.sample_waits and before_w is not None and during_w is not None:
                    waits.append(
                        f"run {run + 1}: clients' backends before: {before_w.summary()}; during: {during_w.summary()}"
                    )
                if during_w is not None and args.purge_nice is not None:
                    waits.append(
                        f"run {run + 1}: the purge's backends {sorted(during_w.reniced)} at nice {args.purge_nice}"
                    )
        out("")
        for line in waits:
            out(line + "  ")
        out(f"`uptime` at the end: {purge_data.uptime()}")
    finally:
        if stop is not None:
            stop()
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
