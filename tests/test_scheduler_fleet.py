"""`idemdash scheduler` over several databases (IDEMDASH_CONFIG) when one of them has a permanent error (a wrong
database name): the scheduler starts with the others, says the broken one's cause in one line, keeps its jobs,
and those run once the database exists; it refuses to start only when no database can be used."""

from __future__ import annotations

import logging
import os
from datetime import datetime, timezone

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from click.testing import CliRunner

from idemdash.cli import jobs as cli_jobs
from idemdash.cli import main
from idemdash.jobs.scheduler import build, last_outcomes
from tests.conftest import _clone_as, _drop, _dsn_for
from tests.test_databases import write_config
from tests.waiting import wait_until

JOBS = ("purge_keys", "snapshot")


@pytest.fixture(autouse=True)
def _no_idemdash_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("IDEMDASH_") and name != "IDEMDASH_TEST_DATABASE_URL":
            monkeypatch.delenv(name)


@pytest.fixture
def started(monkeypatch):
    """The command runs its scheduler in the background here, so the test can drive it and stop it."""
    schedulers: list[BackgroundScheduler] = []

    def run_in_background(config, targets, *, discover=False):
        scheduler = build(config, BackgroundScheduler, targets, discover=discover)
        scheduler.start(paused=True)
        schedulers.append(scheduler)

    monkeypatch.setattr(cli_jobs, "run_blocking", run_in_background)
    yield schedulers
    for scheduler in schedulers:
        scheduler.shutdown(wait=True)


def run_now(scheduler: BackgroundScheduler, database: str) -> None:
    """Run the database's purge of keys and its snapshot now, and wait for both outcomes."""
    before = last_outcomes(scheduler)
    now = datetime.now(timezone.utc)
    for base in JOBS:
        scheduler.get_job(f"{base}@{database}").modify(next_run_time=now)
    scheduler.resume()
    wait_until(
        lambda: all(
            last_outcomes(scheduler).get(f"{b}@{database}") not in (None, before.get(f"{b}@{database}")) for b in JOBS
        ),
        what=f"{database}'s jobs to run",
    )
    scheduler.pause()


def rows(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        return (
            conn.execute("SELECT count(*) FROM idemdash.purge_run WHERE outcome = 'succeeded'").fetchone()[0],
            conn.execute("SELECT count(*) FROM idemdash.metric_snapshot").fetchone()[0],
        )


@pytest.mark.system
def test_a_database_with_a_wrong_name_stops_none_of_the_others_and_its_jobs_run_once_it_exists(
    monkeypatch, tmp_path, database_url, clone_of, pg_templates, pg_server_dsn, started, caplog
):
    beta_name = f"idemdash_test_{os.getpid()}_sched_beta"
    beta = _dsn_for(pg_server_dsn, beta_name)
    gamma = clone_of(pg_templates["enum"])
    config = write_config(
        tmp_path / "idemdash.toml", {"alpha": {"url": database_url}, "beta": {"url": beta}, "gamma": {"url": gamma}}
    )
    monkeypatch.setenv("IDEMDASH_CONFIG", config)
    caplog.set_level(logging.INFO)

    result = CliRunner().invoke(main, ["scheduler"])
    assert result.exit_code == 0, result.output
    [scheduler] = started
    assert {f"{b}@{db}" for b in JOBS for db in ("alpha", "beta", "gamma")} <= {j.id for j in scheduler.get_jobs()}
    for db in ("alpha", "beta", "gamma"):
        run_now(scheduler, db)
    assert rows(database_url) == (1, 1) and rows(gamma) == (1, 1)  # the first and the third are served
    assert last_outcomes(scheduler)["snapshot@beta"].outcome == "failed"
    about_beta = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and "beta" in r.getMessage() and "purge" not in r.getMessage()
    ]
    assert len(about_beta) == 1, [r.getMessage() for r in about_beta]  # one line, not one per run
    assert (
        about_beta[0]
        .getMessage()
        .startswith(
            "database beta cannot be used yet; the scheduler starts with the "
            "others and runs its jobs once it is fixed: database "
            f"'{beta_name}' does not exist"
        )
    )

    _clone_as(pg_server_dsn, beta_name, pg_templates["enum"])  # created and migrated: no restart needed
    try:
        run_now(scheduler, "beta")
        assert last_outcomes(scheduler)["snapshot@beta"].outcome == "succeeded"
        assert rows(beta) == (1, 1)
    finally:
        scheduler.shutdown(wait=True)
        started.clear()
        _drop(pg_server_dsn, beta_name)


def test_the_scheduler_refuses_to_start_when_no_database_can_be_used(monkeypatch, tmp_path, pg_server_dsn, started):
    config = write_config(
        tmp_path / "idemdash.toml",
        {
            "alpha": {"url": _dsn_for(pg_server_dsn, "no_such_alpha")},
            "beta": {"url": _dsn_for(pg_server_dsn, "no_such_beta")},
        },
    )
    monkeypatch.setenv("IDEMDASH_CONFIG", config)
    result = CliRunner().invoke(main, ["scheduler"])
    assert result.exit_code == 1 and not started
    assert "the scheduler not started: no database can be used:" in result.output
    assert "database alpha: database 'no_such_alpha' does not exist" in result.output
    assert "database beta: database 'no_such_beta' does not exist" in result.output


def test_one_database_with_a_permanent_error_still_refuses_to_start(monkeypatch, pg_server_dsn, started):
    monkeypatch.setenv("IDEMDASH_DATABASE_URL", _dsn_for(pg_server_dsn, "no_such_only"))
    result = CliRunner().invoke(main, ["scheduler"])
    assert result.exit_code == 1 and not started
    assert "the scheduler not started: database 'no_such_only' does not exist" in result.output


@pytest.mark.system  # over a second: kept out of the fast loop
def test_readyz_and_health_of_the_broken_database_say_why_and_the_others_are_ready(
    tmp_path, database_url, pg_server_dsn, make_app
):
    config = write_config(
        tmp_path / "idemdash.toml",
        {"alpha": {"url": database_url}, "beta": {"url": _dsn_for(pg_server_dsn, "no_such_beta")}},
    )
    client = make_app(CONFIG=config, POOL_TIMEOUT_SECONDS=1).test_client()
    assert client.get("/db/alpha/readyz").status_code == 200
    beta = client.get("/db/beta/readyz")
    assert beta.status_code == 503
    assert beta.get_json()["cause"] == "no_database" and "'no_such_beta' does not exist" in beta.get_json()["error"]
    health = client.get("/db/beta/health")
    assert "no_such_beta" in health.get_data(as_text=True)
