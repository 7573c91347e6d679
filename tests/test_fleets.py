"""Fleets in IDEMDASH_CONFIG: databases found on a server by a pattern, or listed by a URL template, each an ordinary
database named <fleet>/<database> (pages, JSON, actions, the command line, metrics, the scheduler); found again on a
schedule; a directory of files; every mistake of the config one line.

Real databases on the session's server, created under a name of this test's own so the pattern matches them only."""

from __future__ import annotations

import itertools
import logging
import os
import threading
from pathlib import Path

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from bs4 import BeautifulSoup
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.core.databases import load_config
from idemdash.core.settings import ConfigError
from idemdash.dashboard.targets import THREAD_NAME
from idemdash.jobs.scheduler import build
from idemdash.queries.fleets import resolve
from tests.conftest import _clone_as, _drop, _dsn_for
from tests.fleet import closed_port
from tests.test_keys import insert_key
from tests.waiting import wait_until

MEMBERS = 5
_counter = itertools.count()


@pytest.fixture
def fleet(pg_server_dsn, pg_templates, tmp_path):
    """MEMBERS databases named <prefix>_<i> on the test server, the i-th with i + 1 stuck keys; ``make(i)`` adds one,
    ``drop(i)`` drops one. A config file with fleet "orders" over ``<prefix>_*``."""
    prefix = f"fleet{os.getpid()}x{next(_counter)}"
    made: list[str] = []

    def make(i: int) -> str:
        name = f"{prefix}_{i}"
        _clone_as(pg_server_dsn, name, pg_templates["enum"])
        made.append(name)
        with psycopg.connect(_dsn_for(pg_server_dsn, name), autocommit=True) as conn:
            for k in range(i + 1):
                insert_key(conn, "payments", f"k-{i}-{k}")
        return name

    for i in range(MEMBERS):
        make(i)
    config = tmp_path / "fleet.toml"
    config.write_text(
        f'[fleets.orders]\nurl = "{pg_server_dsn}"\ndatabases = "{prefix}_*"\n'
        'environment = "production"\ninbox_retention_days = 9\n'
    )
    yield {
        "config": str(config),
        "prefix": prefix,
        "make": make,
        "server": pg_server_dsn,
        "drop": lambda i: _drop(pg_server_dsn, f"{prefix}_{i}"),
    }
    for name in made:
        _drop(pg_server_dsn, name)


def _config(path: Path, text: str) -> dict:
    path.write_text(text)
    return settings.load({}, CONFIG=str(path))


# -- members by pattern, everywhere ------------------------------------------------------------------------------------


def test_a_fleet_by_pattern_is_every_matching_database_of_its_server(fleet):
    membership = resolve(load_config(settings.load({}, CONFIG=fleet["config"])))
    p = fleet["prefix"]
    assert membership.names == [f"orders/{p}_{i}" for i in range(MEMBERS)]
    member = membership.databases[2].settings
    # the fleet's keys apply to every member; the url is the server's with the member's database
    assert (member.environment.split(":")[0], member.inbox_retention_days) == ("production", 9)
    assert f"dbname={p}_2" in member.database_url


@pytest.mark.system
def test_a_member_has_its_pages_json_and_actions_under_its_fleet(fleet, make_app):
    p = fleet["prefix"]
    client = make_app(CONFIG=fleet["config"], METRICS_CACHE_SECONDS=0).test_client()
    base = f"/db/orders/{p}_2"
    assert client.get(f"/api/v1{base}/overview").get_json()["keys"]["stuck"] == 3
    assert client.get(f"/api/v1/db/orders/{p}_4/overview").get_json()["keys"]["stuck"] == 5
    assert client.get(f"/api/v1{base}/inbox").get_json()["retention_days"] == 9  # the fleet's setting

    page = BeautifulSoup(client.get(f"{base}/keys?status=stuck").data, "html.parser")
    links = [a["href"] for a in page.select("#keys-panel tbody a[href*='/keys/payments/']")]
    assert len(links) == 3 and all(link.startswith(f"{base}/keys/payments/") for link in links), links
    assert page.select_one("#filters")["action"] == f"{base}/keys"
    detail = BeautifulSoup(client.get(f"{base}/keys/payments/k-2-0").data, "html.parser")
    actions = [form["action"] for form in detail.select("form[action]")]
    assert actions and all(action.startswith(f"{base}/") for action in actions), actions

    response = client.post(
        f"/api/v1{base}/keys/reclassify",
        json={"scope": "payments", "key": "k-2-0", "to": "abandoned", "reason": "INC-1"},
    )
    assert response.status_code == 200, response.get_json()
    with psycopg.connect(_dsn_for(fleet["server"], f"{p}_2")) as conn:
        assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 1
    with psycopg.connect(_dsn_for(fleet["server"], f"{p}_1")) as conn:
        assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 0

    text = client.get("/metrics").data.decode()
    assert f'idemdash_database_up{{database="orders/{p}_3"}} 1.0' in text
    assert client.get("/db/orders/keys").status_code == 404  # a fleet is not a database


