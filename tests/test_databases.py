"""Several databases in one deployment (IDEMDASH_CONFIG): each database's own pages and numbers, bookmarkable
URLs, the all-databases overview that a database going down cannot hold up, the scheduler and the command line
on every database. Two real PostgreSQL servers: the session's, and one of this test's own that it stops."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from bs4 import BeautifulSoup
from click.testing import CliRunner
from psycopg import sql

from idemdash.cli import main
from idemdash.core import settings
from idemdash.core.databases import load_databases
from idemdash.core.settings import ConfigError
from idemdash.jobs.scheduler import build
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import migrate
from tests.test_keys import insert_key
from tests.test_metrics import scrape
from tests.waiting import wait_until


def prepare(server_dsn: str, name: str) -> str:
    """A database ``name`` on the server, with idemdash's schema and the reference tables; its DSN."""
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = psycopg.conninfo.make_conninfo(server_dsn, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, Tables())
    return dsn


def write_config(path: Path, databases: dict[str, dict[str, object]]) -> str:
    lines = []
    for name, values in databases.items():
        lines.append(f"[databases.{name}]")
        lines += [
            f"{key} = {value!r}" if not isinstance(value, str) else f'{key} = "{value}"'
            for key, value in values.items()
        ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def two(database_url, own_server, tmp_path, conn):
    """alpha: the test database on the session's server; beta: a database on a server this test may stop."""
    server_dsn, stop, start = own_server
    beta_url = prepare(server_dsn, "beta")
    for i in range(2):
        insert_key(conn, "orders", f"alpha-{i}")
    with psycopg.connect(beta_url, autocommit=True) as beta:
        for i in range(5):
            insert_key(beta, "payments", f"beta-{i}")
    path = write_config(
        tmp_path / "idemdash.toml",
        {
            "alpha": {"url": database_url},
            "beta": {"url": beta_url, "inbox_retention_days": 9, "environment": "production"},
        },
    )
    return {"config": path, "alpha": database_url, "beta": beta_url, "stop": stop, "start": start}


# -- the file ------------------------------------------------------------------------------------------------


def _load(path: Path, text: str) -> list:
    path.write_text(text)
    return load_databases(settings.load({}, CONFIG=str(path)))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "declares no database"),
        (
            "[databases.orders]\nurl = 'postgresql:///o'\ninbox_retention_days = 'soon'\n",
            "[databases.orders]: inbox_retention_days: expected a positive integer",
        ),
        (
            "[databases.orders]\nurl = 'postgresql:///o'\nsecret_key = 'x'\n",
            "[databases.orders]: unknown key 'secret_key'",
        ),
        ("[databases.orders]\napp_schema = 'x'\n", "[databases.orders]: url is required"),
        ("[databases.Orders]\nurl = 'postgresql:///o'\n", "[databases.Orders]: a database name is"),
        ("[databases.orders\nurl = 1\n", "not valid TOML"),
        ("[database.orders]\nurl = 'x'\n", "unknown table(s) database"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_the_database_and_the_key(tmp_path, text, fragment):
    path = tmp_path / "idemdash.toml"
    with pytest.raises(ConfigError) as caught:
        _load(path, text)
    message = str(caught.value)
    assert message.startswith(f"IDEMDASH_CONFIG {path}: ") and fragment in message and "\n" not in message


def test_each_database_takes_the_environment_as_defaults_and_its_own_keys_on_top(tmp_path):
    path = tmp_path / "idemdash.toml"
    path.write_text(
        "[databases.orders]\nurl = 'postgresql:///orders'\nread_url = 'postgresql:///orders-replica'\n"
        "purge_batch_size = 800\nread_only = true\n\n"
        "[databases.billing]\nurl = 'postgresql:///billing'\napp_schema = 'billing'\n"
    )
    orders, billing = load_databases(settings.load({"IDEMDASH_PURGE_BATCH_SIZE": "300"}, CONFIG=str(path)))
    assert (orders.name, billing.name) == ("orders", "billing")  # the file's order: the first is the default
    assert orders.settings.read_database_url == "postgresql:///orders-replica"
    assert (orders.settings.purge_batch_size, billing.settings.purge_batch_size) == (800, 300)
    assert (orders.settings.read_only, billing.settings.read_only) == (True, False)
    assert (orders.settings.app_schema, billing.settings.app_schema) == ("app", "billing")
    with pytest.raises(ConfigError, match="the file does not exist"):
        load_databases(settings.load({}, CONFIG=str(tmp_path / "missing.toml")))


# -- pages and JSON per database -------------------------------------------------------------------------------


@pytest.mark.system
def test_each_database_has_its_own_pages_and_numbers(two, make_app):
    client = make_app(CONFIG=two["config"]).test_client()
    assert client.get("/api/v1/db/alpha/overview").get_json()["keys"]["stuck"] == 2
    assert client.get("/api/v1/db/beta/overview").get_json()["keys"]["stuck"] == 5
    assert client.get("/api/v1/overview").get_json()["keys"]["stuck"] == 2  # plain URLs: the first database
    beta_keys = client.get("/api/v1/db/beta/keys?status=stuck").get_json()["items"]
    assert sorted(k["key"] for k in beta_keys) == [f"beta-{i}" for i in range(5)]
    assert client.get("/api/v1/db/beta/inbox").get_json()["retention_days"] == 9  # its own settings

    page = BeautifulSoup(client.get("/db/beta/keys?status=stuck").data, "html.parser")
    links = [a["href"] for a in page.select("#keys-panel a.key")]
    assert len(links) == 5 and all(link.startswith("/db/beta/keys/payments/") for link in links)
    # the navigation and the filter form stay in beta; the panel polls beta
    assert page.select_one('header nav a[aria-current="page"]')["href"] == "/db/beta/keys"
    assert page.select_one("#filters")["action"] == "/db/beta/keys"
    assert page.select_one("#keys-panel")["hx-get"].startswith("/db/beta/keys?")
    assert page.select_one(".db-switcher")["data-database"] == "beta"
    switch = {a.get_text(): a["href"] for a in page.select(".db-switcher li a")}
    assert switch["alpha"] == "/db/alpha/keys?status=stuck" and switch["beta"] == "/db/beta/keys?status=stuck"
    detail = BeautifulSoup(client.get(links[0]).data, "html.parser")
    assert detail.select_one("h1 .mono").get_text().startswith("beta-")
    # each database's own environment band: beta is production, alpha has none
    assert page.select_one(".env-band").get_text() == "production"
    assert page.title.get_text().startswith("[PRODUCTION] ")
    alpha = BeautifulSoup(client.get("/db/alpha/keys").data, "html.parser")
    assert alpha.select_one(".env-band") is None and not alpha.title.get_text().startswith("[")
    assert alpha.select_one(".topbar .dbname").get_text().endswith(two["alpha"].rsplit("dbname=", 1)[-1].split()[0])

    # the header's search looks in this database only, and its answer links stay in it
    found = client.get("/api/v1/db/beta/search?q=beta-3").get_json()
    assert found["match"] == "exact" and [i["url"] for i in found["items"]] == ["/db/beta/keys/payments/beta-3"]
    assert client.get("/api/v1/db/alpha/search?q=beta-3").get_json()["match"] == "none"
    jump = client.get("/db/beta/search?q=beta-3")
    assert jump.status_code in (302, 303) and jump.headers["Location"].endswith("/db/beta/keys/payments/beta-3")

    unknown = client.get("/api/v1/db/gamma/overview")
    assert unknown.status_code == 404 and "alpha, beta" in unknown.get_json()["error"]


@pytest.mark.system
def test_an_action_under_a_database_changes_that_database_only(two, make_app, conn):
    client = make_app(CONFIG=two["config"]).test_client()
    response = client.post(
        "/api/v1/db/beta/keys/reclassify",
        json={"scope": "payments", "key": "beta-0", "to": "abandoned", "reason": "INC-1"},
    )
    assert response.status_code == 200, response.get_json()
    with psycopg.connect(two["beta"]) as beta:
        assert (
            beta.execute(
                "SELECT status::text FROM app.idempotency_request WHERE idempotency_key = 'beta-0'"
            ).fetchone()[0]
            == "failed_final"
        )
        assert beta.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 0
    # the answer's links point at beta
    detail = client.get("/api/v1/db/beta/keys/payments/beta-0").get_json()
    assert detail["key"]["status"] == "failed_final"
    # a note too is written in beta, with its audit row
    note = client.post("/api/v1/db/beta/keys/notes", json={"scope": "payments", "key": "beta-1", "text": "INC-1 seen"})
    assert note.status_code == 201, note.get_json()
    with psycopg.connect(two["beta"]) as beta:
        assert beta.execute("SELECT count(*) FROM idemdash.audit_log WHERE action = 'note'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 0


@pytest.mark.system
def test_the_runbook_link_can_name_the_database(two, make_app):
    client = make_app(CONFIG=two["config"], RUNBOOK_URL="https://wiki/{database}/{scope}/{key}").test_client()
    assert client.get("/api/v1/db/beta/keys/payments/beta-1").get_json()["runbook_url"] == (
        "https://wiki/beta/payments/beta-1"
    )


def test_without_a_file_there_are_only_the_plain_routes(client):
    assert client.get("/api/v1/overview").status_code == 200
    assert client.get("/api/v1/db/default/overview").status_code == 404
    assert client.get("/db/default/keys").status_code == 404
    page = BeautifulSoup(client.get("/keys").data, "html.parser")
    assert page.select_one(".db-switcher") is None
    [row] = answered(client)
    assert row["name"] == "default" and row["reachable"] and not row["pending"]


# -- the all-databases overview --------------------------------------------------------------------------------


def answered(client, timeout: float = 15) -> list[dict]:
    """The all-databases rows once each has answered at least once (the refresh asks in the background)."""

    def rows():
        items = client.get("/api/v1/databases").get_json()["items"]
        return None if any(item["pending"] for item in items) else items

    return wait_until(rows, timeout, what="every database's first answer")


def row_of(client, name: str) -> dict:
    return {r["name"]: r for r in client.get("/api/v1/databases").get_json()["items"]}[name]


@pytest.mark.system
def test_one_database_down_marks_its_own_row_and_the_others_keep_working(two, make_app):
    app = make_app(CONFIG=two["config"], POOL_TIMEOUT_SECONDS=1, METRICS_CACHE_SECONDS=0, FLEET_REFRESH_SECONDS=1)
    app.extensions["idemdash_overview"].backoff_max = 2  # a failed database asked again within 2 s (not 5 min)
    client = app.test_client()
    rows = {r["name"]: r for r in answered(client)}
    assert (rows["alpha"]["stuck"], rows["beta"]["stuck"]) == (2, 5)
    assert rows["alpha"]["reachable"] and rows["beta"]["reachable"]
    assert (rows["alpha"]["environment"], rows["beta"]["environment"]) == (None, "production")
    assert scrape(client, "alpha")[("idemdash_stuck_keys_total", ())] == 2
    assert scrape(client, "beta")[("idemdash_stuck_keys_total", ())] == 5

    two["stop"]()
    beta = wait_until(
        lambda: (row := row_of(client, "beta")) and not row["reachable"] and row, what="the refresh to find beta down"
    )
    assert "stuck" not in beta and beta["failures"] >= 1 and beta["as_of"] is not None
    alpha = row_of(client, "alpha")
    assert alpha["reachable"] and alpha["stuck"] == 2
    # the cause in one line, as the header and the logs say it: which server, and that it is not answering
    assert "port" in beta["problem"] and "Error:" not in beta["problem"], beta["problem"]
    assert "[databases.beta] in IDEMDASH_CONFIG" in beta["problem"]  # the url to check is the file's
    # /metrics: beta is down, alpha's numbers are still there
    alpha_metrics, beta_metrics = scrape(client, "alpha"), scrape(client, "beta")
    assert alpha_metrics[("idemdash_database_up", ())] == 1 and alpha_metrics[("idemdash_stuck_keys_total", ())] == 2
    assert beta_metrics[("idemdash_database_up", ())] == 0 and ("idemdash_stuck_keys_total", ()) not in beta_metrics
    page = BeautifulSoup(client.get("/databases").data, "html.parser")
    beta_row = page.select_one('tr[data-database="beta"]')
    assert "unreachable" in beta_row["class"] and "unreachable" in beta_row.get_text()
    assert page.select_one('tr[data-database="alpha"] [data-metric="stuck"]').get_text() == "2"
    # alpha's pages work; beta's say it is unreachable
    assert client.get("/db/alpha/keys").status_code == 200
    assert client.get("/api/v1/db/beta/overview").status_code == 503

    two["start"]()  # back without a restart of the dashboard: the refresh asks it again (backed off, 2 s at most)
    beta = wait_until(
        lambda: (row := row_of(client, "beta")) and row["reachable"] and row, timeout=30, what="beta's row to come back"
    )
    assert beta["stuck"] == 5 and beta["failures"] == 0


# -- the scheduler and the command line ----------------------------------------------------------------------------


@pytest.mark.system
def test_the_scheduler_serves_every_database_and_one_failing_stops_none_of_the_others(two, conn):
    for i in range(3):
        insert_key(
            conn,
            "orders",
            f"done-{i}",
            "succeeded",
            locked_until=None,
            claimed_ago=timedelta(days=3),
            expires_in=timedelta(days=-1),
        )
    config = settings.load({}, CONFIG=two["config"], PURGE_PAUSE_MS=0)
    scheduler = build(config, BackgroundScheduler)
    jobs = {job.id for job in scheduler.get_jobs()}
    assert {"purge_keys@alpha", "purge_keys@beta", "snapshot@alpha", "snapshot@beta", "rollups@beta"} <= jobs
    two["stop"]()
    beta = scheduler.get_job("purge_keys@beta").func(*scheduler.get_job("purge_keys@beta").args)
    assert beta.outcome == "failed" and "unreachable" in beta.error
    alpha = scheduler.get_job("purge_keys@alpha").func(*scheduler.get_job("purge_keys@alpha").args)
    assert (alpha.outcome, alpha.rows) == ("succeeded", 3)


@pytest.mark.system
def test_migrate_check_and_purge_act_on_every_database_or_the_one_named(two, monkeypatch):
    monkeypatch.setenv("IDEMDASH_CONFIG", two["config"])
    monkeypatch.delenv("IDEMDASH_DATABASE_URL", raising=False)
    every = CliRunner().invoke(main, ["migrate"])
    assert every.exit_code == 0, every.output
    assert "== database alpha" in every.output and "== database beta" in every.output
    one = CliRunner().invoke(main, ["migrate", "--database", "beta"])
    assert one.exit_code == 0 and "alpha" not in one.output and "up to date" in one.output
    unknown = CliRunner().invoke(main, ["migrate", "--database", "gamma"])
    assert unknown.exit_code == 2 and "no database 'gamma'" in unknown.output and "alpha, beta" in unknown.output
    dry = CliRunner().invoke(main, ["purge", "--dry-run", "--table", "inbox", "--database", "beta"])
    assert dry.exit_code == 0, dry.output
    with psycopg.connect(two["beta"]) as beta:
        assert beta.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 1
    check = CliRunner().invoke(main, ["check", "--database", "alpha"])
    assert "Recommended indexes" in check.output and "beta" not in check.output


@pytest.mark.browser
def test_switching_database_in_the_header_keeps_the_view_and_the_url_reopens_it(two, make_app, live_server, page):
    from playwright.sync_api import expect

    base = live_server(make_app(CONFIG=two["config"]))
    page.goto(base + "/keys?status=stuck&scope=payments")  # the plain URL: alpha, where payments has no keys
    expect(page.locator(".db-switcher summary")).to_contain_text("alpha")
    expect(page.locator("#keys-panel")).to_contain_text("No stuck keys match")

    page.locator(".db-switcher summary").click()
    page.locator(".db-switcher a", has_text="beta").click()
    expect(page).to_have_url(f"{base}/db/beta/keys?status=stuck&scope=payments")
    expect(page.locator("#keys-panel tbody tr")).to_have_count(5)
    expect(page.locator(".db-switcher summary")).to_contain_text("beta")

    # filtering in place stays in beta, and the address bar keeps a URL that reopens this view
    page.locator('#keys-panel a[data-tab="processing"]').click()
    expect(page).to_have_url(f"{base}/db/beta/keys?status=processing&scope=payments")
    bookmark = page.url
    page.goto(base + "/")
    page.goto(bookmark)
    expect(page.locator("#keys-panel tbody tr")).to_have_count(5)
    expect(page.locator('#keys-panel a[data-tab="processing"]')).to_have_attribute("aria-current", "page")
    expect(page.locator(".db-switcher summary")).to_contain_text("beta")


def test_a_databases_own_lease_decides_its_stuck_tab_as_it_decides_its_list(two, make_app):
    """beta's keys were claimed 20 minutes ago with no lease end: stuck under the default 300 s lease, not under
    beta's own 3,600 s. The stuck tab's count and the stuck list read the same lease: beta's."""
    with psycopg.connect(two["beta"], autocommit=True) as beta:
        for i in range(3):
            insert_key(beta, "refunds", f"no-lease-{i}", locked_until=None, claimed_ago=timedelta(minutes=20))
    path = write_config(
        Path(two["config"]).with_name("lease.toml"),
        {"alpha": {"url": two["alpha"]}, "beta": {"url": two["beta"], "default_lease_seconds": 3600}},
    )
    client = make_app(CONFIG=path).test_client()
    page = BeautifulSoup(client.get("/db/beta/keys?status=stuck").data, "html.parser")
    listed = {row.get_text(" ", strip=True) for row in page.select("#keys-panel tbody tr")}
    assert not any("no-lease" in text for text in listed)
    # beta's 5 keys from the fixture have a lease that ran out 10 minutes ago: those are beta's stuck keys
    assert page.select_one("[data-count='stuck']").get_text(strip=True) == "5"
