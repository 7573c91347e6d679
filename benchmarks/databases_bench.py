"""The all-databases overview (/databases and GET /api/v1/databases) over a fleet: K live databases plus some whose
server refuses connections and some whose server accepts and never answers (hung hosts).

    python -m benchmarks.databases_bench                             # 60 + 3 refusing + 3 hung, then 200 + 3 + 3
    python -m benchmarks.databases_bench --http 2                    # also through idemdash serve, 2 workers
    python -m benchmarks.databases_bench --databases 60 200 500 --refusing 3 --hung 3 --runs 200 --days 1
    python -m benchmarks.databases_bench --fleet --http 2 --databases 100 200 500   # one [fleets.shop] pattern

One embedded PostgreSQL (max_connections raised for the web pools: each worker opens one per database) holds the
largest K databases, clones of one built with idemdash's schema, the reference tables, the recommended indexes and
``--days`` days of simulated history (workload.backfill). A refusing host is a closed port; a hung host is a socket
this script accepts connections on and never answers. An IDEMDASH_CONFIG file lists the hung hosts first, then the
refusing ones, then the live databases. For each K the app answers in process (Flask's test client: server time,
no HTTP), and with ``--http`` also through ``idemdash serve``. From its very first request, requests alternate
between the two routes back to back until every row has answered ("cold": the refresh is filling the rows in), then
``--runs`` timed requests per route ("warm").

With ``--fleet`` the K databases are one ``[fleets.shop]`` entry (a pattern on the server, made of K fresh clones
per case and dropped after it) and each case runs only under ``idemdash serve`` (``--http`` workers, 2 by default):
``/databases`` and one member's overview page (``/db/shop/<first>/``), warm; each worker's connections to the
server at rest (the refresh between rounds, after the requests) and the most seen at once (sampled every 0.25 s
from the first request on, counted from the worker's own sockets with ``ss``), its threads and its resident memory;
the wall time of ``idemdash purge`` over every database of the file (one database after another, the down hosts
included); and the scheduler's round: ``idemdash scheduler`` over the same file with the keys purged every 30 s, no
spread and the default ``IDEMDASH_FLEET_JOB_CONCURRENCY``, from the first member's scheduled purge starting to the
last one's finishing.
Percentiles are nearest-rank. The report is Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
import psycopg
from psycopg import sql

from idemdash.dashboard import create_app, targets
from idemdash.dashboard.all_databases import APPLICATION_NAME, THREAD_PREFIX
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import create_index, list_index_status
from idemdash.queries.migrate import migrate
from idemdash.workload.backfill import backfill
from tests.fleet import held_connections

PATHS = ("/databases", "/api/v1/databases")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else float("nan")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


class HungHost:
    """Accepts every connection and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.listener.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()
        for conn in self.held:
            conn.close()


def build_template(server_dsn: str, name: str, days: int) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    tables = Tables()
    with psycopg.connect(psycopg.conninfo.make_conninfo(server_dsn, dbname=name), autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, tables)
        for status in list_index_status(conn, tables):
            if status.missing:
                create_index(conn, tables, status)
        if days:
            backfill(conn, tables, days)
        conn.execute("ANALYZE")


def clone(server_dsn: str, template: str, name: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return psycopg.conninfo.make_conninfo(server_dsn, dbname=name)


def write_config(path: Path, urls: dict[str, str]) -> str:
    path.write_text("".join(f"[databases.{name}]\nurl = '{url}'\n\n" for name, url in urls.items()))
    return str(path)


def sessions(server_dsn: str) -> dict[str, int]:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        return dict(
            conn.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity "
                "WHERE application_name LIKE 'idemdash%' GROUP BY 1"
            ).fetchall()
        )


def measure(server_dsn: str, config: str, settings: dict, runs: int, timeout: float) -> dict:
    """In process, through Flask's test client: server time without HTTP."""
    app = create_app({"CONFIG": config, "SECRET_KEY": "benchmark", "POOL_TIMEOUT_SECONDS": 1, **settings})
    client = app.test_client()

    def get(path: str) -> tuple[int, bytes]:
        response = client.get(path)
        return response.status_code, response.data

    try:
        return timed(get, server_dsn, runs, timeout, in_process=True)
    finally:
        targets.close(app)


