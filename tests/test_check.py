"""`idemdash check`: every recommended index with its statement and why, whether it exists, --apply-indexes, exit
codes."""

from __future__ import annotations

import psycopg
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import ADVICE

TABLES = Tables()


def _check(url: str, *args: str):
    return CliRunner().invoke(main, ["check", "--database-url", url, *args])


def _index_names(conn: psycopg.Connection) -> dict[str, bool]:
    rows = conn.execute("""
        SELECT ic.relname, i.indisvalid FROM pg_index i
        JOIN pg_class ic ON ic.oid = i.indexrelid
        JOIN pg_class t ON t.oid = i.indrelid
        WHERE t.relnamespace = 'app'::regnamespace""").fetchall()
    return dict(rows)


def test_lists_every_recommended_index_with_statement_and_why(database_url):
    result = _check(database_url)
    assert result.exit_code == 1, result.output
    for advice in ADVICE.values():
        name = advice.index_name(TABLES)
        line = next(line for line in result.output.splitlines() if name in line and "CREATE" not in line)
        assert line.startswith("missing"), line
        assert advice.as_text(TABLES) + ";" in result.output
        assert f"why: {advice.why}" in result.output
    assert f"0 of {len(ADVICE)} recommended indexes present" in result.output
    assert "idemdash check --apply-indexes" in result.output


def test_apply_indexes_builds_them_and_then_passes(database_url, conn):
    result = _check(database_url, "--apply-indexes")
    assert result.exit_code == 0, result.output
    assert result.output.count("building ") == len(ADVICE)
    existing = _index_names(conn)
    for advice in ADVICE.values():
        assert existing.get(advice.index_name(TABLES)) is True, advice.name

    again = _check(database_url)
    assert again.exit_code == 0, again.output
    assert f"{len(ADVICE)} of {len(ADVICE)} recommended indexes present" in again.output
    assert "missing " not in again.output
    assert "nothing to build" in _check(database_url, "--apply-indexes").output


def test_invalid_index_is_reported_and_rebuilt(database_url, conn):
    advice = ADVICE["index_keys_leases"]
    name = advice.index_name(TABLES)
    conn.execute(advice.as_text(TABLES))
    # what a cancelled CREATE INDEX CONCURRENTLY leaves behind
    conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (f"app.{name}",))
    result = _check(database_url)
    assert result.exit_code == 1
    assert any(line.startswith("invalid") and name in line for line in result.output.splitlines())
    rebuilt = _check(database_url, "--apply-indexes")
    assert f"rebuilding invalid {name}" in rebuilt.output
    assert _index_names(conn)[name] is True


def test_health_failures_make_it_fail_too(empty_database_url):
    # application tables but no idemdash schema: the /health 'migrations' check fails
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        create_app_schema(conn, TABLES, "text")
    result = _check(empty_database_url, "--apply-indexes")
    assert result.exit_code == 1, result.output
    assert "fail     idemdash's own schema is not installed" in result.output
    assert "fix: idemdash migrate" in result.output
    assert "1 health check failed" in result.output


def test_missing_tables_are_said_and_fail(empty_database_url):
    result = _check(empty_database_url, "--apply-indexes")
    assert result.exit_code == 1
    assert result.output.count("no table") >= len(ADVICE)
    assert "does not exist: check IDEMDASH_APP_SCHEMA" in result.output


def test_unreachable_database_is_a_clear_error():
    result = _check("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
    assert result.exit_code != 0
    assert "cannot connect" in result.output
