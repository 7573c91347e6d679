"""pg-transactional-outbox driven for real, from the npm registry (tests/pgto/driver.cjs): the library's own code
creates its outbox and polling function, stores messages (one to run in an hour: its locked_until is a schedule, not
a lease) and runs a polling listener that is killed holding a message. Once that message's lease has run out, idemdash
reads what the library's own columns say: the killed worker's message stuck, the scheduled one pending and nobody's,
nothing in progress; on the database's /tables, on the fleet view and in /metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests import npm_packages
from tests.waiting import wait_until

pytestmark = pytest.mark.system  # npm, a Node process and a lease to wait out

DRIVER = Path(__file__).resolve().parent / "pgto" / "driver.cjs"
PACKAGES = ["pg-transactional-outbox@0.5.7", "pg@8.23.1"]


def _node_url(dsn: str) -> str:
    """The test database as node-postgres takes it: a URL (a socket folder as its host parameter)."""
    params = conninfo_to_dict(dsn)
    host = params.get("host", "localhost")
    auth = quote(params.get("user", "postgres")) + (f":{quote(params['password'])}" if params.get("password") else "")
    where = f"localhost:{params.get('port', 5432)}/{quote(params['dbname'])}"
    return f"postgresql://{auth}@{where}" + (f"?host={quote(host)}" if host.startswith("/") else "")


def _node(modules: Path, mode: str, url: str, **kwargs) -> subprocess.Popen | subprocess.CompletedProcess:
    command = ["node", str(DRIVER), str(modules), mode]
    env = {**os.environ, "DATABASE_URL": url}
    if mode == "listen":
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=True, **kwargs)


def _rows(url: str) -> dict[str, tuple]:
    with psycopg.connect(url) as conn:
        return {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT message_type, id::text, started_attempts, finished_attempts, locked_until > now(),"
                " processed_at IS NOT NULL FROM public.outbox"
            )
        }


@pytest.fixture
def killed_listener(empty_database_url):
    """The library's tables with its messages, after its listener was killed holding 'hang' and its lease ran out."""
    modules = npm_packages.install(".pgto", PACKAGES, marker="pg-transactional-outbox/package.json") / "node_modules"
    url = _node_url(empty_database_url)
    _node(modules, "setup", url)
    _node(modules, "store", url)
    listener = _node(modules, "listen", url)
    try:

        def hang_taken():
            rows = _rows(empty_database_url)
            return rows["hang"][1] == 1 and rows["ok"][4]  # 'hang' taken, 'ok' processed

        wait_until(hang_taken, 30, what="the listener to take 'hang' and finish 'ok'")
    finally:
        listener.send_signal(signal.SIGKILL)
        listener.wait(10)
    time.sleep(2.5)  # the 2 s lease of the message the killed worker held runs out
    return empty_database_url, _rows(empty_database_url)


def test_a_message_held_by_a_killed_worker_is_stuck_and_a_scheduled_one_is_nobodys(make_app, killed_listener):
    url, rows = killed_listener
    hang, later = rows["hang"], rows["later"]
    assert hang[1:4] == (1, 0, False)  # taken once, never finished, its lease over: the library's own columns
    assert later[1:4] == (0, 0, True)  # never taken; locked_until ahead is its schedule
    client = make_app(url, PROFILE="pg-transactional-outbox", APP_SCHEMA="public").test_client()
    states = {s["meaning"]: s["count"] for s in client.get("/api/v1/tables").get_json()["tables"][0]["states"]}
    pending = sum(1 for r in rows.values() if not r[4])
    assert (states["stuck"], states["in progress"], states["pending"], states["done"]) == (1, 0, pending, 1)
    stuck = client.get("/api/v1/tables/outbox?state=stuck").get_json()["items"]
    assert [i["row"]["message_type"] for i in stuck] == ["hang"]
    listed = client.get("/api/v1/tables/outbox?state=pending").get_json()["items"]
    assert "later" in {i["row"]["message_type"] for i in listed}


def test_the_fleet_view_and_metrics_show_the_killed_workers_message(make_app, killed_listener, tmp_path):
    url, rows = killed_listener
    config = tmp_path / "idemdash.toml"
    config.write_text(f'[databases.relay]\nurl = "{url}"\nprofile = "pg-transactional-outbox"\napp_schema = "public"\n')
    client = make_app(None, CONFIG=str(config), DATABASE_URL="").test_client()

    def answered():
        items = client.get("/api/v1/databases").get_json()["items"]
        return None if items[0]["pending"] else items[0]

    relay = wait_until(answered, 15, what="the relay database's first answer")
    assert (relay["profile"], relay["stuck"], relay["processing"], relay["outbox_pending"]) == (
        "pg-transactional-outbox",
        1,
        0,
        sum(1 for r in rows.values() if not r[4]),
    )
    assert relay["attention"][0] == "stuck_keys"
    scrape = client.get("/metrics").data.decode()
    # the series the shipped stuck alert watches, the same name as a reference database's
    assert 'idemdash_stuck{database="relay",profile="pg-transactional-outbox"} 1.0' in scrape
    assert 'idemdash_in_progress{database="relay",profile="pg-transactional-outbox"} 0.0' in scrape
    # its outbox alone (the library's inbox table is optional and not there): rows by state for the outbox only
    assert (
        'idemdash_profile_rows{database="relay",profile="pg-transactional-outbox",role="outbox",state="stuck",'
        'table="outbox"} 1.0'
        in scrape
        and 'role="inbox"' not in scrape
    )
