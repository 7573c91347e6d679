"""`idemdash migrate`, `check` and `purge` over several databases (IDEMDASH_CONFIG): a database that cannot be
reached, or fails, is reported in one line and the others still get their turn (--keep-going, the default);
--fail-fast stops there and names what it never attempted; a summary line ends the output; the exit status is
1 when any database failed, and 130 on Ctrl-C for purge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.queries.migrate import list_migrations
from tests.conftest import _dsn_for
from tests.test_databases import write_config
from tests.test_migrate import applied_versions, schema_exists
from tests.test_purges import add_expired

ROOT = Path(__file__).resolve().parent.parent
REFUSED = "postgresql://idemdash@127.0.0.1:1/nowhere?connect_timeout=2"  # nothing listens on port 1
# the middle database, unreachable two ways, and the start of its one-line cause
UNREACHABLE = {
    "refused": (lambda server: REFUSED, "cannot connect to the database: connection refused by 127.0.0.1 port 1"),
    "no database": (
        lambda server: _dsn_for(server, "no_such_database"),
        "cannot connect to the database: database 'no_such_database' does not exist",
    ),
}
ALL = [(m.version, m.name) for m in list_migrations()]


@pytest.fixture(autouse=True)
def _no_idemdash_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("IDEMDASH_") and name != "IDEMDASH_TEST_DATABASE_URL":
            monkeypatch.delenv(name)


@pytest.fixture(params=sorted(UNREACHABLE))
def middle(request, pg_server_dsn):
    url, cause = UNREACHABLE[request.param]
    return url(pg_server_dsn), cause


def fleet(monkeypatch, tmp_path, alpha: str, beta: str, gamma: str) -> None:
    path = write_config(
        tmp_path / "idemdash.toml", {"alpha": {"url": alpha}, "beta": {"url": beta}, "gamma": {"url": gamma}}
    )
    monkeypatch.setenv("IDEMDASH_CONFIG", path)


def lines_about(output: str) -> list[str]:
    """The per-database result lines, in order."""
    return [line for line in output.splitlines() if line.startswith("-- ")]


def purge_runs(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0]


# -- migrate -----------------------------------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize("argv", [[], ["--keep-going"]])
def test_migrate_goes_on_past_an_unreachable_database_and_exits_1(
    monkeypatch, tmp_path, empty_database_url, clone_of, middle, argv
):
    beta, cause = middle
    gamma = clone_of(None)
    fleet(monkeypatch, tmp_path, empty_database_url, beta, gamma)
    result = CliRunner().invoke(main, ["migrate", *argv])
    assert result.exit_code == 1, result.output
    for url in (empty_database_url, gamma):  # the first and the third are migrated
        with psycopg.connect(url) as conn:
            assert applied_versions(conn) == ALL
    about = lines_about(result.output)
    assert about[0] == f"-- alpha: migrated: {len(ALL)} migrations applied"
    assert about[1].startswith(f"-- beta: failed: {cause}")
    assert about[2] == f"-- gamma: migrated: {len(ALL)} migrations applied"
    last = result.output.splitlines()[-1]
    assert last.startswith(f"3 databases: 2 migrated, 1 failed: beta ({cause}")
    assert "not attempted" not in result.output

    again = CliRunner().invoke(main, ["migrate"])
    assert again.exit_code == 1
    assert again.output.splitlines()[-1].startswith("3 databases: 2 up to date, 1 failed: beta (")


def test_migrate_fail_fast_stops_at_the_unreachable_database_and_never_touches_the_rest(
    monkeypatch, tmp_path, empty_database_url, clone_of, middle
):
    beta, cause = middle
    gamma = clone_of(None)
    fleet(monkeypatch, tmp_path, empty_database_url, beta, gamma)
    result = CliRunner().invoke(main, ["migrate", "--fail-fast"])
    assert result.exit_code == 1, result.output
    with psycopg.connect(empty_database_url) as conn:
        assert applied_versions(conn) == ALL
    with psycopg.connect(gamma) as conn:
        assert not schema_exists(conn)
    assert "== database gamma" not in result.output
    assert [line.split(":")[0] for line in lines_about(result.output)] == ["-- alpha", "-- beta"]
    last = result.output.splitlines()[-1]
    assert last.startswith(f"3 databases: 1 migrated, 1 failed: beta ({cause}")
    assert last.endswith("; 1 not attempted (--fail-fast): gamma")


def test_a_failed_migration_is_that_database_s_failure_and_the_next_one_is_migrated(
    monkeypatch, tmp_path, empty_database_url, clone_of
):
    beta, gamma = clone_of(None), clone_of(None)
    with psycopg.connect(beta, autocommit=True) as conn:  # migrated once, then its first migration "edited"
        CliRunner().invoke(main, ["migrate", "--database-url", beta])
        conn.execute("UPDATE idemdash.schema_migration SET checksum = 'tampered' WHERE version = 1")
    fleet(monkeypatch, tmp_path, empty_database_url, beta, gamma)
    result = CliRunner().invoke(main, ["migrate"])
    assert result.exit_code == 1, result.output
    with psycopg.connect(gamma) as conn:
        assert applied_versions(conn) == ALL
    assert "Traceback" not in result.output
    assert lines_about(result.output)[1].startswith(
        "-- beta: failed: migrating idemdash's schema failed: migration 0001_init was changed after it was applied"
    )
    assert result.output.splitlines()[-1].startswith("3 databases: 2 migrated, 1 failed: beta (migrating")


def test_one_database_keeps_its_own_output_and_status(empty_database_url):
    result = CliRunner().invoke(main, ["migrate", "--database-url", REFUSED])
    assert result.exit_code == 1
    assert "connection refused by 127.0.0.1 port 1" in result.output
    assert "databases:" not in result.output and "-- " not in result.output  # no fleet summary for one


# -- check -------------------------------------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize("argv", [[], ["--fail-fast"]])
def test_check_reports_every_database_past_an_unreachable_one(
    monkeypatch, tmp_path, database_url, clone_of, pg_templates, middle, argv
):
    beta, cause = middle
    gamma = clone_of(pg_templates["enum"])
    fleet(monkeypatch, tmp_path, database_url, beta, gamma)
    result = CliRunner().invoke(main, ["check", *argv])
    assert result.exit_code == 1, result.output
    about = lines_about(result.output)
    assert about[0] in (
        "-- alpha: passed",
        "-- alpha: with findings: not ready, an index missing or a check failing: see its summary above",
    )
    assert about[1].startswith(f"-- beta: failed: {cause}")
    assert result.output.count("Recommended indexes") == (1 if argv else 2)
    last = result.output.splitlines()[-1]
    kind = about[0].split(": ")[1]  # alpha and gamma are copies of one database: the same report
    if argv:  # --fail-fast
        assert len(about) == 2 and "== database gamma" not in result.output
        assert last.startswith(f"3 databases: 1 {kind}, 1 failed: beta ({cause}")
        assert last.endswith("; 1 not attempted (--fail-fast): gamma")
    else:
        assert len(about) == 3 and about[2] == about[0].replace("alpha", "gamma") and "not attempted" not in last
        assert last.startswith(f"3 databases: 2 {kind}, 1 failed: beta ({cause}")


# -- purge -------------------------------------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize("argv", [[], ["--fail-fast"]])
def test_purge_goes_on_past_an_unreachable_database(
    monkeypatch, tmp_path, database_url, conn, clone_of, pg_templates, middle, argv
):
    beta, cause = middle
    gamma = clone_of(pg_templates["enum"])
    add_expired(conn, 30)
    with psycopg.connect(gamma, autocommit=True) as gamma_conn:
        add_expired(gamma_conn, 20)
    fleet(monkeypatch, tmp_path, database_url, beta, gamma)
    result = CliRunner().invoke(main, ["purge", *argv])
    assert result.exit_code == 1, result.output
    assert purge_runs(database_url) == 3  # keys, inbox, outbox
    assert conn.execute("SELECT count(*) FROM app.idempotency_request").fetchone()[0] == 0
    about = lines_about(result.output)
    assert about[0] == "-- alpha: purged"
    assert about[1].startswith(f"-- beta: failed: {cause}")
    last = result.output.splitlines()[-1]
    if argv:  # --fail-fast: gamma never touched
        assert purge_runs(gamma) == 0 and len(about) == 2
        assert last.startswith(f"3 databases: 1 purged, 1 failed: beta ({cause}")
        assert last.endswith("; 1 not attempted (--fail-fast): gamma")
    else:
        assert purge_runs(gamma) == 3 and about[2] == "-- gamma: purged"
        assert last.startswith(f"3 databases: 2 purged, 1 failed: beta ({cause}")


def test_purge_of_a_database_without_idemdash_s_schema_fails_it_alone(
    monkeypatch, tmp_path, database_url, clone_of, pg_templates
):
    beta, gamma = clone_of(None), clone_of(pg_templates["enum"])  # beta: reachable, never migrated
    fleet(monkeypatch, tmp_path, database_url, beta, gamma)
    result = CliRunner().invoke(main, ["purge", "--table", "keys"])
    assert result.exit_code == 1, result.output
    assert purge_runs(database_url) == 1 and purge_runs(gamma) == 1
    about = lines_about(result.output)
    assert about[0] == "-- alpha: purged" and about[2] == "-- gamma: purged"
    assert about[1].startswith("-- beta: failed: keys: ") and "idemdash" in about[1]
    assert result.output.splitlines()[-1].startswith("3 databases: 2 purged, 1 failed: beta (keys: ")


@pytest.mark.system  # over a second: a CLI subprocess interrupted mid-run
def test_ctrl_c_stops_a_fleet_purge_at_once_with_130(tmp_path, conn, database_url, clone_of, pg_templates):
    """Ctrl-C is no failure to go on past: the database in hand stops after its batch, no other is started."""
    gamma = clone_of(pg_templates["enum"])
    add_expired(conn, 20_000)
    path = write_config(
        tmp_path / "idemdash.toml", {"alpha": {"url": database_url}, "beta": {"url": REFUSED}, "gamma": {"url": gamma}}
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDEMDASH_")}
    env.update(IDEMDASH_CONFIG=path, IDEMDASH_PURGE_BATCH_SIZE="100", IDEMDASH_PURGE_PAUSE_MS="50")
    child = subprocess.Popen(
        [sys.executable, "-m", "idemdash", "purge", "--table", "keys"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not conn.execute("SELECT 1 FROM idemdash.purge_run WHERE rows_deleted > 0").fetchone():
            assert time.monotonic() < deadline, "the purge made no progress"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, err
    assert purge_runs(gamma) == 0
    assert "-- alpha: cancelled (Ctrl-C)" in out and "== database beta" not in out
    assert out.splitlines()[-1] == "3 databases: 1 cancelled (Ctrl-C); 2 not attempted (Ctrl-C): beta, gamma"
