"""The purge's latency budget (jobs/latency.py, jobs/probe.py): a run times a tiny write and commit of its own
while it works, backs off (smaller batches, then a lower duty cycle) when that probe slows past the budget, speeds
up again when it recovers, and records what it measured on the run."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.core import parsers, settings
from idemdash.core.settings import ConfigError
from idemdash.jobs.latency import BASELINE_SAMPLES, DECIDE_SAMPLES, MIN_DUTY, LatencyGovernor, p99
from idemdash.jobs.purge_run import run_purge
from tests.test_purges import KEYS, _slow_deletes, add_expired, count, make_target


def _window(ms: float, quiet: bool = False) -> list[tuple[float, bool]]:
    return [(ms, quiet)] * DECIDE_SAMPLES


def test_the_governor_halves_the_batch_then_the_duty_cycle_and_gives_back_duty_first():
    governor = LatencyGovernor(budget=1.5, floor=100, ceiling=1000, max_duty=0.5)
    governor.set_baseline([(1.0, True)] * BASELINE_SAMPLES)
    assert governor.baseline == 1.0
    sizes = []
    for _ in range(6):  # 3 ms against a 1.5 ms target: back off each window
        governor.observe(_window(3.0), governor.size)
        sizes.append((governor.size, governor.duty))
    assert sizes == [(500, 0.5), (250, 0.5), (125, 0.5), (100, 0.5), (100, 0.25), (100, 0.125)]
    assert governor.backoffs == 6
    governor.observe(_window(1.4), governor.size)  # within the budget, not far below it: hold
    assert (governor.size, governor.duty) == (100, 0.125)
    steps = []
    for _ in range(5):  # 1 ms: well below, speed up: the duty cycle back first, then the batch by a quarter
        governor.observe(_window(1.0), governor.size)
        steps.append((governor.size, governor.duty))
    assert steps == [(100, 0.25), (100, 0.5), (125, 0.5), (156, 0.5), (195, 0.5)]
    for _ in range(40):
        governor.observe(_window(1.0), governor.size)
    assert (governor.size, governor.duty) == (1000, 0.5)  # never past the configured size and duty cycle
    for _ in range(20):
        governor.observe(_window(50.0), governor.size)
    assert (governor.size, governor.duty) == (100, MIN_DUTY)  # never below the floor and the least duty cycle


def test_one_slow_probe_in_a_hundred_is_the_p99_s_share_and_two_back_off():
    governor = LatencyGovernor(budget=1.5, floor=100, ceiling=1000, max_duty=0.5)
    governor.set_baseline([(1.0, True)] * BASELINE_SAMPLES)
    governor.observe([(1.0, False)] * 40 + [(9.0, False)] + [(1.0, False)] * 40, 1000)
    assert (governor.size, governor.backoffs) == (1000, 0)
    governor.observe([(1.0, False)] * 10 + [(9.0, False)], 1000)  # a second one within the last hundred
    assert (governor.size, governor.backoffs) == (500, 1)
    governor.observe([(1.0, False)] * 10, 500, waiting=(7, 4.0))  # one still waiting past the target: one alone
    assert governor.backoffs == 1
    governor.observe([(9.0, False)], 500, waiting=(7, 6.0))  # with a slow one beside it
    assert (governor.size, governor.backoffs) == (250, 2)
    governor.observe([(1.0, False)] * 5, 250, waiting=(7, 30.0))  # the same stalled probe is not counted twice
    assert governor.backoffs == 2
    governor.observe([(1.0, False)] * 5, 250, waiting=(8, 4.6))  # another, three times the target: alone
    assert (governor.size, governor.backoffs) == (125, 3)


def test_the_baseline_follows_quiet_probes_but_not_a_purges_aftermath():
    governor = LatencyGovernor(budget=1.5, floor=100, ceiling=1000, max_duty=0.5)
    governor.observe(_window(9.0), 1000)  # no baseline yet: nothing decided
    assert (governor.size, governor.backoffs) == (1000, 0)
    governor.set_baseline([(1.0, True)] * BASELINE_SAMPLES)
    governor.observe([(1.6, True)] * 300, 1000)  # the application got busier: the baseline rises with it
    assert governor.baseline == 1.6
    governor.observe([(30.0, True)] * 300, 1000)  # but never past twice the first one
    assert governor.baseline == 2.0
    governor.observe(_window(1.0), 400)  # a slow batch or a timeout lowered the size: the governor starts there
    assert governor.size <= 500
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
    return conn.execute("SELECT latency_budget, probe_baseline_ms, probe_p99_ms, probes, backoffs, final_batch_size,"
                        " final_duty_cycle FROM idemdash.purge_run WHERE run_id = %s", (run_id,)).fetchone()


@pytest.mark.system  # over a second: a purge run with its probe thread
def test_a_run_records_what_its_probe_measured_and_leaves_no_probe_row(conn, database_url, make_app):
    add_expired(conn, 3000)
    result = run_purge(make_target(database_url, PURGE_BATCH_SIZE=100), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 3000)
    budget, baseline, during, probes, backoffs, size, duty = _pacing(conn, result.run_id)
    assert budget == 1.5 and baseline > 0 and during > 0 and probes >= BASELINE_SAMPLES
    assert backoffs >= 0 and 0 < size <= 100 and 0 < duty <= 50
    assert conn.execute("SELECT count(*) FROM idemdash.purge_probe").fetchone()[0] == 0
    assert count(conn, KEYS) == 0
    client = make_app(database_url).test_client()
    (shown,) = [r for r in client.get("/api/v1/purges").get_json()["items"] if r["run_id"] == result.run_id]
    assert (shown["latency_budget"], shown["probes"], shown["backoffs"]) == (1.5, probes, backoffs)
    cell = BeautifulSoup(client.get("/purges").data, "html.parser").select_one(
        f"tr[data-run-id='{result.run_id}'] td[data-pacing]").get_text(" ", strip=True)
    assert f"{baseline:.1f} → {during:.1f} ms" in cell
    # the budget in words, whichever side of it this run's commits fell
    assert "within 1.5× their usual time" in cell or "more than the 1.5× allowed" in cell, cell
    # what never probed records nothing: a run of one batch, a dry run, and the budget switched off
    add_expired(conn, 3000)
    for target, dry_run in ((make_target(database_url, PURGE_BATCH_SIZE=5000), False),
                            (make_target(database_url, PURGE_BATCH_SIZE=100), True),
                            (make_target(database_url, PURGE_BATCH_SIZE=100, PURGE_LATENCY_BUDGET=0.0), False)):
        other = run_purge(target, "keys", dry_run=dry_run, started_by="test")
        assert other.outcome == "succeeded"
        assert _pacing(conn, other.run_id) == (None,) * 7
        if not dry_run:
            add_expired(conn, 3000)


@pytest.mark.system  # about 10 s: the slowness, then the climb back a quarter at a time
def test_the_run_backs_off_while_commits_slow_down_and_speeds_up_when_they_recover(conn, database_url):
    """Real slowness: another transaction holds the probe's row for 60 ms at a time, so each probe's write waits;
    then it stops. The batch sizes the run used (from on_batch) shrink while it lasts and grow back after; the test
    cancels the run once they have."""
    add_expired(conn, 100_000)
    _slow_deletes(conn, "PERFORM pg_sleep(0.01);")  # every batch takes 10 ms or more, whatever its size
    target = make_target(database_url, PURGE_BATCH_SIZE=400, PURGE_DUTY_CYCLE=100, PURGE_LATENCY_BUDGET=5.0)
    batches: list[tuple[float, int]] = []  # (when, rows so far)
    recovered = threading.Event()
    result_box: list = []
    worker = threading.Thread(target=lambda: result_box.append(run_purge(
        target, "keys", dry_run=False, started_by="test", cancel=lambda: "test" if recovered.is_set() else None,
        on_batch=lambda _n, rows: batches.append((time.monotonic(), rows)))))
    worker.start()

    def sizes() -> list[tuple[float, int]]:
        seen = list(batches)
        return [(when, rows - before) for (when, rows), (_, before) in zip(seen, [(0.0, 0), *seen], strict=False)]

    with psycopg.connect(database_url, autocommit=True) as blocker:
        deadline = time.monotonic() + 20
        # its baseline first: the probes before the second batch
        def probes() -> int:
            return blocker.execute("SELECT max(probes) FROM idemdash.purge_probe").fetchone()[0] or 0

        while probes() < 2 * BASELINE_SAMPLES:
            assert time.monotonic() < deadline, "the run never started probing"
            time.sleep(0.01)
        slow_from = time.monotonic()
        while time.monotonic() - slow_from < 1.0:
            with blocker.transaction():
                blocker.execute("SELECT probes FROM idemdash.purge_probe FOR UPDATE")
                time.sleep(0.06)
            time.sleep(0.005)
        slow_until = time.monotonic()
    while worker.is_alive() and not recovered.is_set() and time.monotonic() < slow_until + 20:
        if [size for when, size in sizes() if when > slow_until].count(400) >= 3:
            recovered.set()
        time.sleep(0.02)
    recovered.set()
    worker.join(30)
    (result,) = result_box
    assert result.outcome == "cancelled", result
    during = [size for when, size in sizes() if slow_from + 0.3 < when < slow_until]
    after = [size for when, size in sizes() if when > slow_until]
    assert during and max(during) < 400, sizes()
    assert min(after) < 400 and after.count(400) >= 3, sizes()  # it grew back, step by step
    budget, baseline, p99_during, probes, backoffs, size, duty = _pacing(conn, result.run_id)
    assert backoffs >= 2 and p99_during >= 50 and baseline < 50 and budget == 5.0
    assert size == 400 and duty == 100
    assert count(conn, KEYS) == 100_000 - result.rows


def test_a_probe_that_cannot_write_leaves_the_run_to_its_duty_cycle(conn, database_url):
    add_expired(conn, 1500)
    conn.execute("DROP TABLE idemdash.purge_probe")  # as with a role that may not write idemdash's schema
    result = run_purge(make_target(database_url, PURGE_BATCH_SIZE=100), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 1500)
    budget, baseline, _during, probes, backoffs, size, _duty = _pacing(conn, result.run_id)
    assert (budget, baseline, probes, backoffs, size) == (1.5, None, 0, 0, 100)
    assert count(conn, KEYS) == 0
