"""How a purge run paces itself (duty cycle, backing off from slow batches, timeouts), forgets its old history, and
shows its progress on a terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

import pytest

from idemdash.core import settings
from idemdash.core.settings import ConfigError
from idemdash.jobs.pacing import SETTLE_BATCHES, Pacer
from idemdash.jobs.purge_run import run_purge
from idemdash.queries.target import Target

ROOT = Path(__file__).resolve().parent.parent
KEYS = "app.idempotency_request"


def make_target(url: str, **overrides) -> Target:
    overrides.setdefault("PURGE_PAUSE_MS", 0)
    return Target.from_settings(settings.load({}, DATABASE_URL=url, **overrides))


def add_expired(conn, n: int) -> None:
    conn.execute(
        f"INSERT INTO {KEYS} (idempotency_scope, idempotency_key, request_hash, status, created_at,"
        " expires_at) SELECT 's', 'k' || lpad(g::text, 6, '0'), 'h', 'succeeded', now() - interval '3 days',"
        " now() - interval '1 day' FROM generate_series(1, %s) g",
        (n,),
    )


# ---------------------------------------------------------------------------------------------------------------
# the pacer


def test_the_duty_cycle_pauses_in_proportion_to_the_batch():
    half = Pacer(batch_size=1000, floor=100, duty_cycle=0.5, pause_ms=0)
    assert half.after_batch(0.2, 1000) == pytest.approx(0.2)
    quarter = Pacer(batch_size=1000, floor=100, duty_cycle=0.25, pause_ms=0)
    assert quarter.after_batch(0.2, 1000) == pytest.approx(0.6)  # batches a quarter of the time
    whole = Pacer(batch_size=1000, floor=100, duty_cycle=1.0, pause_ms=0)
    assert whole.after_batch(0.2, 1000) == 0
    jittered = Pacer(batch_size=1000, floor=100, duty_cycle=1.0, pause_ms=100)
    assert all(0.05 <= jittered.after_batch(0.2, 1000) <= 0.15 for _ in range(50))


def test_a_batch_slower_than_usual_halves_the_next_and_pauses_longer_then_the_size_grows_back():
    pacer = Pacer(batch_size=1000, floor=100, duty_cycle=0.5, pause_ms=0)
    for _ in range(SETTLE_BATCHES):
        assert pacer.after_batch(0.1, 1000) == pytest.approx(0.1)
    assert (pacer.size, pacer.slow_batches) == (1000, 0)
    # five times slower than usual for its size: lock waits, I/O
    assert pacer.after_batch(0.5, 1000) == pytest.approx(0.5 + 0.5)
    assert (pacer.size, pacer.slow_batches) == (500, 1)
    # a half batch costs more per row than a whole one (each batch has a fixed cost): it is not compared with
    # the whole ones, and being normal for its size, the size grows back
    assert pacer.after_batch(0.08, 500) == pytest.approx(0.08)
    assert (pacer.size, pacer.slow_batches) == (1000, 1)
    pacer.after_batch(0.5, 1000)  # still slow at the full size: halves again
    assert pacer.size == 500
    pacer.after_batch(0.07, 500)
    pacer.after_batch(0.1, 1000)  # normal again
    assert pacer.size == 1000  # never beyond the configured size
    # the usual speed was not dragged up by the slow batches
    assert pacer.usual[1000] == pytest.approx(0.0001)


def test_small_batches_that_cost_more_per_row_do_not_shrink_the_size_to_the_floor():
    # each batch has a fixed cost (planning, round trips, the commit): 10 ms, plus 3 µs a row
    def cost(rows: int) -> float:
        return 0.010 + rows * 0.000003

    pacer = Pacer(batch_size=1000, floor=100, duty_cycle=1.0, pause_ms=0)
    for _ in range(SETTLE_BATCHES):
        pacer.after_batch(cost(1000), 1000)
    pacer.after_batch(5 * cost(1000), 1000)  # two slow ones in a row (a checkpoint, say)
    pacer.after_batch(5 * cost(500), 500)
    assert pacer.size == 1000  # the 500-row one had no usual of its own yet: normal, and the size grew back
    for _ in range(20):
        size = pacer.size
        pacer.after_batch(cost(size), size)
    assert (pacer.size, pacer.slow_batches) == (1000, 1)


def test_a_small_last_batch_says_nothing_about_speed():
    pacer = Pacer(batch_size=1000, floor=100, duty_cycle=0.5, pause_ms=0)
    for _ in range(SETTLE_BATCHES):
        pacer.after_batch(0.1, 1000)
    assert pacer.after_batch(0.05, 3) == pytest.approx(0.05)  # a slow-looking tail: only the duty cycle
    assert (pacer.size, pacer.slow_batches) == (1000, 0)


def test_a_timeout_halves_the_size_for_the_rest_of_the_run_down_to_the_floor():
    pacer = Pacer(batch_size=800, floor=100, duty_cycle=1.0, pause_ms=0)
    assert pacer.after_timeout() and pacer.size == 400
    for _ in range(10):
        pacer.after_batch(0.01, 400)
    assert pacer.size == 400  # a size that timed out would again
    assert pacer.after_timeout() and pacer.after_timeout() and pacer.size == 100
    assert not pacer.after_timeout()


@pytest.mark.parametrize("raw", ["0", "101", "half", "-5"])
def test_an_impossible_duty_cycle_is_refused_naming_the_variable(raw):
    with pytest.raises(ConfigError, match="IDEMDASH_PURGE_DUTY_CYCLE: expected a percentage from 1 to 100"):
        settings.load({"IDEMDASH_PURGE_DUTY_CYCLE": raw})
    assert settings.load({"IDEMDASH_PURGE_DUTY_CYCLE": "25%"}).purge_duty_cycle == 25


@pytest.mark.system  # over a second: a paced purge run
def test_a_run_keeps_its_batches_to_the_duty_cycle(conn, database_url):
    add_expired(conn, 12)
    # every batch takes at least 0.1 s on the server
    conn.execute(
        "CREATE FUNCTION app.slow_purge() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN PERFORM pg_sleep(0.1); RETURN NULL; END $$"
    )
    conn.execute(
        f"CREATE TRIGGER slow_purge AFTER DELETE ON {KEYS} FOR EACH STATEMENT EXECUTE FUNCTION app.slow_purge()"
    )
    ends: list[float] = []
    result = run_purge(
        make_target(database_url, PURGE_BATCH_SIZE=3, PURGE_DUTY_CYCLE=50),
        "keys",
        dry_run=False,
        started_by="test",
        on_batch=lambda b, r: ends.append(time.monotonic()),
    )
    assert (result.outcome, result.batches, result.rows) == ("succeeded", 5, 12)
    # between two batches' ends: a pause at least as long as the batch (50 %), then the next batch
    gaps = [b - a for a, b in pairwise(ends)]
    assert all(gap >= 2 * 0.1 * 0.95 for gap in gaps), gaps


# ---------------------------------------------------------------------------------------------------------------
# idemdash's own history


def add_run(conn, table, days_ago, outcome="succeeded", dry_run=False) -> int:
    return conn.execute(
        "INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, dry_run, outcome, started_by)"
        " VALUES (%s, now() - %s * interval '1 day', now() - %s * interval '1 day', %s, %s, 'scheduler')"
        " RETURNING run_id",
        (table, days_ago, days_ago, dry_run, outcome),
    ).fetchone()[0]


def test_a_run_forgets_its_tables_runs_past_the_history_retention_but_the_last_success_and_dry_run(conn, database_url):
    last_success = add_run(conn, "keys", 200)
    last_dry_run = add_run(conn, "keys", 150, dry_run=True)
    old = [
        add_run(conn, "keys", 120, "failed"),
        add_run(conn, "keys", 100, "budget_exhausted"),
        add_run(conn, "keys", 95, "skipped"),
    ]
    detached = add_run(conn, "keys", 110, "failed")
    conn.execute(
        "INSERT INTO idemdash.purge_partition (run_id, table_name, partition_schema, partition_name,"
        " parent_schema, parent_name, bound_to, action) VALUES (%s, 'keys', 'app', 'p', 'app', 'k', now(),"
        " 'detached')",
        (detached,),
    )
    recent = add_run(conn, "keys", 80, "failed")
    other_table = add_run(conn, "inbox", 300, "failed")
    result = run_purge(
        make_target(database_url, PURGE_HISTORY_RETENTION_DAYS=90), "keys", dry_run=False, started_by="test"
    )
    left = {r[0] for r in conn.execute("SELECT run_id FROM idemdash.purge_run")}
    assert not set(old) & left
    # the latest success and dry run stay (/purges shows them), and a run whose detached partition the next run
    # of its table must finish; other tables' runs are theirs to forget
    assert {last_success, last_dry_run, detached, recent, other_table, result.run_id} <= left


# ---------------------------------------------------------------------------------------------------------------
# progress on a terminal


@pytest.mark.system
def test_on_a_terminal_the_progress_line_updates_in_place(conn, database_url):
    add_expired(conn, 25)
    leader, follower = pty.openpty()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "IDEMDASH_PURGE_BATCH_SIZE": "2",
        "IDEMDASH_PURGE_PAUSE_MS": "0",
        "COLUMNS": "120",
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "idemdash", "purge", "--table", "keys", "--database-url", database_url],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    output = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            output += chunk
        assert child.wait(30) == 0, child.stderr.read()
    finally:
        os.close(leader)
        child.stderr.close()
    text = output.decode()
    updates = [part for part in text.split("\r") if part.strip().startswith("keys:")]
    # one update per batch, each rewriting the same line; then one newline before the summary
    assert len(updates) >= 13, text
    assert "rows deleted" in updates[-1] and "rows/s" in updates[-1] and "(13 batches)" in updates[-1]
    assert "\n" not in "".join(updates[:-1]).replace("\r\n", "")
    assert conn.execute(f"SELECT count(*) FROM {KEYS}").fetchone()[0] == 0
