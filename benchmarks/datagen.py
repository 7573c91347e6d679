"""Synthetic application data at six sizes, fast: set-based INSERT ... SELECT over generate_series.

    python -m benchmarks.datagen --size L --database-url postgresql:///bench --replace

Sizes (keys / inbox rows / outbox rows):

    S      10,000 /     10,000 /     2,000   tests (well under a second)
    M   1,000,000 /  1,000,000 /   200,000
   2M   2,000,000 /  2,000,000 /   400,000
    L  10,000,000 / 10,000,000 / 2,000,000   the performance budget (docs/benchmarks.md)
  20M  20,000,000 / 10,000,000 / 4,000,000   where a page's growth with the table shows (docs/benchmarks.md)
   XL 100,000,000 / 20,000,000 / 5,000,000   an API at about 1,000 requests/s with a day's retention
                                              (leaner rows: succeeded keys keep their result reference but
                                              no stored response body; disk: docs/benchmarks.md)

At every size, exactly: 1 % of keys processing, of which keys/500 stuck (20,000 at L; 5 % of those
with a NULL locked_until and an old claimed_at), 2 % failed_retryable, 3 % failed_final, the rest
succeeded; inbox rows over 50 consumers; 2.5 % of outbox rows pending and 0.05 % failed, the rest
published. Distributions: 20 scopes with a power-law skew, claimed_by over 50 workers (one of which
claims 40 % of the retry hotspots), attempt_count 1 for 91 % with a tail to 59 (1 % at 5 or more),
created_at over 30 days in row order (as an append-mostly table is laid out), expires_at 1-30 days
after the last claim by scope, keys of mixed shapes (UUIDs, paths with '/', spaces and non-ASCII,
long ones). Active (not stuck) leases end 2 to 8 hours after generation, so the stuck count
stays exact for a benchmark run. Each value is a pure function of the row number and ``--seed``;
the rows are written in ranges by ``--jobs`` connections at once, then VACUUM (ANALYZE) sets the
visibility map and statistics as autovacuum would after a load.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from idemdash.queries import Tables
from idemdash.queries.workload import datagen


@dataclass(frozen=True)
class Size:
    name: str
    keys: int
    inbox: int
    outbox: int
    # succeeded keys carry a stored response (a small JSON body) besides their result reference; XL's do not,
    # so that 100M keys and their indexes fit a 78 GB disk (the body is about 70 bytes of a 270-byte row)
    response_bodies: bool = True

    @property
    def processing(self) -> int:
        return self.keys // 100

    @property
    def stuck(self) -> int:
        return self.keys // 500

    @property
    def stuck_null_lease(self) -> int:
        return self.stuck // 20

    @property
    def failed_retryable(self) -> int:
        return self.keys * 2 // 100

    @property
    def failed_final(self) -> int:
        return self.keys * 3 // 100

    @property
    def succeeded(self) -> int:
        return self.keys - self.processing - self.failed_retryable - self.failed_final

    @property
    def outbox_pending(self) -> int:
        return self.outbox * 25 // 1000

    @property
    def outbox_failed(self) -> int:
        return self.outbox * 5 // 10000

    @property
    def outbox_published(self) -> int:
        return self.outbox - self.outbox_pending - self.outbox_failed

    def key_plan(self) -> datagen.KeyPlan:
        return datagen.KeyPlan(
            self.keys,
            self.processing,
            self.stuck,
            self.failed_retryable,
            self.failed_final,
            _coprime_prime(self.keys - (self.processing - self.stuck)),
            self.response_bodies,
        )

    def outbox_plan(self) -> datagen.OutboxPlan:
        backlog = self.outbox_pending - self.outbox_pending // 50
        return datagen.OutboxPlan(
            self.outbox, self.keys, self.outbox_pending, self.outbox_failed, _coprime_prime(self.outbox - backlog)
        )


SIZES = {
    "S": Size("S", 10_000, 10_000, 2_000),
    "M": Size("M", 1_000_000, 1_000_000, 200_000),
    "2M": Size("2M", 2_000_000, 2_000_000, 400_000),
    "L": Size("L", 10_000_000, 10_000_000, 2_000_000),
    "20M": Size("20M", 20_000_000, 10_000_000, 4_000_000),
    "XL": Size("XL", 100_000_000, 20_000_000, 5_000_000, response_bodies=False),
}
CONSUMERS = 50
SCOPES = 20
WORKERS = 50


def _is_prime(k: int) -> bool:
    if k < 2:
        return False
    f = 2
    while f * f <= k:
        if k % f == 0:
            return False
        f += 1
    return True


def _coprime_prime(n: int) -> int:
    """A prime near 0.618 n that does not divide n: i -> i * p mod n is then a well-scattered permutation."""
    k = max(3, int(n * 0.6180339887))
    while not (_is_prime(k) and n % k != 0):
        k += 1
    return k


def _ranges(n: int, chunk: int) -> list[tuple[int, int]]:
    return [(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)]


@dataclass
class Timings:
    size: str
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def generate(
    url: str,
    size: Size,
    *,
    tables: Tables = Tables(),
    seed: int = 1,
    jobs: int = 2,
    chunk_rows: int | None = None,
    replace: bool = False,
    status_type: str = "enum",
    vacuum: bool = True,
    defer_constraints: bool | None = None,
    log=None,
) -> Timings:
    """Fill the three application tables of ``url`` with ``size``'s rows; returns the seconds each phase took.

    The reference schema is created if the tables do not exist. Tables that already hold rows are refused
    unless ``replace`` (which empties them first). ``defer_constraints`` (default: for sizes past L) drops the
    tables' primary keys and unique constraints before the load and adds them back after it, each index built in
    one sort: at XL the primary key of the keys outgrows shared_buffers early, and growing it by random inserts made
    each 12.5M-row statement take 351 s, then 660 s, then longer.
    """
    say = log or (lambda message: None)
    timings = Timings(size.name)
    with psycopg.connect(url, autocommit=True, application_name="idemdash-datagen") as conn:
        if datagen.count_missing_app_tables(conn, tables):
            from idemdash.queries.app_schema import create_app_schema

            create_app_schema(conn, tables, status_type)  # type: ignore[arg-type]
            say(f"created the reference schema in {tables.schema!r} (status {status_type})")
        counts = datagen.count_generated_rows(conn, tables)
        if counts.keys or counts.inbox or counts.outbox:
            if not replace:
                raise RuntimeError(
                    f"the tables already hold rows ({counts.keys} keys, {counts.inbox} inbox, "
                    f"{counts.outbox} outbox): pass replace=True (--replace) to empty them first"
                )
            datagen.truncate_generated_tables(conn, tables)
        _restore_interrupted(conn, tables, say)
        status = datagen.status_type(conn, tables)
        if defer_constraints is None:
            defer_constraints = size.keys > SIZES["L"].keys
        deferred = datagen.list_deferrable_constraints(conn, tables) if defer_constraints else []
        if deferred:
            datagen.record_deferred(conn, tables, deferred)  # until each is back: an interrupted load is repaired
        for constraint in deferred:
            datagen.drop_constraint(conn, constraint)
            say(f"  dropped {constraint.relation} {constraint.name} for the load")

    key_plan, outbox_plan = size.key_plan(), size.outbox_plan()
    # a few large statements per table, enough of them to keep every connection busy to the end
    chunk_rows = chunk_rows or max(100_000, -(-size.keys // (4 * max(1, jobs))))
    work = (
        [("keys", lo, hi) for lo, hi in _ranges(size.keys, chunk_rows)]
        + [("inbox", lo, hi) for lo, hi in _ranges(size.inbox, chunk_rows)]
        + [("outbox", lo, hi) for lo, hi in _ranges(size.outbox, chunk_rows)]
    )
    local = threading.local()
    lock = threading.Lock()
    connections: list[psycopg.Connection] = []

    def connection() -> psycopg.Connection:
        if getattr(local, "conn", None) is None:
            local.conn = psycopg.connect(url, autocommit=True, application_name="idemdash-datagen")
            datagen.create_datagen_functions(local.conn)
            with lock:
                connections.append(local.conn)
        return local.conn

    def run(item: tuple[str, int, int]) -> tuple[str, int, float]:
        table, lo, hi = item
        conn = connection()
        started = time.perf_counter()
        if table == "keys":
            rows = datagen.insert_generated_keys(conn, tables, key_plan, seed, lo, hi, status)
        elif table == "inbox":
            rows = datagen.insert_generated_inbox(conn, tables, size.inbox, seed, lo, hi)
        else:
            rows = datagen.insert_generated_outbox(conn, tables, outbox_plan, seed, lo, hi)
        assert rows == hi - lo, (table, lo, hi, rows)
        elapsed = time.perf_counter() - started
        say(f"  {table} rows {lo:,}..{hi - 1:,} in {elapsed:.1f} s")
        return table, rows, elapsed

    def add_back(constraint: datagen.Constraint) -> None:
        started = time.perf_counter()
        datagen.add_constraint(connection(), constraint)
        datagen.forget_deferred(connection(), tables, constraint)
        say(f"  {constraint.relation} {constraint.name} added back in {time.perf_counter() - started:.1f} s")

    def vacuum_one(table: str) -> None:
        started = time.perf_counter()
        datagen.vacuum_analyze(connection(), tables, table)
        say(f"  VACUUM (ANALYZE) {table} in {time.perf_counter() - started:.1f} s")

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="datagen") as pool:
            list(pool.map(run, work))
            timings.seconds["insert"] = time.perf_counter() - started
            if deferred:
                started = time.perf_counter()
                list(pool.map(add_back, deferred))
                datagen.drop_deferred_record(connection(), tables)
                timings.seconds["constraints"] = time.perf_counter() - started
            if vacuum:
                started = time.perf_counter()
                list(pool.map(vacuum_one, ("keys", "inbox", "outbox")))
                timings.seconds["vacuum_analyze"] = time.perf_counter() - started
    finally:
        for conn in connections:
            conn.close()
    return timings


def _restore_interrupted(conn: psycopg.Connection, tables: Tables, say: Callable[[str], None]) -> None:
    """Add back the constraints an interrupted earlier load dropped and recorded (on the emptied tables: at once),
    so that this load drops and adds back every one of them again, not only those still there."""
    present = {(c.relation, c.name) for c in datagen.list_deferrable_constraints(conn, tables)}
    for constraint in datagen.list_deferred_record(conn, tables):
        if (constraint.relation, constraint.name) not in present:
            datagen.add_constraint(conn, constraint)
            say(f"  {constraint.relation} {constraint.name} restored: an interrupted load had dropped it")
    datagen.drop_deferred_record(conn, tables)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=sorted(SIZES), default="S")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("IDEMDASH_DATABASE_URL", ""),
        help="target database [default: IDEMDASH_DATABASE_URL]",
    )
    parser.add_argument("--replace", action="store_true", help="empty the three tables first")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(4, os.cpu_count() or 2),
        help="connections inserting at once [default: cores, at most 4]",
    )
    parser.add_argument(
        "--status-type",
        choices=("enum", "text"),
        default="enum",
        help="status column type when the reference schema has to be created",
    )
    args = parser.parse_args(argv)
    if not args.database_url:
        parser.error("no database: pass --database-url or set IDEMDASH_DATABASE_URL")
    size = SIZES[args.size]
    print(
        f"generating {size.name}: {size.keys:,} keys, {size.inbox:,} inbox rows, {size.outbox:,} outbox rows",
        file=sys.stderr,
    )
    timings = generate(
        args.database_url,
        size,
        seed=args.seed,
        jobs=args.jobs,
        replace=args.replace,
        status_type=args.status_type,
        log=lambda m: print(m, file=sys.stderr),
    )
    parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.seconds.items())
    print(f"size {size.name} generated in {timings.total:.1f} s ({parts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
