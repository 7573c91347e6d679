"""What the purge benchmark shares: its data, the claim probe, server statistics and the machine.

The keys are written as an application writes them: one after another in time, each expiring a day after it
was created (the reference claim function's retention), so the heap holds them in creation order while their
primary key (a UUID text) is random with respect to it. The oldest ``due`` of them have expired (the rest
expire an hour from now or later, so what is due holds still while the benchmark runs); among all
keys every 100th is ``processing`` and every 200th ``failed_retryable`` (they must survive whatever their
``expires_at``), every 25th ``failed_final``, the rest ``succeeded``.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import platform
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

import psycopg
from psycopg import sql

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key

CHUNK = 250_000

# Benchmark data only (never run by the product): set-based inserts over generate_series. Row g was created at
# now() - 1 day - (due - g) * step when it is one of the due ones (g < due), else at now() - 23 hours +
# (g - due) * step, step spreading the live rows over 23 hours: none of them expires within the hour the
# benchmark takes, so what is due stays what was loaded.
INSERT_KEYS = """
INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, result_ref_type, result_ref_id,
                    response_body, claimed_by, claimed_at, locked_until, attempt_count, created_at, updated_at,
                    expires_at)
SELECT (ARRAY['create_order', 'capture_payment', 'send_invoice', 'refund'])[1 + g %% 4],
       md5(%(salt)s || ':' || g)::uuid::text,
       md5(g::text),
       (CASE WHEN g %% 100 = 0 THEN 'processing' WHEN g %% 200 = 1 THEN 'failed_retryable'
             WHEN g %% 25 = 2 THEN 'failed_final' ELSE 'succeeded' END)::{status_type},
       'order', gen_random_uuid(), jsonb_build_object('id', g, 'status', 'ok'),
       'api-' || (g %% 5), t.created_at, CASE WHEN g %% 100 = 0 THEN t.created_at + interval '5 minutes' END, 1,
       t.created_at, t.created_at, t.created_at + interval '1 day'
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS g
CROSS JOIN LATERAL (
    SELECT CASE WHEN g < %(due)s THEN now() - interval '1 day' - (%(due)s - g) * %(step)s * interval '1 microsecond'
                ELSE now() - interval '23 hours' + (g - %(due)s) * %(step)s * interval '1 microsecond' END
           AS created_at) t
ON CONFLICT DO NOTHING
"""

COUNT_KEYS = """
SELECT count(*) FILTER (WHERE status IN ('succeeded', 'failed_final') AND expires_at < now()) AS due,
       count(*) FILTER (WHERE status = 'processing') AS processing,
       count(*) FILTER (WHERE status = 'failed_retryable') AS failed_retryable,
       -- expiring after the given time: no purge that started before it may touch them
       count(*) FILTER (WHERE status IN ('succeeded', 'failed_final') AND expires_at >= %(as_of)s) AS unexpired,
       count(*) AS total
FROM {keys}
"""

TABLE_STATS = """
SELECT coalesce(sum(s.idx_tup_read), 0)::bigint AS index_entries_read,
       (SELECT seq_tup_read FROM pg_stat_user_tables WHERE relid = %(relid)s::regclass) AS heap_rows_scanned,
       (SELECT n_tup_del FROM pg_stat_user_tables WHERE relid = %(relid)s::regclass) AS deleted
