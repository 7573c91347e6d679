"""The purge's latency budget (jobs/latency.py, jobs/probe.py): a run looks at the application's own backends in
pg_stat_activity while it works; with nobody there it paces exactly as with the budget off, and under load it backs
off when the application's statements wait longer for the WAL during batches than between them (a longer pause
first, then smaller batches) or wait for a lock the purge holds (smaller batches first); it speeds up again when
they recover, and records what it saw on the run."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.core import parsers, settings
from idemdash.core.settings import ConfigError
from idemdash.jobs.latency import DECIDE_LOOKS, MIN_BASELINE_MS, MIN_DUTY, MIN_QUIET, LatencyGovernor, Look, p99
from idemdash.jobs.purge_run import run_purge
from tests.test_purges import KEYS, _slow_deletes, add_expired, count, make_target


def _looks(ms: float, busy: bool, n: int = DECIDE_LOOKS, active: int = 2, locks: int = 0) -> list[Look]:
    return [Look(active, 1 if ms else 0, locks, ms, busy=busy)] * n


def _governor() -> LatencyGovernor:
    governor = LatencyGovernor(budget=1.5, floor=100, ceiling=1000, max_duty=0.5)
    governor.observe(_looks(1.0, busy=False, n=MIN_QUIET), 1000)  # the application's waits between batches: 1 ms
    assert governor.baseline == 1.0
    return governor


def test_with_nobody_else_there_the_governor_never_decides_anything():
    governor = LatencyGovernor(budget=1.5, floor=100, ceiling=1000, max_duty=0.5)
    for size in (1000, 500, 1000):  # the run's own size (a slow batch halved it, a normal one grew it back)
        governor.observe(_looks(0.0, busy=True, n=500, active=0) + _looks(0.0, busy=False, n=500, active=0), size)
        assert (governor.size, governor.duty) == (1000, 0.5)  # it allows the configured size and duty cycle
    assert (governor.application_seen, governor.backoffs, governor.looks) == (False, 0, 3000)
    assert governor.recorded() == (None, None)


def test_waits_for_the_wal_lengthen_the_pause_before_they_shrink_the_batch_and_the_batch_comes_back_first():
    governor = _governor()
    sizes = []
    for _ in range(7):  # 3 ms during batches against a 1.5 ms target: back off each window
        governor.observe(_looks(3.0, busy=True), governor.size)
        sizes.append((governor.size, governor.duty))
    # the duty cycle halves to a quarter of the configured one (the pause after a batch grows fourfold), and only
    # then the batch halves, to the floor; then the duty cycle again
    assert sizes == [(1000, 0.25), (1000, 0.125), (500, 0.125), (250, 0.125), (125, 0.125), (100, 0.125), (100, 0.0625)]
    assert (governor.backoffs, governor.lock_backoffs) == (7, 0)
    governor.observe(_looks(1.4, busy=True), governor.size)  # within the budget, not far below it: hold
    assert (governor.size, governor.duty) == (100, 0.0625)
    steps = []
    for _ in range(5):  # 1 ms: well below, speed up: the batch by a quarter first, then the duty cycle
        governor.observe(_looks(1.0, busy=True), governor.size)
        steps.append((governor.size, governor.duty))
    assert steps == [(125, 0.0625), (156, 0.0625), (195, 0.0625), (243, 0.0625), (303, 0.0625)]
    for _ in range(6):  # 378, 472, 590, 737, 921, 1000
        governor.observe(_looks(1.0, busy=True), governor.size)
    assert (governor.size, governor.duty) == (1000, 0.0625)  # the whole batch back before any of the duty cycle
    governor.observe(_looks(1.0, busy=True), governor.size)
    assert (governor.size, governor.duty) == (1000, 0.125)
    for _ in range(40):
        governor.observe(_looks(1.0, busy=True), governor.size)
    assert (governor.size, governor.duty) == (1000, 0.5)  # never past the configured size and duty cycle
    for _ in range(20):
        governor.observe(_looks(50.0, busy=True), governor.size)
    assert (governor.size, governor.duty) == (100, MIN_DUTY)  # never below the floor and the least duty cycle


def test_a_few_slow_waits_are_the_tail_a_quantile_allows_and_more_back_off():
    governor = _governor()
    governor.observe(_looks(1.0, busy=True, n=DECIDE_LOOKS - 4) + _looks(9.0, busy=True, n=4), 1000)
    assert (governor.size, governor.backoffs) == (1000, 0)  # 4 of 50 over: the 90th percentile is still 1 ms
    governor.observe(_looks(1.0, busy=True, n=DECIDE_LOOKS - 6) + _looks(9.0, busy=True, n=6), 1000)
    assert (governor.size, governor.duty, governor.backoffs) == (1000, 0.25, 1)  # a longer pause, the same batch
    # an application that never waits between batches: its baseline is the least one, not zero
    calm = LatencyGovernor(budget=1.5, floor=100, ceiling=1000, max_duty=0.5)
    calm.observe(_looks(0.0, busy=False, n=MIN_QUIET), 1000)
    assert calm.baseline == MIN_BASELINE_MS
    calm.observe(_looks(0.7, busy=True), 1000)
    assert calm.backoffs == 0


def test_an_application_statement_waiting_on_the_purges_lock_backs_off_once_a_batch():
    governor = _governor()
    governor.observe([Look(2, 0, 0, 0.0, busy=True)] * 10 + [Look(2, 0, 1, 2.0, busy=True)], 1000)
    assert governor.backoffs == 0  # a lock wait shorter than the target (and than LOCK_WAIT_MS)
    governor.observe([Look(2, 0, 1, 40.0, busy=True)] * 5, 1000)  # the same wait, seen five times in one batch
    assert (governor.size, governor.backoffs, governor.lock_backoffs) == (500, 1, 1)
    governor.observe([Look(2, 0, 1, 60.0, busy=True)], 500)
    assert (governor.size, governor.lock_backoffs) == (250, 2)
    assert p99([float(i) for i in range(1, 101)]) == 99.0


@pytest.mark.parametrize("raw, value", [("1.5", 1.5), ("2x", 2.0), (" 3 X ", 3.0), ("off", 0.0), ("0", 0.0)])
def test_the_budget_setting_takes_a_multiple_or_off(raw, value):
    assert parsers.latency_budget(raw) == value


@pytest.mark.parametrize("raw", ["1", "0.5", "fast", "-2"])
def test_a_budget_that_cannot_be_met_or_read_is_refused(raw):
    with pytest.raises(ValueError, match="expected a multiple"):
        parsers.latency_budget(raw)
    with pytest.raises(ConfigError, match="IDEMDASH_PURGE_LATENCY_BUDGET"):
        settings.load({"IDEMDASH_PURGE_LATENCY_BUDGET": raw})


def _pacing(conn, run_id):
    return conn.execute(
        "SELECT latency_budget, probe_baseline_ms, probe_p99_ms, probes, backoffs, final_batch_size,"
        " final_duty_cycle, app_backends, lock_backoffs FROM idemdash.purge_run WHERE run_id = %s",
        (run_id,),
    ).fetchone()


def _wal_ballast(conn, rows):
    """Every batch also writes about ``rows`` KB of WAL (a statement trigger), so that whatever commits beside a batch
    waits for it to reach the disk: what made the commit probe this replaced back off on an idle database."""
    conn.execute("CREATE TABLE app.ballast (id int, filler text)")
    _slow_deletes(
        conn, f"INSERT INTO app.ballast SELECT g, repeat(md5(g::text), 32) FROM generate_series(1, {rows}) g;"
    )


def _run(target, **kwargs):
    sizes: list[int] = []
    rows = [0]

    def on_batch(_n, total):
        sizes.append(total - rows[0])
        rows[0] = total

    return run_purge(target, "keys", dry_run=False, started_by="test", on_batch=on_batch, **kwargs), sizes


@pytest.mark.system  # a few seconds: a purge whose batches each write megabytes of WAL
def test_an_idle_database_is_not_throttled_however_slow_the_purges_own_commits(conn, database_url, make_app):
    add_expired(conn, 2000)
    _wal_ballast(conn, 3000)
    result, sizes = _run(make_target(database_url, PURGE_BATCH_SIZE=200))
    assert (result.outcome, result.rows) == ("succeeded", 2000)
    budget, between, during, looks, backoffs, size, duty, seen, lock_backoffs = _pacing(conn, result.run_id)
    # it looked throughout, saw nobody, and chose the unthrottled pace: no backoff, the configured duty cycle, the
    # batch size the duty cycle alone would use (the configured one, unless a batch was slower than usual, which
    # the pacer answers alike with the budget off)
    assert budget == 1.5 and looks > 0 and seen == 0
    assert (backoffs, lock_backoffs, between, during, duty) == (0, 0, None, None, 50)
    assert sizes[0] == max(sizes) == 200 and size <= 200
    assert count(conn, KEYS) == 0
    client = make_app(database_url).test_client()
    cell = (
        BeautifulSoup(client.get("/purges").data, "html.parser")
        .select_one(f"tr[data-run-id='{result.run_id}'] td[data-pacing]")
        .get_text(" ", strip=True)
    )
    assert "Nobody else used the database while it ran" in cell and "so it never slowed down" in cell, cell
    (shown,) = [r for r in client.get("/api/v1/purges").get_json()["items"] if r["run_id"] == result.run_id]
    assert (shown["app_backends"], shown["backoffs"], shown["lock_backoffs"]) == (0, 0, 0)
    # what never watched records nothing: a run of one batch, a dry run, and the budget switched off
    add_expired(conn, 600)
    for target, dry_run in (
        (make_target(database_url, PURGE_BATCH_SIZE=5000), False),
        (make_target(database_url, PURGE_BATCH_SIZE=200), True),
        (make_target(database_url, PURGE_BATCH_SIZE=200, PURGE_LATENCY_BUDGET=0.0), False),
    ):
        other = run_purge(target, "keys", dry_run=dry_run, started_by="test")
        assert other.outcome == "succeeded"
        assert _pacing(conn, other.run_id) == (None,) * 9
        if not dry_run:
            add_expired(conn, 600)


class LockingApplication(threading.Thread):
    """An application transaction that needs the keys table to hold still (as CREATE INDEX or LOCK ... IN SHARE MODE
    does), again and again: it waits for any batch in flight, behind the purge's lock."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.waited = url, threading.Event(), 0

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True, application_name="shop-api") as conn:
            while not self.stop.is_set():
                with conn.transaction():
                    conn.execute(f"LOCK TABLE {KEYS} IN SHARE MODE")
                self.waited += 1
                time.sleep(0.002)