def test_the_command_line_takes_a_member_by_its_name(fleet, monkeypatch):
    p = fleet["prefix"]
    monkeypatch.setenv("IDEMDASH_CONFIG", fleet["config"])
    monkeypatch.delenv("IDEMDASH_DATABASE_URL", raising=False)
    check = CliRunner().invoke(main, ["check", "--database", f"orders/{p}_1"])
    assert "Recommended indexes" in check.output and f"{p}_2" not in check.output, check.output
    unknown = CliRunner().invoke(main, ["check", "--database", f"orders/{p}_9"])
    assert unknown.exit_code == 2 and f"no database 'orders/{p}_9'" in unknown.output


# -- membership changes ------------------------------------------------------------------------------------------------


@pytest.mark.system
def test_a_database_created_later_joins_and_one_dropped_leaves_at_the_next_discovery(fleet, make_app):
    p = fleet["prefix"]
    app = make_app(CONFIG=fleet["config"], FLEET_REFRESH_THREADS=2)
    client = app.test_client()
    assert client.get(f"/api/v1/db/orders/{p}_7/overview").status_code == 404
    assert client.get(f"/api/v1/db/orders/{p}_0/overview").status_code == 200  # its pool opens
    before = app.extensions["idemdash_targets"]
    assert before[f"orders/{p}_0"].pool_is_open()
    fleet["make"](7)
    fleet["drop"](0)
    app.extensions["idemdash_fleets"].discover()  # what the discovery thread does every FLEET_DISCOVER_SECONDS

    assert client.get(f"/api/v1/db/orders/{p}_7/overview").get_json()["keys"]["stuck"] == 8
    gone = client.get(f"/api/v1/db/orders/{p}_0/overview")
    assert gone.status_code == 404 and f"no database 'orders/{p}_0'" in gone.get_json()["error"]
    assert client.get(f"/db/orders/{p}_0/keys").status_code == 404
    names = [item["name"] for item in client.get("/api/v1/databases").get_json()["items"]]
    assert sorted(names) == [f"orders/{p}_{i}" for i in (1, 2, 3, 4, 7)]  # the page's order is worst first
    # a new dict replaced the old, which stays whole for a request that still holds it; the dropped one's pool closed
    assert list(before) == [f"orders/{p}_{i}" for i in range(MEMBERS)]
    assert not before[f"orders/{p}_0"].pool_is_open()  # the budget forgot it and its pool closed
    assert app.extensions["idemdash_targets"][f"orders/{p}_1"] is before[f"orders/{p}_1"]


def test_the_scheduler_schedules_a_joining_members_jobs_and_removes_a_leaving_ones(fleet):
    p = fleet["prefix"]
    scheduler = build(settings.load({}, CONFIG=fleet["config"]), BackgroundScheduler)
    ids = {job.id for job in scheduler.get_jobs()}
    assert f"purge_keys@orders/{p}_0" in ids and "discover_fleets" in ids
    fleet["make"](6)
    fleet["drop"](0)
    scheduler.get_job("discover_fleets").func()
    ids = {job.id for job in scheduler.get_jobs()}
    assert f"purge_keys@orders/{p}_6" in ids and not any(i.endswith(f"@orders/{p}_0") for i in ids)


