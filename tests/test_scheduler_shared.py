"""Several `idemdash scheduler` processes over one fleet, sharing it through each database's purge lock: every
database is purged exactly once per schedule, killing one (SIGKILL) mid-run leaves its databases to the other by the
next run, and one process never runs more than IDEMDASH_FLEET_JOB_CONCURRENCY purges at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from idemdash.jobs.fleet_schedule import offset_seconds
from tests.test_databases import write_config
from tests.test_purges import KEYS, add_expired
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
PERIOD = 3  # seconds: IDEMDASH_PURGE_KEYS_SCHEDULE=every 3s
SPREAD = 1  # seconds: IDEMDASH_FLEET_JOB_SPREAD_SECONDS
DATABASES = 8
LIMIT = 2  # IDEMDASH_FLEET_JOB_CONCURRENCY of each process
# each run of a database with expired keys: 10 batches of 20 paced by ~100 ms pauses, about a second
SLOW_ROWS = 200

pytestmark = pytest.mark.system


@pytest.fixture
def fleet(tmp_path, clone_of, pg_templates):
    urls = {f"d{i}": clone_of(pg_templates["enum"]) for i in range(DATABASES)}
    refill(urls)
    return write_config(tmp_path / "idemdash.toml", {name: {"url": url} for name, url in urls.items()}), urls


def refill(urls: dict[str, str]) -> None:
    for url in urls.values():
        with psycopg.connect(url, autocommit=True) as conn:
            add_expired(conn, SLOW_ROWS, scope=f"s{time.monotonic_ns()}")


def scheduler(config: str, tmp_path: Path, name: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDEMDASH_")}
    env.update(
        IDEMDASH_CONFIG=config,
        IDEMDASH_PURGE_KEYS_SCHEDULE=f"every {PERIOD}s",
        IDEMDASH_PURGE_INBOX_SCHEDULE="off",
        IDEMDASH_PURGE_OUTBOX_SCHEDULE="off",
        IDEMDASH_PARTITIONS_SCHEDULE="off",
        IDEMDASH_SNAPSHOT_INTERVAL_SECONDS="3600",
        IDEMDASH_FLEET_JOB_CONCURRENCY=str(LIMIT),
        IDEMDASH_FLEET_JOB_SPREAD_SECONDS=str(SPREAD),
        IDEMDASH_PURGE_BATCH_SIZE="20",
        IDEMDASH_PURGE_PAUSE_MS="100",
        IDEMDASH_PURGE_LATENCY_BUDGET="off",
    )
    with open(tmp_path / f"{name}.log", "w") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "idemdash", "scheduler"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )


def stop(*children: subprocess.Popen) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    for child in children:
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def runs(url: str) -> list[tuple[float, str, str | None]]:
    """The database's scheduled runs of keys: start (epoch seconds), outcome, error; oldest first."""
    with psycopg.connect(url) as conn:
        return [
            (float(r[0]), r[1], r[2])
            for r in conn.execute(
                "SELECT extract(epoch FROM started_at), outcome, error FROM idemdash.purge_run"
                " WHERE table_name = 'keys' AND started_by = 'scheduler' ORDER BY started_at"
            ).fetchall()
        ]


def purging_now(server_dsn: str) -> int:
    """Purge runs under way on the whole server: each holds one connection named idemdash-purge-keys (its lock)."""
    with psycopg.connect(server_dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'idemdash-purge-keys'"
        ).fetchone()[0]


def running(urls: dict[str, str]) -> int:
    """Runs recorded as under way across the fleet."""
    return sum(o == "running" for u in urls.values() for _, o, _ in runs(u))


def period_of(name: str, started: float) -> int:
    """The schedule period a run belongs to: fire times are multiples of PERIOD plus the database's offset."""
    return int((started - offset_seconds(name, "purge_keys", min(SPREAD, PERIOD / 2))) // PERIOD)


def test_two_schedulers_purge_each_database_once_per_period_and_one_killed_leaves_its_work_to_the_other(
    fleet, tmp_path, pg_server_dsn
):
    config, urls = fleet
    first, second = scheduler(config, tmp_path, "first"), scheduler(config, tmp_path, "second")
    try:
        # both start, and every database is purged (its rows were due)
        wait_until(
            lambda: all(any(o == "succeeded" for _, o, _ in runs(u)) for u in urls.values()),
            timeout=20,
            what="a succeeded run in every database",
        )
        most = 0
        watch_until = time.monotonic() + 2 * PERIOD  # two more periods
        while time.monotonic() < watch_until:
            most = max(most, purging_now(pg_server_dsn))
            time.sleep(0.05)
        assert most <= 2 * LIMIT
        for name, url in urls.items():
            done = [period_of(name, s) for s, o, _ in runs(url) if o != "skipped"]
            assert len(done) == len(set(done)), (name, runs(url))  # never twice in one period
            assert len(done) >= 2, (name, runs(url))  # and in the periods watched
            assert all(o in ("succeeded", "budget_exhausted") for _, o, _ in runs(url)), runs(url)  # nothing skipped
        both = [(tmp_path / f"{n}.log").read_text().count("started by scheduler") for n in ("first", "second")]
        assert all(both), both  # the work is shared: each process ran some of it

        refill(urls)  # slow runs again, then kill the first while it holds some
        wait_until(lambda: running(urls) > LIMIT, timeout=2 * PERIOD + 2, what="the first mid-run")
        first.send_signal(signal.SIGKILL)
        first.wait(5)
        killed_at = time.time()
        for name, url in urls.items():
            wait_until(
                lambda url=url: (
                    any(s > killed_at and o == "succeeded" for s, o, _ in runs(url))
                    and not any(o == "running" and s < killed_at for s, o, _ in runs(url))
                ),
                timeout=4 * PERIOD + 8,
                what=f"{name} purged by the second scheduler after the kill",
            )
        died = [e for u in urls.values() for _, o, e in runs(u) if o == "failed"]
        assert died and all(e.startswith("runner died") for e in died), died  # its runs failed by the next one
        with psycopg.connect(urls["d0"]) as conn:
            left = conn.execute(f"SELECT count(*) FROM {KEYS} WHERE expires_at < now()").fetchone()[0]
        assert left == 0
    finally:
        stop(first, second)


def test_one_scheduler_never_runs_more_purges_at_once_than_its_limit(fleet, tmp_path, pg_server_dsn):
    config, urls = fleet
    child = scheduler(config, tmp_path, "alone")
    try:
        seen: list[int] = []
        deadline = time.monotonic() + 25
        # sample while the slow first runs go, LIMIT at a time, until every database was purged
        while not all(any(o == "succeeded" for _, o, _ in runs(u)) for u in urls.values()):
            assert time.monotonic() < deadline, f"not every database purged; purges at once: {seen}"
            seen.extend(purging_now(pg_server_dsn) for _ in range(5))
        assert max(seen) == LIMIT, seen  # up to the limit, never past it
    finally:
        stop(child)
