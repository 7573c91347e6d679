"""Each way a new deployment goes wrong, against a real server: a refused port, a wrong password, a missing
database, missing tables, missing grants. The page, /readyz, `idemdash check` and the log each name the cause
and its fix in one line, without a traceback, and never show the password.

The wrong password needs a server that asks for one: a PostgreSQL of this module's own whose pg_hba.conf wants
scram-sha-256 from everyone but its superuser (the session's server trusts local connections).
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import psycopg
import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from idemdash.cli import main
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import migrate
from tests import embedded_server

PASSWORD = "right-Horse-8attery"
WRONG = "wr0ng-Staple-93"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def password_server():
    """A server that wants a password from role idemdash_pw, with a database holding everything idemdash needs."""
    server = embedded_server.start("idemdash-failures-")
    try:
        admin_url = server.get_uri("postgres")
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE ROLE idemdash_pw LOGIN PASSWORD {}").format(sql.Literal(PASSWORD)))
            admin.execute("CREATE DATABASE orders OWNER idemdash_pw")
            hba = Path(admin.execute("SHOW hba_file").fetchone()[0])
        hba.write_text("local all postgres trust\nlocal all all scram-sha-256\n")
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute("SELECT pg_reload_conf()")
        socket_dir = conninfo_to_dict(admin_url)["host"]
        url = make_conninfo(host=socket_dir, dbname="orders", user="idemdash_pw", password=PASSWORD)
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
            create_app_schema(conn, Tables())
        yield url
    finally:
        embedded_server.discard(server)


@pytest.fixture
def role_without_grants(pg_server_dsn, database_url):
    """A role that may connect to the test database and read idemdash's schema, but not the application's tables."""
    role = f"idemdash_nogrant_{os.getpid()}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA idemdash, app TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA idemdash TO {}").format(sql.Identifier(role)))
    params = conninfo_to_dict(database_url)
    params["user"] = role
    yield make_conninfo(**params), role
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def no_app_tables(empty_database_url):
    """idemdash's schema is there (migrated), the application's tables are not."""
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrate(conn)
    return empty_database_url


@pytest.fixture(params=["refused", "wrong_password", "missing_database", "missing_tables", "missing_grants"])
def case(request, pg_server_dsn):
    """(name, url, the cause's kind, a fragment of its one line)"""
    name = request.param
    if name == "refused":
        port = _free_port()
        return (
            name,
            f"postgresql://idemdash:{PASSWORD}@127.0.0.1:{port}/orders?connect_timeout=2",
            "refused",
            f"connection refused by 127.0.0.1 port {port}: no PostgreSQL is listening there",
        )
    if name == "wrong_password":
        params = conninfo_to_dict(request.getfixturevalue("password_server"))
        params["password"] = WRONG
        return (name, make_conninfo(**params), "auth", "password authentication failed for user 'idemdash_pw'")
    if name == "missing_database":
        params = conninfo_to_dict(pg_server_dsn)
        params["dbname"] = "no_such_orders"
        return name, make_conninfo(**params), "no_database", "database 'no_such_orders' does not exist"
    if name == "missing_tables":
        return (
            name,
            request.getfixturevalue("no_app_tables"),
            "no_table",
            "app.idempotency_request does not exist: point IDEMDASH_APP_SCHEMA and IDEMDASH_KEYS_TABLE at your "
            "tables, or create the reference tables with `idemdash init-app-schema`",
        )
    url, role = request.getfixturevalue("role_without_grants")
    return (name, url, "privilege", f"GRANT SELECT ON app.idempotency_request TO {role};")


def _one_line_with(text: str, fragment: str) -> None:
    assert any(fragment in line for line in text.splitlines()), f"{fragment!r} not in one line of:\n{text}"


@pytest.mark.system
def test_each_failure_is_named_on_the_page_readyz_check_and_the_log(case, make_app, caplog):
    name, url, kind, fragment = case
    caplog.set_level(logging.WARNING)
    app = make_app(url, POOL_TIMEOUT_SECONDS=2, STATEMENT_TIMEOUT_MS=2000)
    client = app.test_client()

    # the page: the overview names the cause (an error page, or panels that say what they cannot read)
    for _ in range(2):
        page = client.get("/")
    text = BeautifulSoup(page.data, "html.parser").get_text("\n", strip=True)
    _one_line_with(text, fragment)
    assert "Traceback" not in text
    if kind in ("auth", "no_database"):
        assert page.status_code == 503
        # reloading every few seconds would not fix a wrong password or database name
        assert BeautifulSoup(page.data, "html.parser").find("meta", attrs={"http-equiv": "refresh"}) is None

    # /readyz: 503, the kind of cause, and the line
    ready = client.get("/readyz")
    assert ready.status_code == 503
    answer = ready.get_json()
    assert answer["cause"] == kind, answer
    assert fragment in answer["error"] and "\n" not in answer["error"]

    # idemdash check: a non-zero exit and the line, no traceback
    result = CliRunner().invoke(main, ["check", "--database-url", url])
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    _one_line_with(result.output, fragment)
    assert "Traceback" not in result.output

    # the log: the cause, once, however many requests and probes failed on it
    logged = [r.getMessage() for r in caplog.records if fragment in r.getMessage()]
    assert len(logged) == 1, logged
    assert not any(r.exc_info for r in caplog.records), "no traceback in the log"

    # the password never shows
    for shown in (page.get_data(as_text=True), ready.get_data(as_text=True), result.output, caplog.text):
        assert PASSWORD not in shown and WRONG not in shown


def test_missing_grants_name_each_grant_and_the_features_they_switch_off(role_without_grants, database_url):
    url, role = role_without_grants
    result = CliRunner().invoke(main, ["check", "--database-url", url])
    assert result.exit_code == 1
    for table in ("idempotency_request", "processed_message", "outbox_event"):
        assert f"fail     Role '{role}' may not read app.{table}" in result.output
        assert f'GRANT SELECT ON "app"."{table}" TO "{role}";' in result.output


def test_a_role_that_may_only_read_is_told_what_it_cannot_do(database_url):
    role = f"idemdash_viewer_{os.getpid()}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA idemdash, app TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA idemdash, app TO {}").format(sql.Identifier(role)))
    params = conninfo_to_dict(database_url)
    params["user"] = role
    try:
        result = CliRunner().invoke(main, ["check", "--database-url", make_conninfo(**params)])
        output = result.output
        # reading works, so nothing fails for it; the actions it cannot take are warned about, with the GRANT
        assert "may not read" not in output
        assert (
            f"warn     Reclassifying keys is switched off: role '{role}' may not update app.idempotency_request"
            in output
        )
        assert f'GRANT UPDATE ON "app"."idempotency_request" TO "{role}";' in output
        assert (
            f"warn     Purges of the inbox table fail: role '{role}' may not delete and lock rows of "
            "app.processed_message"
        ) in output
        assert f'GRANT DELETE, UPDATE ON "app"."processed_message" TO "{role}";' in output
        assert "warn     Role" in output and "may not write idemdash's own tables" in output
        # a viewer-only deployment says so, and UPDATE is then not needed
        read_only = CliRunner().invoke(
            main, ["check", "--database-url", make_conninfo(**params)], env={"IDEMDASH_READ_ONLY": "1"}
        )
        assert f"ok       Role '{role}' may not update app.idempotency_request: none needed" in read_only.output
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_readyz_is_ready_and_check_reports_the_privileges_when_all_is_well(client, database_url):
    assert client.get("/readyz").get_json() == {"status": "ok"}
    result = CliRunner().invoke(main, ["check", "--database-url", database_url])
    assert "ok       Role 'postgres' has every privilege idemdash uses" in result.output


def test_readyz_names_a_missing_idemdash_schema(make_app, empty_database_url):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        create_app_schema(conn, Tables())
    answer = make_app(empty_database_url).test_client().get("/readyz")
    assert answer.status_code == 503
    assert answer.get_json()["cause"] == "idemdash_schema"
    assert "run `idemdash migrate`" in answer.get_json()["error"]