@pytest.mark.system
def test_a_fleet_whose_server_is_down_at_start_is_served_once_it_answers(database_url, tmp_path, make_app, caplog):
    port = closed_port()
    config = tmp_path / "down.toml"
    config.write_text(
        f'[databases.alpha]\nurl = "{database_url}"\n\n[fleets.far]\n'
        f'url = "postgresql://idemdash@127.0.0.1:{port}/postgres?connect_timeout=2"\n'
        'databases = "orders_*"\n'
    )
    with caplog.at_level(logging.WARNING):
        app = make_app(CONFIG=str(config))
    lines = [r.getMessage() for r in caplog.records if "fleet far" in r.getMessage()]
    assert len(lines) == 1 and "cannot ask 127.0.0.1" in lines[0] and "no members until it answers" in lines[0]
    client = app.test_client()
    assert client.get("/api/v1/overview").status_code == 200  # the others are served
    missing = client.get("/api/v1/db/far/orders_1/overview")
    assert missing.status_code == 404 and "its server does not answer now" in missing.get_json()["error"]
    caplog.clear()
    app.extensions["idemdash_fleets"].discover()  # still down: not said again
    assert not [r for r in caplog.records if "fleet far" in r.getMessage()]


# -- a list of names, a directory --------------------------------------------------------------------------------------


def test_a_fleet_by_template_lists_its_members_without_asking_a_server(tmp_path):
    values = _config(
        tmp_path / "t.toml",
        '[databases.alpha]\nurl = "postgresql:///alpha"\n\n[fleets.shards]\n'
        'url_template = "postgresql://idemdash@shard-{name}.internal/app"\nnames = ["eu1", "us1"]\n'
        "purge_batch_size = 700\n",
    )
    databases = load_config(values).listed()
    assert [d.name for d in databases] == ["alpha", "shards/eu1", "shards/us1"]
    assert databases[2].settings.database_url == "postgresql://idemdash@shard-us1.internal/app"
    assert databases[1].settings.purge_batch_size == 700 and databases[0].settings.purge_batch_size != 700


def test_a_directory_of_files_is_read_in_name_order_and_a_name_is_unique_across_them(tmp_path):
    (tmp_path / "b.toml").write_text('[databases.beta]\nurl = "postgresql:///beta"\n')
    (tmp_path / "a.toml").write_text('[databases.alpha]\nurl = "postgresql:///alpha"\n')
    (tmp_path / "notes.txt").write_text("not read")
    assert [d.name for d in load_config(settings.load({}, CONFIG=str(tmp_path))).listed()] == ["alpha", "beta"]
    (tmp_path / "c.toml").write_text('[fleets.alpha]\nurl_template = "postgresql:///{name}"\nnames = ["x"]\n')
    with pytest.raises(ConfigError) as raised:
        load_config(settings.load({}, CONFIG=str(tmp_path)))
    assert str(raised.value) == (
        f"IDEMDASH_CONFIG {tmp_path / 'c.toml'}: [fleets.alpha]: the name 'alpha' is declared "
        f"twice, in {tmp_path / 'a.toml'} and in {tmp_path / 'c.toml'}: a database's and a "
        "fleet's names are unique across the files"
    )


# -- mistakes: one line each, all of them ------------------------------------------------------------------------------

SERVER = 'url = "postgresql://h/postgres"\n'


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        (SERVER + 'databases = "orders_*"\nsecret_key = "x"\n', "[fleets.f]: unknown key 'secret_key'"),
        (SERVER + 'databases = "orders_[a"\n', "[fleets.f]: databases: bad pattern 'orders_[a'"),
        (SERVER + 'databases = "orders/*"\n', "[fleets.f]: databases: bad pattern 'orders/*'"),
        (
            SERVER + 'databases = "o_*"\nurl_template = "postgresql://h/{name}"\nnames = ["a"]\n',
            "[fleets.f]: either url and databases (a server and a pattern of names) or url_template and names",
        ),
        ("inbox_retention_days = 3\n", "[fleets.f]: give url and databases"),
        (SERVER, "[fleets.f]: databases is required with url"),
        ('url_template = "postgresql://h/{name}"\n', "[fleets.f]: names is required with url_template"),
        ('url_template = "postgresql://h/app"\nnames = ["a"]\n', "[fleets.f]: url_template: it must contain {name}"),
        (
            'url_template = "postgresql://h/{db}"\nnames = ["a"]\n',
            "[fleets.f]: url_template: only {name} may be filled",
        ),
        (
            'url_template = "postgresql://h/{name}"\nnames = ["a", "a/b"]\n',
            "[fleets.f]: names: 'a/b': a member's name is",
        ),
        ('url_template = "postgresql://h/{name}"\nnames = ["a", "a"]\n', "[fleets.f]: names: listed twice: a"),
        ('url_template = "postgresql://h/{name}"\nnames = []\n', "[fleets.f]: names: expected a non-empty list"),
        (
            SERVER + 'databases = "o_*"\ninbox_retention_days = "soon"\n',
            "[fleets.f]: inbox_retention_days: expected a positive integer",
        ),
    ],
)
def test_each_bad_fleet_entry_is_one_line_naming_the_file_the_fleet_and_the_key(tmp_path, table, fragment):
    path = tmp_path / "idemdash.toml"
    with pytest.raises(ConfigError) as raised:
        load_config(_config(path, "[fleets.f]\n" + table))
    message = str(raised.value)
    assert message.startswith(f"IDEMDASH_CONFIG {path}: ") and fragment in message and "\n" not in message, message


