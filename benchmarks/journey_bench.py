"""The journey (GET /api/v1/journey) across K databases, one service each, in one embedded PostgreSQL.

    python -m benchmarks.journey_bench                        # 200 databases + 1 hung host, 100 journeys
    python -m benchmarks.journey_bench --databases 50 200 --hung 1 --runs 100 --threads 16

Each database is a clone of one with idemdash's schema, the reference tables and the recommended indexes. The first
(`shop`) is the producer: keys and outbox rows of `payment.captured`; the next three consume them on their own
reference inbox, the third missing the last message; the others are services with empty tables, asked like the rest.
A hung host (a socket that accepts and never answers) comes first in the file. The app answers in process (Flask's
test client: server time, no HTTP) with the default fan-out threads and connection budget; the routes are learned
once first, then ``--runs`` journeys of a key (two rounds) alternate with journeys of a message id (one).
Connections: the most
sessions of the journey's application name seen at once (sampled every 20 ms), and the worker's budget in use.
Percentiles are nearest-rank. The report is Markdown.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from benchmarks.databases_bench import HungHost, build_template, clone, percentile, write_config
from idemdash.dashboard import create_app, targets
from idemdash.dashboard.journey_reads import APPLICATION_NAME
from tests.journey_world import MINUTE, consume, produce


def seed(urls: list[str]) -> list[tuple[str, str]]:
    """Twenty payments from the producer, each consumed by three consumers but the last (missing at the third)."""
    asked = []
    with psycopg.connect(urls[0], autocommit=True) as shop:
        consumers = [psycopg.connect(url, autocommit=True) for url in urls[1:4]]
        for i in range(20):
            mid = produce(shop, "checkout", f"order-{i}", "payment.captured", ago=MINUTE * (30 - i))
            for n, conn in enumerate(consumers):
                if i < 19 or n < 2:
                    consume(conn, f"consumer{n}", mid, ago=MINUTE * (30 - i) - timedelta(seconds=2))
            asked.append((f"checkout/order-{i}", mid))
        for conn in consumers:
            conn.close()
    return asked


def sample(server_dsn: str, stop: threading.Event, peak: list[int]) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        while not stop.is_set():
            (n,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (APPLICATION_NAME,)
            ).fetchone()
            peak[0] = max(peak[0], n)
            time.sleep(0.02)


def measure(server_dsn: str, config: str, asked: list[tuple[str, str]], runs: int, threads: int) -> dict:
    app = create_app({"CONFIG": config, "SECRET_KEY": "benchmark", "FLEET_REFRESH_THREADS": threads})
    client = app.test_client()
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=sample, args=(server_dsn, stop, peak), daemon=True)
    try:
        started = time.monotonic()
        routes = client.get("/api/v1/routes").get_json()
        learn_ms = (time.monotonic() - started) * 1000
        sampler.start()
        times: dict[str, list[float]] = {"key": [], "message id": []}
        late, verdicts = 0, set()
        for run in range(runs):
            key, mid = asked[run % len(asked)]
            started = time.monotonic()
            answer = client.get(f"/api/v1/journey?q={key if run % 2 == 0 else mid}").get_json()
            times["key" if run % 2 == 0 else "message id"].append((time.monotonic() - started) * 1000)
            late += len(answer["not_answered"])
            verdicts.add("missing" if answer["messages"] and answer["messages"][0]["missing"] else "complete")
        usage = app.extensions["idemdash_pools"].usage()
        return {
            "times": times,
            "learn_ms": learn_ms,
            "routes": len(routes["routes"]),
            "late": late / runs,
            "peak": peak[0],
            "budget": usage.budget,
            "verdicts": sorted(verdicts),
        }
    finally:
        stop.set()
        targets.close(app)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--databases", type=int, nargs="+", default=[200])
    parser.add_argument("--hung", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=8, help="IDEMDASH_FLEET_REFRESH_THREADS (default 8)")
    args = parser.parse_args()
    from tests import embedded_server

    server = embedded_server.start("idemdash-journey-bench-")
    hung = [HungHost() for _ in range(args.hung)]
    results = []
    try:
        dsn = server.get_uri("postgres")
        started = time.monotonic()
        build_template(dsn, "journey_template", 0)
        live = {f"svc{i:03d}": clone(dsn, "journey_template", f"svc{i:03d}") for i in range(max(args.databases))}
        asked = seed(list(live.values()))
        setup = time.monotonic() - started
        down = {
            f"hung{i}": f"postgresql://idemdash@127.0.0.1:{h.port}/hung?connect_timeout=2" for i, h in enumerate(hung)
        }
        for k in args.databases:
            config = write_config(server.parent / f"journey-{k}.toml", down | dict(list(live.items())[:k]))
            results.append((k, measure(dsn, config, asked, args.runs, args.threads)))
    finally:
        for h in hung:
            h.close()
        embedded_server.discard(server)
    load = os.getloadavg()
    print(f"# the journey across K databases + {args.hung} hung\n")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; setup {setup:.0f} s; {args.runs} journeys, in process; "
        f"IDEMDASH_FLEET_REFRESH_THREADS={args.threads}, IDEMDASH_FLEET_MAX_CONNECTIONS=50 (the default)\n"
    )
    print(
        "| K | journey of a | p50 ms | p95 ms | max ms | not answered per journey (all) | routes learned in "
        "| journey connections, peak at once | budget | verdicts |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for k, m in results:
        for kind, t in m["times"].items():
            print(
                f"| {k} | {kind} | {percentile(t, 50):.0f} | {percentile(t, 95):.0f} | {max(t):.0f} | "
                f"{m['late']:.2f} | {m['learn_ms']:.0f} ms | {m['peak']} | {m['budget']} | "
                f"{', '.join(m['verdicts'])} |"
            )


if __name__ == "__main__":
    main()
