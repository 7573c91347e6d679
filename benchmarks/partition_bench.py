"""(d) of ``python -m benchmarks.purge_bench partition``: a day partition of the inbox dropped whole, against the
same rows deleted in batches from an unpartitioned inbox.

Both inboxes get ``--rows`` rows processed on one day 35 days ago (past the 30-day retention), spread over that
day and 50 consumers, plus a day of recent rows that must stay; the recommended inbox indexes; VACUUM ANALYZE
and a CHECKPOINT. Then one purge run each, alone, timed with the WAL it wrote.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg import sql

from benchmarks import purge_data
from benchmarks.purge_bench import RUN_HEADER, SCHEMA, bench_settings, describe_run, fresh_schema, measure_run
from idemdash.queries import Tables
from idemdash.queries.indexes import ADVICE

# Benchmark data only: rows spread evenly over one day, from %(day)s.
INSERT_INBOX = """
INSERT INTO {inbox} (consumer_name, message_id, message_hash, processed_at)
SELECT 'consumer-' || (g %% 50), md5(%(salt)s || g), md5(g::text),
       %(day)s::timestamptz + g * (interval '1 day' / %(rows)s)
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS g
"""


def _fill(conn: psycopg.Connection, tables: Tables, rows: int, day: datetime, salt: str) -> None:
    query = sql.SQL(INSERT_INBOX).format(**tables.identifiers())
    for lo in range(0, rows, purge_data.CHUNK):
        conn.execute(query, {"lo": lo, "hi": min(rows, lo + purge_data.CHUNK), "rows": rows, "day": day, "salt": salt})


def partition(args: argparse.Namespace, url: str, out: Callable[[str], None]) -> None:
    tables = Tables(schema=SCHEMA)
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    old_day, recent_day = today - timedelta(days=35), today - timedelta(days=1)
    recent = max(1000, args.rows // 10)
    config = bench_settings(url, args)
    with psycopg.connect(url, autocommit=True) as conn:
        out(f"machine: {purge_data.describe_machine(purge_data.machine(conn))}")
        out(
            f"settings: batch {config.purge_batch_size}, pause {config.purge_pause_ms} ms, duty cycle "
            f"{config.purge_duty_cycle} %, inbox retention {config.inbox_retention_days} days; {args.rows:,} "
            f"rows processed on {old_day:%Y-%m-%d}, {recent:,} recent rows that stay"
        )
        out("")
        out(RUN_HEADER)
        for partitioned in (True, False):
            fresh_schema(conn, tables, partitioned=partitioned)
            if partitioned:
                from idemdash.queries.app_schema import create_time_partitions

                create_time_partitions(conn, tables, "inbox", old_day - timedelta(days=1), today + timedelta(days=2))
            else:
                for advice in ADVICE.values():
                    if advice.table == "inbox":
                        conn.execute(advice.create_statement(tables))
            t0 = time.monotonic()
            _fill(conn, tables, args.rows, old_day, "old")
            _fill(conn, tables, recent, recent_day, "recent")
            purge_data.vacuum(conn, tables.identifiers()["inbox"])
            out(
                f"<!-- loaded {'partitioned' if partitioned else 'unpartitioned'} inbox in "
                f"{time.monotonic() - t0:.0f} s -->"
            )
            m = measure_run(conn, tables, config, table="inbox")
            result = m["result"]
            assert result.outcome == "succeeded" and result.rows == args.rows, result
            left = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(tables.identifiers()["inbox"])).fetchone()[0]
            assert left == recent, f"{left} rows left, expected the {recent} recent ones"
            label = (
                f"partitioned: {result.partitions_dropped} partition(s) dropped"
                if partitioned
                else "unpartitioned: batches"
            )
            out(describe_run(label, m))
    out("")
    out(f"`uptime` at the end: {purge_data.uptime()}")