def test_a_fleet_and_a_database_of_one_name_clash(tmp_path):
    path = tmp_path / "idemdash.toml"
    with pytest.raises(ConfigError, match=r"\[fleets.orders\]: the name 'orders' is declared twice, in "):
        load_config(
            _config(
                path,
                '[databases.orders]\nurl = "postgresql:///o"\n\n[fleets.orders]\n'
                'url_template = "postgresql:///{name}"\nnames = ["eu"]\n',
            )
        )


def test_every_mistake_of_the_config_is_listed_at_once(tmp_path):
    path = tmp_path / "idemdash.toml"
    with pytest.raises(ConfigError) as raised:
        load_config(
            _config(
                path,
                '[databases.alpha]\nurl = "postgresql:///a"\nread_only = "maybe"\nfoo = 1\n\n'
                '[databases.Beta]\nurl = "postgresql:///b"\n\n'
                '[fleets.f]\nurl = "postgresql://h/postgres"\ndatabases = "[x"\n\n[other]\n',
            )
        )
    lines = str(raised.value).splitlines()
    assert len(lines) == 5, lines
    assert all(line.startswith(f"IDEMDASH_CONFIG {path}: ") for line in lines)
    for fragment in (
        "unknown table(s) other",
        "[databases.alpha]: read_only:",
        "[databases.alpha]: unknown key 'foo'",
        "[databases.Beta]: a database name is",
        "[fleets.f]: databases: bad pattern",
    ):
        assert sum(fragment in line for line in lines) == 1, (fragment, lines)


def test_with_only_a_fleet_whose_server_is_down_the_app_starts_and_says_why_pages_are_empty(tmp_path, make_app):
    config = tmp_path / "only.toml"
    config.write_text(
        f'[fleets.far]\nurl = "postgresql://idemdash@127.0.0.1:{closed_port()}/postgres"\ndatabases = "orders_*"\n'
    )
    client = make_app("postgresql:///unused", CONFIG=str(config)).test_client()
    assert client.get("/healthz").status_code == 200
    overview = client.get("/api/v1/overview")
    assert overview.status_code == 503 and "no fleet's server has answered" in overview.get_json()["error"]
    error = overview.get_json()["error"]
    assert "cannot ask 127.0.0.1" in error and "the url of [fleets.far]" in error
    page = client.get("/databases")
    assert page.status_code == 503 and b"no fleet's server has answered" in page.data


@pytest.mark.system
def test_the_discovery_thread_starts_at_the_first_request_and_finds_a_new_database(fleet, make_app):
    p = fleet["prefix"]
    app = make_app(CONFIG=fleet["config"], FLEET_DISCOVER_SECONDS=1, FLEET_REFRESH_THREADS=1)
    assert not _discovery_threads(app)  # building the app starts nothing
    client = app.test_client()
    client.get("/healthz")
    assert len(_discovery_threads(app)) == 1
    fleet["make"](8)
    wait_until(
        lambda: client.get(f"/api/v1/db/orders/{p}_8/overview").status_code == 200, 15, what="the new database to join"
    )
    app.extensions["idemdash_fleets"].close()
    assert not _discovery_threads(app)


def _discovery_threads(app) -> list:
    thread = app.extensions["idemdash_fleets"]._thread
    return [t for t in threading.enumerate() if t.name == THREAD_NAME and t is thread]