FROM pg_stat_user_indexes s WHERE s.relid = %(relid)s::regclass
"""


@dataclass(frozen=True)
class KeyCounts:
    due: int
    processing: int
    failed_retryable: int
    unexpired: int
    total: int

    @property
    def live(self) -> tuple[int, int, int]:
        return self.processing, self.failed_retryable, self.unexpired


@dataclass(frozen=True)
class ScanStats:
    index_entries_read: int
    heap_rows_scanned: int
    deleted: int

    def __sub__(self, other: ScanStats) -> ScanStats:
        return ScanStats(
            self.index_entries_read - other.index_entries_read,
            self.heap_rows_scanned - other.heap_rows_scanned,
            self.deleted - other.deleted,
        )

    @property
    def examined(self) -> int:
        return self.index_entries_read + self.heap_rows_scanned


def load_keys(
    conn: psycopg.Connection,
    tables: Tables,
    status_type: sql.Composable,
    total: int,
    due: int,
    salt: str = "a",
    first: int = 0,
    last: int | None = None,
) -> None:
    """Rows ``first`` .. ``last`` (default: all) of a table of ``total`` keys whose oldest ``due`` have expired."""
    step = max(1, int(82_800_000_000 / max(1, total - due)))  # microseconds between two live keys
    query = sql.SQL(INSERT_KEYS).format(**tables.identifiers(), status_type=status_type)
    end = total if last is None else last
    for lo in range(first, end, CHUNK):
        conn.execute(query, {"lo": lo, "hi": min(end, lo + CHUNK), "salt": salt, "due": due, "step": step})


def count_keys(conn: psycopg.Connection, tables: Tables, as_of: datetime | None = None) -> KeyCounts:
    """Due and live keys; ``unexpired`` counts the terminal keys expiring at or after ``as_of`` (default now)."""
    as_of = as_of or conn.execute("SELECT now()").fetchone()[0]
    row = conn.execute(sql.SQL(COUNT_KEYS).format(**tables.identifiers()), {"as_of": as_of}).fetchone()
    return KeyCounts(*row)


def scan_stats(conn: psycopg.Connection, relation: str) -> ScanStats:
    """Cumulative index entries read, heap rows read by sequential scans, and rows deleted, for one table."""
    # this session's own counts (the benchmark's counting queries) reach the shared statistics at once, not
    # up to a second later in the middle of the next measurement
    conn.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.2)
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(TABLE_STATS, {"relid": relation}).fetchone()
    return ScanStats(*row)


def vacuum(conn: psycopg.Connection, relation: sql.Composable) -> None:
    """VACUUM ANALYZE as autovacuum would after a load, then a checkpoint, so every phase starts alike."""
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(relation))
    # --database-url without the right: the phases may then differ a little
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        conn.execute("CHECKPOINT")


def wal_lsn(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0]


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def uptime() -> str:
    """The machine's load, as `uptime` prints it (the machine may be shared)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def machine(conn: psycopg.Connection) -> dict[str, str]:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":")[1].strip()
    except OSError:
        pass
    names = (
        "server_version",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "max_wal_size",
        "checkpoint_timeout",
        "wal_compression",
    )
    pg = {name: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0] for name in names}
    return {
        "cpus": str(os.cpu_count()),
        "memory": mem,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        **pg,
    }


def describe_machine(info: dict[str, str]) -> str:
    return (
        f"{info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, PostgreSQL {info['server_version']} "
        f"(shared_buffers {info['shared_buffers']}, fsync {info['fsync']}, synchronous_commit "
        f"{info['synchronous_commit']}, max_wal_size {info['max_wal_size']}, checkpoint_timeout "
        f"{info['checkpoint_timeout']}, wal_compression {info['wal_compression']}), Python {info['python']}"
    )


def _purge_process(settings: dict[str, Any], table: str, results, pgoptions: str) -> None:
    if pgoptions:
        os.environ["PGOPTIONS"] = pgoptions  # the purge's sessions only
    from idemdash.jobs.purge_run import run_purge
    from idemdash.queries.target import Target

    target = Target.from_settings(settings)
    batches: list[int] = []  # WAL position after each batch, read on a connection of our own
    with psycopg.connect(target.dsn, autocommit=True) as conn:

        def on_batch(_batches: int, _rows: int) -> None:
            batches.append(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])

        on_batch(0, 0)
        # time.monotonic() is CLOCK_MONOTONIC, one clock for every process on the machine
        started = time.monotonic()
        result = run_purge(target, table, dry_run=False, started_by="purge_bench", on_batch=on_batch)
        ended = time.monotonic()
    # the most WAL between two batches' ends: one batch's burst (other sessions' WAL included, if any)
    burst = max((b - a for a, b in pairwise(batches)), default=0)
    results.put((result, started, ended, burst))


def run_purge_in_process(settings: dict[str, Any], table: str = "keys", pgoptions: str = ""):
    """One purge run in a child process (its Python work shares no GIL with the probe); its result, start, end
    and the most WAL one batch wrote."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_purge_process, args=(settings, table, results, pgoptions), daemon=True)
    process.start()
    outcome = results.get(timeout=3600)
    process.join(30)
    time.sleep(0.5)  # the purge's backends flush their statistics as they exit
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
                    complete_key(
                        conn, self.tables, "bench_probe", key, "order", None, {"ok": True}, attempt=claim.attempt_count
                    )
                next_at += self.interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    self.stop.wait(delay)
                else:
                    next_at = time.monotonic()

    def window(self, start: float, end: float) -> list[float]:
        return [seconds for when, seconds in self.samples if start <= when < end]