@contextlib.contextmanager
def serving(config: str, settings: dict, workers: int):
    """`idemdash serve` (gunicorn, ``workers`` workers) on a free loopback port; yields (process, get)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {key: value for key, value in os.environ.items() if not key.startswith("IDEMDASH_")}
    env |= {
        "IDEMDASH_CONFIG": config,
        "IDEMDASH_BIND": f"127.0.0.1:{port}",
        "IDEMDASH_WORKERS": str(workers),
        "IDEMDASH_SECRET_KEY": "benchmark",
        "IDEMDASH_POOL_TIMEOUT_SECONDS": "1",
        **{f"IDEMDASH_{name}": str(value) for name, value in settings.items()},
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "idemdash", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def get(path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    try:
        deadline = time.monotonic() + 120
        while True:  # the server checks every database before gunicorn starts
            try:
                if get("/healthz")[0] == 200:
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("idemdash serve did not start") from None
                time.sleep(0.2)
        yield server, get
    finally:
        server.terminate()
        server.wait(60)


def measure_http(server_dsn: str, config: str, settings: dict, runs: int, timeout: float, workers: int) -> dict:
    """Through `idemdash serve` (gunicorn, ``workers`` workers) over HTTP on loopback, a new connection each."""
    with serving(config, settings, workers) as (_, get):
        return timed(get, server_dsn, runs, timeout, in_process=False)


def proc_status(pid: int) -> dict[str, int]:
    """Threads and resident memory (kB) of a process, from /proc/<pid>/status."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {"threads": int(fields["Threads"]), "rss_kb": int(fields["VmRSS"].split()[0])}


def measure_fleet(
    server_dsn: str, config: str, settings: dict, runs: int, timeout: float, workers: int, member: str
) -> dict:
    """One fleet under `idemdash serve`: the overview of all and of one, and what each worker holds."""
    socket_dir = psycopg.conninfo.conninfo_to_dict(server_dsn)["host"]
    with serving(config, settings, workers) as (server, get):
        pids = [child.pid for child in psutil.Process(server.pid).children()]
        peak = dict.fromkeys(pids, 0)
        peak_threads = dict.fromkeys(pids, 0)
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.25):
                for pid, count in held_connections(pids, socket_dir).items():
                    peak[pid] = max(peak[pid], count)
                for pid in pids:
                    peak_threads[pid] = max(peak_threads[pid], proc_status(pid)["threads"])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            result = timed(get, server_dsn, runs, timeout, in_process=False)
            overview: list[float] = []
            for _ in range(runs):
                t0 = time.perf_counter()
                status, body = get(f"/db/{member}/")
                overview.append((time.perf_counter() - t0) * 1000)
                assert status == 200, (status, body[:300])
        finally:
            sampling.set()
            sampler.join()
        deadline = time.monotonic() + 60  # at rest: no ask of the refresh under way
        while sessions(server_dsn).get(APPLICATION_NAME, 0) and time.monotonic() < deadline:
            time.sleep(0.1)
        rest = held_connections(pids, socket_dir)
        status = {pid: proc_status(pid) for pid in pids}
    return result | {
        "overview": overview,
        "pids": pids,
        "rest": rest,
        "peak": peak,
        "peak_threads": peak_threads,
        "status": status,
    }


