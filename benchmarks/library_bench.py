"""Pages and purges over a library's own tables at 10M rows: Spring Modulith v2's event publication registry,
MassTransit's InboxState and DBOS's workflow_status, created by the libraries' own DDL (tests/library_ddl.py).

    python -m benchmarks.library_bench --rows 10000000 --pgdata /var/tmp/idemdash-library-bench
    python -m benchmarks.library_bench --rows 10000000 --database-url postgresql:///bench

For each library, on one database (loaded once; kept in ``--pgdata`` between runs):

1. data: ``--rows`` rows spread over 60 days (queries/workload/library_bench.sql says the mix of states), loaded
   when the table holds another number of rows;
2. pages, without the indexes idemdash advises and with no rollup stored: every request is timed ``--cold-runs``
   times through Flask's test client in this process (server time, no network);
3. ``idemdash check --apply-indexes``'s indexes for the profile, one rollup job run, ANALYZE; then every
   request ``--runs`` times: p50 and p95 (nearest rank);
4. purges: a dry run, then a real run with ``--purge-seconds`` of time budget (rows/s, per batch), then a run
   with the retention at 59 days, when almost nothing is due: its cost is the due rows', not the table's.

The load average is printed with each phase (the machine may be shared). The report is Markdown.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg import sql

from benchmarks.page_bench import SERVER_SETTINGS
from benchmarks.purge_bench import start_embedded
from idemdash.core import settings as idemdash_settings
from idemdash.dashboard import create_app, targets
from idemdash.jobs.library_purge import run_library_purges
from idemdash.jobs.rollups import run_rollups
from idemdash.queries.catalog import find_configured
from idemdash.queries.migrate import migrate
from idemdash.queries.profile_indexes import create_profile_index, list_profile_index_status
from idemdash.queries.target import Target
from idemdash.queries.workload import statement
from tests import library_ddl as ddl
from tests.test_detect import _create_case

CHUNK = 1_000_000
LIBRARIES = {
    # name: (profile settings, DDL, the table loaded, its loading block, the requests timed)
    "spring-modulith": (
        {"PROFILE": "spring-modulith", "APP_SCHEMA": "modulith"},
        ddl.SPRING_MODULITH_V2,
        "event_publication",
        "library_bench_spring_rows",
        [
            "/tables",
            "/api/v1/tables",
            "/api/v1/tables/outbox?state=pending",
            "/api/v1/tables/outbox?state=stuck",
            "/api/v1/tables/outbox?state=failed",
            "/api/v1/tables/outbox?state=in+progress",
            "/api/v1/tables/outbox?state=done",
            "/api/v1/tables/outbox?state=purgeable",
            "/tables/outbox?state=stuck",
            "ROW",
        ],
    ),
    "masstransit": (
        {"PROFILE": "masstransit", "APP_SCHEMA": "bus"},
        ddl.MASSTRANSIT,
        "InboxState",
        "library_bench_masstransit_rows",
        [
            "/tables",
            "/api/v1/tables",
            "/api/v1/tables/inbox?state=in+progress",
            "/api/v1/tables/inbox?state=stuck",
            "/api/v1/tables/inbox?state=done",
            "/api/v1/tables/inbox?state=purgeable",
            "/tables/inbox?state=stuck",
            "ROW",
        ],
    ),
    "dbos": (
        {"PROFILE": "dbos", "APP_SCHEMA": "dbos"},
        ddl.DBOS,
        "workflow_status",
        "library_bench_dbos_rows",
        [
            "/tables",
            "/api/v1/tables",
            "/api/v1/tables/keys?state=pending",
            "/api/v1/tables/keys?state=in+progress",
            "/api/v1/tables/keys?state=stuck",
            "/api/v1/tables/keys?state=failed",
            "/api/v1/tables/keys?state=done",
            "/api/v1/tables/keys?state=purgeable",
            "/tables/keys?state=stuck",
            "ROW",
        ],
    ),
}


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def load_average() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def load(url: str, name: str, rows: int, out: Callable[[str], None]) -> None:
    config, text, table, block, _ = LIBRARIES[name]
    schema = config["APP_SCHEMA"]
    ident = sql.Identifier(schema, table)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement("library_bench_create_schema", schema=sql.Identifier(schema)))
        exists = conn.execute(statement("library_bench_table_exists"), {"table": ident.as_string(conn)}).fetchone()[0]
        have = conn.execute(statement("library_bench_count", table=ident)).fetchone()[0] if exists else -1
        if have == rows:
            out(f"{name}: {rows:,} rows already loaded")
        else:
            if exists:
                conn.execute(statement("library_bench_drop_schema", schema=sql.Identifier(schema)))
                conn.execute(statement("library_bench_create_schema", schema=sql.Identifier(schema)))
            _create_case(url, schema, [text])  # the library's DDL as the tests create it
            started = time.monotonic()
            for first in range(1, rows + 1, CHUNK):
                n = min(CHUNK, rows - first + 1)
                conn.execute(
                    statement(block, table=ident, versions=sql.Identifier(schema, "application_versions")),
                    {"first": first, "n": n},
                )
                out(f"  {name}: {first + n - 1:,} of {rows:,} rows ({time.monotonic() - started:.0f} s)")
        conn.execute(statement("library_bench_analyze", table=ident))
        migrate(conn)


def time_requests(client, paths: list[str], runs: int) -> list[tuple[str, int, float, float, float]]:
    results = []
    for path in paths:
        client.get(path)  # warm-up
        samples, statuses = [], set()
        for _ in range(runs):
            started = time.perf_counter()
            response = client.get(path)
            samples.append((time.perf_counter() - started) * 1000)
            statuses.add(response.status_code)
        results.append((path, max(statuses), percentile(samples, 50), percentile(samples, 95), max(samples)))
    return results


def row_path(client, paths: list[str]) -> list[str]:
    """The last request, ROW, is a row's page: the first stuck row's (its identity from the list)."""
    listing = next(p for p in paths if "state=stuck" in p and p.startswith("/api/"))
    identity = client.get(listing).get_json()["items"][0]["identity"]
    role = listing.split("/")[4].split("?")[0]
    return [p for p in paths if p != "ROW"] + [f"/api/v1/tables/{role}/row?id={identity}"]


def bench(url: str, name: str, args: argparse.Namespace, out: Callable[[str], None]) -> None:
    config, _, _, _, paths = LIBRARIES[name]
    settings = {
        "DATABASE_URL": url,
        **config,
        "OUTBOX_RETENTION_DAYS": 30,
        "INBOX_RETENTION_DAYS": 30,
        "DEFAULT_LEASE_SECONDS": 300,
        "STATEMENT_TIMEOUT_MS": 30_000,
        "SECRET_KEY": "bench",
    }
    target = Target.from_settings(idemdash_settings.load(**settings))
    with target.connect("bench") as conn:
        found = find_configured(conn, target.settings)
        for status in list_profile_index_status(conn, found):  # phase 2 runs without them
            if status.state != "missing":
                conn.execute(
                    statement("library_bench_drop_index", index=sql.Identifier(found.schema, status.index_name))
                )
        conn.execute(statement("library_bench_forget_rollups"))
    app = create_app(settings, testing=True)
    client = app.test_client()
    paths = row_path(client, paths)
    for phase, runs in (("without the advised indexes, no rollup stored", args.cold_runs), ("with them", args.runs)):
        if phase == "with them":
            started = time.monotonic()
            with target.connect("bench") as conn:
                for status in list_profile_index_status(conn, found):
                    create_profile_index(conn, found, status)
                for _, table in found.tables:
                    conn.execute(statement("library_bench_analyze", table=sql.Identifier(found.schema, table)))
            built = time.monotonic() - started
            rolled = run_rollups(target, force=True)
            out(
                f"\nadvised indexes built in {built:.0f} s; rollup job: "
                + ", ".join(f"{k} {v:,.0f} ms" for k, v in rolled.items())
            )
        out(f"\n### {name}, {args.rows:,} rows: pages {phase} ({runs} runs each; {load_average()})\n")
        out("| request | status | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
        for path, status, p50, p95, most in time_requests(client, paths, runs):
            out(f"| `{path}` | {status} | {p50:.1f} | {p95:.1f} | {most:.1f} |")
    out(f"\n### {name}: purges ({load_average()})\n")
    out("| run | outcome | rows | batches | seconds | rows/s |\n|---|---|---|---|---|---|")
    for label, overrides, dry in (
        ("dry run (counts what is due)", {}, True),
        (f"real, {args.purge_seconds} s budget", {}, False),
        (
            "real, retention 59 days (almost nothing due)",
            {"OUTBOX_RETENTION_DAYS": 59, "INBOX_RETENTION_DAYS": 59},
            False,
        ),
    ):
        run_target = Target.from_settings(
            idemdash_settings.load(**{**settings, **overrides, "PURGE_TIME_BUDGET_SECONDS": args.purge_seconds})
        )
        started = time.monotonic()
        for result in run_library_purges(run_target, dry_run=dry, started_by="bench"):
            seconds = time.monotonic() - started
            rate = f"{result.rows / seconds:,.0f}" if seconds and result.rows and not dry else "-"
            out(
                f"| {label}: {result.table} | {result.outcome} | {result.rows:,} | {result.batches:,} | "
                f"{seconds:.1f} | {rate} |"
            )
    targets.close(app)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--library", choices=list(LIBRARIES), action="append", help="[default: all]")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--purge-seconds", type=int, default=20)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--pgdata", default="", help="the embedded server's data directory, kept between runs")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, flush=True)

    tmp = None
    if args.database_url:
        url, stop = args.database_url, (lambda: None)
    else:
        pgdata = Path(args.pgdata) if args.pgdata else Path((tmp := tempfile.TemporaryDirectory()).name) / "pgdata"
        url, stop = start_embedded(pgdata, [f"{k}={v}" for k, v in SERVER_SETTINGS.items()], out)
    try:
        for name in args.library or list(LIBRARIES):
            load(url, name, args.rows, out)
            bench(url, name, args, out)
    finally:
        stop()
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