@pytest.mark.system  # a few seconds: batches that hold their locks for 60 ms each
def test_a_loaded_database_backs_off_when_the_applications_statements_wait_on_the_purge(conn, database_url, make_app):
    add_expired(conn, 6000)
    _slow_deletes(conn, "PERFORM pg_sleep(0.06);")  # every batch holds its locks for 60 ms or more
    apps = [LockingApplication(database_url) for _ in range(2)]
    for app in apps:
        app.start()
    try:
        result, sizes = _run(make_target(database_url, PURGE_BATCH_SIZE=400))
    finally:
        for app in apps:
            app.stop.set()
        for app in apps:
            app.join(10)
    assert (result.outcome, result.rows) == ("succeeded", 6000)
    assert all(app.waited > 0 for app in apps)
    budget, _between, during, looks, backoffs, size, duty, seen, lock_backoffs = _pacing(conn, result.run_id)
    assert seen >= 1 and looks > 0 and during is not None and during >= 5
    assert lock_backoffs >= 2 and backoffs >= lock_backoffs
    assert sizes[0] == 400 and min(sizes[:-1]) < 400, sizes  # the batches shrank (then the duty cycle, at the floor)
    assert size < 400 or duty < 50
    cell = (
        BeautifulSoup(make_app(database_url).test_client().get("/purges").data, "html.parser")
        .select_one(f"tr[data-run-id='{result.run_id}'] td[data-pacing]")
        .get_text(" ", strip=True)
    )
    assert "because an application statement waited for a lock the purge held" in cell, cell
