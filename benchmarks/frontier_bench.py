"""The purge frontier: what a bare batched DELETE of due rows can do on this disk, rows/s against the application's
claim p99, and where the pacer's runs fall on it (docs/benchmarks.md; the runs in
benchmarks/results/frontier-2026-11-28.md).

    python -m benchmarks.frontier_bench curve --pgdata /var/tmp/idemdash-frontier/pgdata
    python -m benchmarks.frontier_bench curve --pgdata … --batch-sizes 500,1000 --pauses 0,5 --levers '' --pacer-runs 0
    python -m benchmarks.frontier_bench idle --pgdata /var/tmp/idemdash-frontier-idle/pgdata --rounds 3

**curve**: the data of ``benchmarks/pacer_bench.py`` (``--keys`` 1,000,000 of which ``--due`` 882,439 expired, the
recommended indexes, the inbox and outbox partitioned by day) and its client (two threads claiming and marking fresh
keys through the reference functions in a closed loop, autocommit). For each point: a CHECKPOINT, the clients
started, ``--warmup-seconds`` (2), ``--before-seconds`` (4) of claims without a purge ("before"), then batches until
``--rows`` rows (120,000) are gone or ``--max-seconds`` (8) have passed ("during"). A batch is one bare statement
(``frontier_delete_pages`` in ``queries/workload/benchmark.sql``): the due keys on the next heap pages (heap order,
as the product purges a table this due), deleted and committed, nothing else: no ``SKIP LOCKED``, no progress row,
no recheck, no duty cycle, a fixed ``pause`` after each. The grid is ``--batch-sizes`` × ``--pauses`` with the
server's settings; ``--levers`` adds points with the purge session's own settings (``synchronous_commit=off``,
``wal_compression=pglz``; a superuser may set both for its session). The due keys are written again when the pages
run out. Then ``--partition-rows`` (500,000) inbox rows of a day past retention, dropped with their partition by an
``idemdash`` purge run of the inbox while the clients claim: the deployment's choice. Then ``--pacer-runs`` rounds of
the product's own purge of the keys (the defaults, then ``PURGE_LATENCY_BUDGET=off``; ``--pacer-seconds`` of time
budget each, the due keys written again before each; ``--pacer-set NAME=VALUE`` changes a setting in both),
alternating, so the machine's load falls on both alike.

**idle**: no application at all. ``--keys`` 2,000,000 of which ``--due`` 20,000 expired; ``--rounds`` rounds of one
``idemdash purge --table keys`` run (in a process of its own, as the command runs it) with the defaults and one with
``PURGE_LATENCY_BUDGET=off``, alternating, the due keys written again before each: the wall time of each.

Each line carries the 1-minute load average at its start and end (the machine may be shared); ``uptime`` closes the
output.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from benchmarks import purge_data
from benchmarks.pacer_bench import Client, describe_pacing
from benchmarks.partition_bench import _fill as fill_inbox
from benchmarks.purge_bench import SCHEMA, STATUS_TYPE, build_indexes, fresh_schema, key_indexes, start_embedded
from idemdash.core import settings
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_time_partitions
from idemdash.queries.migrate import migrate
from idemdash.queries.purge_batches import heap_shape
from idemdash.queries.workload import benchmark

TABLES = Tables(schema=SCHEMA)
KEYS = f"{SCHEMA}.{TABLES.keys}"


def load1() -> str:
    return purge_data.load_average().split(",")[0]


class Data:
    """The keys table and where the next bare batch starts; the due keys written again when they run out."""

    def __init__(self, conn: psycopg.Connection, total: int, due: int, partitioned: bool) -> None:
        self.conn, self.total, self.due = conn, total, due
        fresh = conn.execute("SELECT to_regclass(%s)", (KEYS,)).fetchone()[0] is None
        if fresh:
            fresh_schema(conn, TABLES, partitioned=partitioned)
            purge_data.load_keys(conn, TABLES, STATUS_TYPE, total, due)
            build_indexes(conn, TABLES, key_indexes(due=True))
        migrate(conn)  # idemdash's own schema as this checkout has it (the data may be older)
        self.restore()

    def restore(self) -> None:
        conn = self.conn
        conn.execute(f"VACUUM {KEYS}")
        purge_data.load_keys(conn, TABLES, STATUS_TYPE, self.total, self.due, first=0, last=self.due)
        conn.execute(f"DELETE FROM {KEYS} WHERE idempotency_scope = 'bench_client'")
        purge_data.vacuum(conn, TABLES.identifiers()["keys"])
        shape = heap_shape(conn, KEYS)
        self.rows_per_page = shape.rows_per_page or 1.0
        # the due keys were written first: they fill the heap's first pages (a little past, to be sure)
        self.due_pages = int(self.due / self.rows_per_page * 1.02) + 1
        self.page = 0

    def pages_for(self, rows: int) -> int:
        return max(1, round(rows / self.rows_per_page))


def with_clients(url: str, args: argparse.Namespace, work) -> dict[str, Any]:
    """Clients claiming throughout: the before window, then ``work()`` (which returns its own start and end)."""
    clients = [Client(url, TABLES, n) for n in range(args.clients)]
    for c in clients:
        c.start()
    time.sleep(args.warmup_seconds)
    load_start = load1()
    t0 = time.monotonic()
    time.sleep(args.before_seconds)
    before = (t0, time.monotonic())
    outcome = work()
    load_end = load1()
    for c in clients:
        c.stop.set()
    for c in clients:
        c.join(10)
    during = (outcome["started"], max(outcome["ended"], outcome["started"] + args.least_window))
    p = {}
    for name, (a, b) in (("before", before), ("during", during)):
        samples = [s for c in clients for s in c.window(a, b)]
        p[name] = (purge_data.percentile(samples, 50) * 1000, purge_data.percentile(samples, 99) * 1000, len(samples))
    return {**outcome, "p": p, "load": f"{load_start} → {load_end}"}


def bare_delete(
    url: str, data: Data, batch: int, pause_ms: float, session: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    """Bare batches on a connection of their own until ``--rows`` are gone or ``--max-seconds`` pass."""
    with psycopg.connect(url, autocommit=True, application_name="frontier-purge") as conn:
        for name, value in session.items():
            benchmark.set_session_setting(conn, name, value)
        pages = data.pages_for(batch)
        wal = purge_data.wal_lsn(conn)
        rows = 0
        started = time.monotonic()
        while rows < args.rows and time.monotonic() - started < args.max_seconds:
            if data.page >= data.due_pages:
                break
            rows += benchmark.delete_due_pages(conn, TABLES, data.page, pages)
            data.page += pages
            if pause_ms:
                time.sleep(pause_ms / 1000)
        ended = time.monotonic()
        wal = purge_data.wal_lsn(conn) - wal
    return {"rows": rows, "started": started, "ended": ended, "wal": wal}


def describe(label: str, batch: str, pause: str, m: dict[str, Any]) -> str:
    p = m["p"]
    seconds = max(m["ended"] - m["started"], 1e-6)
    ratio = p["during"][1] / p["before"][1]
    wal = f"{m['wal'] / max(m['rows'], 1):.0f} B" if m.get("wal") is not None else "-"
    return (
        f"| {label} | {batch} | {pause} | {m['rows']:,} | {m['rows'] / seconds:,.0f} | {wal} | "
        f"{p['before'][0]:.2f} / {p['before'][1]:.2f} ms ({p['before'][2]:,}) | "
        f"{p['during'][0]:.2f} / {p['during'][1]:.2f} ms ({p['during'][2]:,}) | **{ratio:.2f}x** | "
        f"{m.get('pacer', '')} | {m['load']} |"
    )


HEADER = (
    "| what | batch | pause | rows | rows/s | WAL per row | claim p50 / p99 before | during | p99 during / "
    "before | pacer (what the run recorded) | load, 1 min (start → end) |"
)
RULE = "|---|---:|---:|---:|---:|---:|---|---|---:|---|---|"


def pacer_run(url: str, data: Data, overrides: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    config = settings.load({f"IDEMDASH_{k}": v for k, v in overrides.items()}, DATABASE_URL=url, APP_SCHEMA=SCHEMA)

    def work() -> dict[str, Any]:
        with psycopg.connect(url, autocommit=True) as conn:
            wal = purge_data.wal_lsn(conn)
        result, started, ended, _burst = purge_data.run_purge_in_process(config)
        with psycopg.connect(url, autocommit=True) as conn:
            wal = purge_data.wal_lsn(conn) - wal
            pacing = benchmark.get_run_pacing(conn, result.run_id)
        return {"rows": result.rows, "started": started, "ended": ended, "wal": wal, "pacing": pacing, "config": config}

    m = with_clients(url, args, work)
    m["pacer"] = describe_pacing(m["pacing"])
    return m


def partition_point(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """One inbox day of ``--partition-rows`` rows past retention, dropped with its partition by an idemdash run."""
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    day = today - timedelta(days=35)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {SCHEMA}.{TABLES.inbox}")
        create_time_partitions(conn, TABLES, "inbox", day - timedelta(days=1), today + timedelta(days=2))
        fill_inbox(conn, TABLES, args.partition_rows, day, "old")
        purge_data.vacuum(conn, TABLES.identifiers()["inbox"])
    config = settings.load({}, DATABASE_URL=url, APP_SCHEMA=SCHEMA)

    def work() -> dict[str, Any]:
        with psycopg.connect(url, autocommit=True) as conn:
            wal = purge_data.wal_lsn(conn)
        result, started, ended, _burst = purge_data.run_purge_in_process(config, table="inbox")
        assert result.partitions_dropped >= 1 and result.rows == args.partition_rows, result
        with psycopg.connect(url, autocommit=True) as conn:
            wal = purge_data.wal_lsn(conn) - wal
        return {"rows": result.rows, "started": started, "ended": ended, "wal": wal}

    return with_clients(url, args, work)


def curve(url: str, args: argparse.Namespace, out) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
        out(f"`uptime` at the start: {purge_data.uptime()}")
        data = Data(conn, args.keys, args.due, partitioned=True)
        out(
            f"{args.keys:,} keys, {args.due:,} expired ({data.rows_per_page:.1f} rows a heap page); {args.clients} "
            f"client threads; each point at most {args.rows:,} rows or {args.max_seconds:g} s"
        )
        out("")
        out(HEADER)
        out(RULE)
        points: list[tuple[str, int, float, dict[str, str]]] = [
            ("bare DELETE", b, p, {}) for b in args.batch_sizes for p in args.pauses
        ]
        for lever in filter(None, args.levers):
            name, _, value = lever.partition("=")
            points += [(f"bare DELETE, session `{lever}`", b, p, {name: value}) for b, p in args.lever_points]
        for label, batch, pause, session in points:
            if data.page + data.pages_for(args.rows) >= data.due_pages:
                data.restore()
            conn.execute("CHECKPOINT")
            m = with_clients(url, args, lambda b=batch, p=pause, s=session: bare_delete(url, data, b, p, s, args))
            out(describe(label, f"{batch:,}", f"{pause:g} ms", m))
        if args.partition_rows:
            conn.execute("CHECKPOINT")
            m = partition_point(url, args)
            out(describe("partitioned inbox: a day's partition dropped (`idemdash purge --table inbox`)", "-", "-", m))
        for round_ in range(args.pacer_runs):
            for label, overrides in (
                ("pacer: the defaults", {}),
                ("pacer: `PURGE_LATENCY_BUDGET=off` (duty cycle alone)", {"PURGE_LATENCY_BUDGET": "off"}),
            ):
                data.restore()
                given = dict(item.split("=", 1) for item in args.pacer_set)
                m = pacer_run(
                    url, data, {"PURGE_TIME_BUDGET_SECONDS": str(args.pacer_seconds), **given, **overrides}, args
                )
                c = m["config"]
                out(
                    describe(
                        f"{label}, round {round_ + 1}",
                        f"{c.purge_batch_size:,}",
                        f"{c.purge_pause_ms} ms, duty {c.purge_duty_cycle:g} %",
                        m,
                    )
                )
    out("")
    out(f"`uptime` at the end: {purge_data.uptime()}")


def idle(url: str, args: argparse.Namespace, out) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
        out(f"`uptime` at the start: {purge_data.uptime()}")
        data = Data(conn, args.keys, args.due, partitioned=False)
        out(f"{args.keys:,} keys, {args.due:,} expired; no application; one run of the keys' purge each")
        out("")
        out(
            "| round | settings | rows | wall time | rows/s | pacer (what the run recorded) "
            "| load, 1 min (start → end) |"
        )
        out("|---:|---|---:|---:|---:|---|---|")
        times: dict[str, list[float]] = {}
        for round_ in range(args.rounds):
            for label, overrides in (("defaults", {}), ("`PURGE_LATENCY_BUDGET=off`", {"PURGE_LATENCY_BUDGET": "off"})):
                data.restore()
                config = settings.load(
                    {f"IDEMDASH_{k}": v for k, v in overrides.items()}, DATABASE_URL=url, APP_SCHEMA=SCHEMA
                )
                load_start = load1()
                result, started, ended, _burst = purge_data.run_purge_in_process(config)
                seconds = ended - started
                times.setdefault(label, []).append(seconds)
                pacing = benchmark.get_run_pacing(conn, result.run_id)
                out(
                    f"| {round_ + 1} | {label} | {result.rows:,} | {seconds:.2f} s | {result.rows / seconds:,.0f} | "
                    f"{describe_pacing(pacing)} | {load_start} → {load1()} |"
                )
        a, b = (sorted(v)[len(v) // 2] for v in times.values())
        ratios = [d / o for d, o in zip(*times.values(), strict=True)]
        out("")
        out(
            f"median wall time: defaults {a:.2f} s, budget off {b:.2f} s: **{a / b:.2f}x**; "
            "per round (defaults / off): " + ", ".join(f"{r:.2f}x" for r in ratios)
        )
    out(f"`uptime` at the end: {purge_data.uptime()}")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("curve", "idle"))
    parser.add_argument("--database-url", default="", help=f"use this server (tables go into schema {SCHEMA!r})")
    parser.add_argument("--pgdata", type=Path, default=None, help="the embedded server's data directory")
    parser.add_argument("--server-set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--keys", type=int, default=None)
    parser.add_argument("--due", type=int, default=None)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--warmup-seconds", type=float, default=2.0)
    parser.add_argument("--before-seconds", type=float, default=4.0)
    parser.add_argument(
        "--least-window",
        type=float,
        default=2.0,
        help="the 'during' window lasts at least this long (a partition drop takes milliseconds)",
    )
    parser.add_argument("--rows", type=int, default=120_000)
    parser.add_argument("--max-seconds", type=float, default=8.0)
    parser.add_argument("--batch-sizes", type=_ints, default=[250, 500, 1000, 2000, 4000])
    parser.add_argument("--pauses", type=lambda s: [float(x) for x in s.split(",")], default=[0.0, 5.0, 20.0])
    parser.add_argument(
        "--levers", type=lambda s: s.split(","), default=["synchronous_commit=off", "wal_compression=pglz"]
    )
    parser.add_argument(
        "--lever-points",
        type=lambda s: [tuple(int(v) for v in x.split(":")) for x in s.split(",")],
        default=[(1000, 0), (1000, 5), (4000, 5)],
        help="batch:pause_ms of each lever's points",
    )
    parser.add_argument("--partition-rows", type=int, default=500_000)
    parser.add_argument("--pacer-runs", type=int, default=3)
    parser.add_argument("--pacer-seconds", type=int, default=8)
    parser.add_argument(
        "--pacer-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an idemdash setting (without IDEMDASH_) for both arms of the pacer's rounds",
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.keys is None:
        args.keys = 1_000_000 if args.mode == "curve" else 2_000_000
    if args.due is None:
        args.due = 882_439 if args.mode == "curve" else 20_000
    logging.basicConfig(level=logging.WARNING)

    def out(line: str) -> None:
        print(line, flush=True)

    tmp = None
    url, stop = args.database_url, None
    if not url:
        pgdata = args.pgdata
        if pgdata is None:
            tmp = tempfile.TemporaryDirectory(prefix="idemdash-frontier-")
            pgdata = Path(tmp.name) / "pgdata"
        url, stop = start_embedded(pgdata, args.server_set, out)
    try:
        (curve if args.mode == "curve" else idle)(url, args, out)
    finally:
        if stop is not None:
            stop()
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