def purge_round(config: str) -> tuple[float, int]:
    """`idemdash purge` over every database of the file: wall seconds and exit status."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("IDEMDASH_")}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "idemdash", "purge"],
        env=env | {"IDEMDASH_CONFIG": config},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started, done.returncode


ROUND = """SELECT count(*) FILTER (WHERE finished_at IS NOT NULL), min(started_at), max(finished_at)
FROM idemdash.purge_run WHERE table_name = 'keys' AND started_by = 'scheduler'"""


def scheduler_round(config: str, members: list[str], every: int = 30, timeout: float = 600) -> tuple[float, float]:
    """``idemdash scheduler`` over the file, the keys purged ``every`` seconds (the others off) with no spread: seconds
    from the first member's scheduled run starting to the last one's finishing (one round, at the concurrency
    limit's pace), and the seconds until every member had one."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("IDEMDASH_")}
    env |= {
        "IDEMDASH_CONFIG": config,
        "IDEMDASH_PURGE_KEYS_SCHEDULE": f"every {every}s",
        "IDEMDASH_PURGE_INBOX_SCHEDULE": "off",
        "IDEMDASH_PURGE_OUTBOX_SCHEDULE": "off",
        "IDEMDASH_FLEET_JOB_SPREAD_SECONDS": "0",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "idemdash", "scheduler"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    started, waiting, first, last = time.monotonic(), list(members), None, None
    try:
        while waiting and time.monotonic() - started < timeout:
            time.sleep(2)
            for member in list(waiting):
                with psycopg.connect(member, autocommit=True) as conn:
                    done, began, ended = conn.execute(ROUND).fetchone()
                if done:
                    waiting.remove(member)
                    first = began if first is None else min(first, began)
                    last = ended if last is None else max(last, ended)
    finally:
        process.terminate()
        process.wait(30)
    if waiting or first is None or last is None:
        return math.nan, time.monotonic() - started
    return (last - first).total_seconds(), time.monotonic() - started


def timed(get, server_dsn: str, runs: int, timeout: float, *, in_process: bool) -> dict:
    """Requests back to back from the first, alternating between the routes, until every row has answered in
    several answers running (with several workers, each fills its own rows), then ``runs`` timed ones per route."""
    cold: list[float] = []
    warm: dict[str, list[float]] = {path: [] for path in PATHS}
    threads = peak_refresh = complete = 0
    started = time.perf_counter()
    filled = None
    while filled is None and time.perf_counter() - started < timeout:
        for path in PATHS:
            t0 = time.perf_counter()
            status, body = get(path)
            cold.append((time.perf_counter() - t0) * 1000)
            assert status == 200, (status, body[:300])
        if in_process:
            threads = max(threads, sum(t.name.startswith(THREAD_PREFIX) for t in threading.enumerate()))
        if len(cold) % 20 == 0:
            peak_refresh = max(peak_refresh, sessions(server_dsn).get(APPLICATION_NAME, 0))
        complete = 0 if any(item["pending"] for item in json.loads(body)["items"]) else complete + 1
        if complete >= 4:
            filled = time.perf_counter() - started
    for path in PATHS:
        for _ in range(runs):
            t0 = time.perf_counter()
            status, _ = get(path)
            warm[path].append((time.perf_counter() - t0) * 1000)
            assert status == 200
    items = json.loads(get("/api/v1/databases")[1])["items"]
    held = sessions(server_dsn)
    return {
        "cold": cold,
        "warm": warm,
        "filled": filled,
        "threads": threads if in_process else None,
        "peak_refresh": peak_refresh,
        "answered": sum(i["reachable"] for i in items),
        "failed": sum(bool(i["problem"]) for i in items),
        "pool_sessions": held.get("idemdash", 0),
        "refresh_sessions": held.get(APPLICATION_NAME, 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--databases", type=int, nargs="+", default=[60, 200], help="live databases, one case each")
    parser.add_argument("--refusing", type=int, default=3)
    parser.add_argument("--hung", type=int, default=3)
    parser.add_argument("--days", type=int, default=1, help="days of simulated history in each database")
    parser.add_argument("--runs", type=int, default=200, help="warm requests per route")
    parser.add_argument("--threads", type=int, default=8, help="IDEMDASH_FLEET_REFRESH_THREADS")
    parser.add_argument("--refresh-seconds", type=int, default=15, help="IDEMDASH_FLEET_REFRESH_SECONDS")
    parser.add_argument("--timeout", type=float, default=300, help="give up waiting for the rows after this long")
    parser.add_argument(
        "--http",
        type=int,
        default=0,
        metavar="WORKERS",
        help="also measure through `idemdash serve` with this many gunicorn workers",
    )
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="the K databases as one [fleets.shop] pattern, under idemdash serve only (see above)",
    )
    parser.add_argument("--budget", type=int, default=50, help="IDEMDASH_FLEET_MAX_CONNECTIONS")
    args = parser.parse_args()
    if args.fleet:
        args.http = args.http or 2

    from tests import embedded_server

    server = embedded_server.start("idemdash-fleet-bench-")
    hung = [HungHost() for _ in range(args.hung)]
    results = []
    try:
        dsn = server.get_uri("postgres")
        with psycopg.connect(dsn, autocommit=True) as admin:  # one pool per database per app: room for them
            workers = max(1, args.http)
            most = args.budget if args.fleet else max(args.databases) + args.threads
            admin.execute(f"ALTER SYSTEM SET max_connections = {workers * most + 100}")
        server.stop()
        server.start()
        started = time.monotonic()
        build_template(dsn, "fleet_template", args.days)
        live = (
            {}
            if args.fleet
            else {
                f"service{i:03d}": clone(dsn, "fleet_template", f"service{i:03d}") for i in range(max(args.databases))
            }
        )
        setup = time.monotonic() - started
        # the web pools connect without a deadline unless the URL says one (the refresh has its own)
        down = {
            f"hung{i}": f"postgresql://idemdash@127.0.0.1:{h.port}/hung?connect_timeout=2" for i, h in enumerate(hung)
        }
        down |= {f"refusing{i}": f"postgresql://idemdash@127.0.0.1:{closed_port()}/gone" for i in range(args.refusing)}
        settings = {"FLEET_REFRESH_THREADS": args.threads, "FLEET_REFRESH_SECONDS": args.refresh_seconds}
        if args.fleet:
            settings["FLEET_MAX_CONNECTIONS"] = args.budget
        for k in args.databases if args.fleet else ():
            members = [clone(dsn, "fleet_template", f"shop{k}_{i:03d}") for i in range(k)]
            config = write_config(server.parent / f"fleet-{k}.toml", down)
            with open(config, "a") as file:
                file.write(f"[fleets.shop]\nurl = '{dsn}'\ndatabases = 'shop{k}_*'\n")
            m = measure_fleet(dsn, config, settings, args.runs, args.timeout, args.http, f"shop/shop{k}_000")
            m |= {"purge": purge_round(config), "round": scheduler_round(config, members)}
            results.append((k, f"HTTP, {args.http} workers", m))
            with psycopg.connect(dsn, autocommit=True) as admin:
                for member in members:
                    admin.execute(
                        sql.SQL("DROP DATABASE {}").format(
                            sql.Identifier(psycopg.conninfo.conninfo_to_dict(member)["dbname"])
                        )
                    )
        for k in () if args.fleet else args.databases:
            urls = down | dict(list(live.items())[:k])
            config = write_config(server.parent / f"fleet-{k}.toml", urls)
            results.append((k, "in process", measure(dsn, config, settings, args.runs, args.timeout)))
            if args.http:
                results.append(
                    (
                        k,
                        f"HTTP, {args.http} workers",
                        measure_http(dsn, config, settings, args.runs, args.timeout, args.http),
                    )
                )
    finally:
        for h in hung:
            h.close()
        embedded_server.discard(server)

    if args.fleet:
        report_fleet(args, results, setup)
        return
    load = os.getloadavg()
    print(f"# all-databases overview over a fleet: K live + {args.refusing} refusing + {args.hung} hung\n")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; setup {setup:.0f} s; {args.days} day(s) of history each; "
        f"IDEMDASH_FLEET_REFRESH_THREADS={args.threads}, IDEMDASH_FLEET_REFRESH_SECONDS={args.refresh_seconds}; "
        f"{args.runs} warm requests per route\n"
    )
    print(
        "| K live | server | requests | p50 ms | p95 ms | max ms | all rows in after | answered / failed | refresh "
        "threads | refresh connections, peak seen / at end | pool connections |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, server_kind, m in results:
        filled = f"{m['filled']:.1f} s" if m["filled"] is not None else f"not in {args.timeout:g} s"
        threads = m["threads"] if m["threads"] is not None else "-"
        tail = (
            f"| {filled} | {m['answered']} / {m['failed']} | {threads} | {m['peak_refresh']} / "
            f"{m['refresh_sessions']} | {m['pool_sessions']} |"
        )
        rows = [(f"cold ({len(m['cold'])}, both routes)", m["cold"])] + [(f"warm `{p}`", m["warm"][p]) for p in PATHS]
        for label, times in rows:
            print(
                f"| {k} | {server_kind} | {label} | {percentile(times, 50):.1f} | {percentile(times, 95):.1f} | "
                f"{max(times):.1f} " + tail
            )


def report_fleet(args, results: list, setup: float) -> None:
    load = os.getloadavg()
    print(
        f"# a fleet under idemdash serve: [fleets.shop] of K databases + {args.refusing} refusing + {args.hung} hung\n"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; template built in {setup:.0f} s; {args.days} day(s) of history "
        f"each; IDEMDASH_FLEET_REFRESH_THREADS={args.threads}, "
        f"IDEMDASH_FLEET_REFRESH_SECONDS={args.refresh_seconds}, IDEMDASH_FLEET_MAX_CONNECTIONS={args.budget}; "
        f"{args.runs} warm requests per route; per worker: one value per worker, in the order of their pids\n"
    )
    print(
        "| K | server | `/databases` p50 / p95 ms | `/db/shop/<first>/` p50 / p95 ms | all rows in after "
        "| answered / failed | connections per worker at rest | at peak | threads per worker at rest | at peak "
        "| RSS MB per worker | `idemdash purge` over the fleet (exit) | the scheduler's round |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, server_kind, m in results:

        def each(values) -> str:
            return " / ".join(str(v) for v in values)

        filled = f"{m['filled']:.1f} s" if m["filled"] is not None else f"not in {args.timeout:g} s"
        pages, overview = m["warm"]["/databases"], m["overview"]
        wall, code = m["purge"]
        print(
            f"| {k} | {server_kind} | {percentile(pages, 50):.1f} / {percentile(pages, 95):.1f} "
            f"| {percentile(overview, 50):.1f} / {percentile(overview, 95):.1f} | {filled} "
            f"| {m['answered']} / {m['failed']} | {each(m['rest'][p] for p in m['pids'])} "
            f"| {each(m['peak'][p] for p in m['pids'])} | {each(m['status'][p]['threads'] for p in m['pids'])} "
            f"| {each(m['peak_threads'][p] for p in m['pids'])} "
            f"| {each(round(m['status'][p]['rss_kb'] / 1024) for p in m['pids'])} | {wall:.1f} s ({code}) "
            f"| {m['round'][0]:.1f} s |"
        )


if __name__ == "__main__":
    main()
