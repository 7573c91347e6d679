"""The purges of every database (`/databases/purges`, `GET /api/v1/databases/purges`): each database's tables with
their last run and failures, worst first, read from the all-databases background refresh so that a hung host never
holds a request up. Real databases on the session's server and a hung host (a socket that never answers)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard.all_databases import DatabaseRow
from idemdash.dashboard.fleet_purges import purge_rows
from idemdash.queries.purge_history import PurgeRun, PurgeTableStatus
from tests.fleet import HungHost
from tests.test_databases import write_config
from tests.waiting import wait_until

# half the hung host's 2 s connect deadline: a request that waited for it could not answer this soon
SOON = 1.0
ERROR = "canceling statement due to lock timeout"


@pytest.fixture
def hung_host():
    host = HungHost()
    yield host
    host.close()


def _runs(url: str, values: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted, "
            "dry_run, outcome, error, started_by, method) VALUES " + values
        )


@pytest.mark.system
def test_the_failing_database_comes_first_the_hung_one_says_so_and_no_request_waits(
    pg_templates, clone_of, tmp_path, hung_host, make_app
):
    urls = {name: clone_of(pg_templates["enum"]) for name in ("alpha", "bravo", "charlie")}
    # alpha: its keys purge succeeded yesterday, then failed twice (the last run with a two-line error); its inbox
    # purge is fine. bravo: never purged. charlie: one good keys purge. zulu: a host that never answers.
    _runs(
        urls["alpha"],
        f"""
        ('keys', now() - interval '30 hours', now() - interval '30 hours', 2, 500, false, 'succeeded', null,
         'scheduler', 'due_index'),
        ('keys', now() - interval '2 hours', now() - interval '2 hours', 0, 0, false, 'failed', 'first', 'scheduler',
         null),
        ('keys', now() - interval '1 hour', now() - interval '1 hour', 0, 0, false, 'failed', '{ERROR}\nDETAIL: more',
         'scheduler', null),
        ('inbox', now() - interval '1 hour', now() - interval '1 hour', 1, 40, false, 'succeeded', null, 'scheduler',
         'primary_key')""",
    )
    _runs(
        urls["charlie"],
        """('keys', now() - interval '10 minutes', now() - interval '9 minutes', 3, 1200, false,
                                'succeeded', null, 'scheduler', 'due_index')""",
    )
    urls["zulu"] = f"postgresql://idemdash@127.0.0.1:{hung_host.port}/zulu?connect_timeout=2&sslmode=disable"
    config = write_config(tmp_path / "fleet.toml", {name: {"url": url} for name, url in urls.items()})
    client = make_app(CONFIG=config, FLEET_REFRESH_THREADS=2, FLEET_REFRESH_SECONDS=60).test_client()

    started = time.perf_counter()
    first = client.get("/databases/purges")
    assert first.status_code == 200 and time.perf_counter() - started < SOON
    slowest = 0.0

    def answered():
        nonlocal slowest
        started = time.perf_counter()
        items = client.get("/api/v1/databases/purges").get_json()["items"]
        slowest = max(slowest, time.perf_counter() - started)
        return None if any(item["state"] == "pending" for item in items) else items

    items = wait_until(answered, timeout=20, what="every database's first answer")
    assert slowest < SOON, slowest  # no request waited while the hung host was being asked
    assert [(i["database"], i["table"], i["state"]) for i in items] == [
        ("alpha", "keys", "failing"),
        ("zulu", None, "unreachable"),
        ("bravo", None, "never_purged"),
        ("alpha", "inbox", "ok"),
        ("charlie", "keys", "ok"),
    ]
    failing, hung, never, _, good = items
    assert failing["last_run"]["error"].startswith(ERROR) and failing["failures_24h"] == 2
    assert failing["last_success_at"] is not None and failing["url"] == "/db/alpha/purges"
    assert f"no answer from 127.0.0.1 port {hung_host.port} within the connect timeout" in hung["problem"]
    assert hung["url"] == "/db/zulu/purges" and hung["last_run"] is None
    assert never["last_run"] is None and never["problem"] is None
    assert (good["last_run"]["rows_deleted"], good["last_run"]["method"], good["failures_24h"]) == (
        1200,
        "due_index",
        0,
    )
    assert all(i["age_seconds"] is not None and i["age_seconds"] < 30 for i in items)

    page = BeautifulSoup(client.get("/databases/purges").data, "html.parser")
    rows = page.select("#fleet-purges-panel tbody tr")
    assert [(r["data-database"], r["data-state"]) for r in rows] == [
        (i["database"], i["state"]) for i in items
    ]  # the page and the JSON agree
    assert [r.select_one("a")["href"] for r in rows] == [i["url"] for i in items]
    assert rows[0].select_one("[data-error]").get_text() == ERROR  # the error in one line
    assert rows[0].select_one('[data-metric="failures_24h"]').get_text() == "2"
    assert "could not be asked" in rows[1].get_text() and "within the connect timeout" in rows[1].get_text()
    assert "ago" in rows[4].select_one("[data-age]").get_text()
    # the link opens that database's own purges, which shows the same failed run
    own = client.get(rows[0].select_one("a")["href"])
    assert own.status_code == 200 and ERROR in own.get_data(as_text=True)
    back = BeautifulSoup(own.data, "html.parser").select_one("a[data-fleet-purges]")
    assert back["href"] == "/databases/purges"  # and the database's page links to every database's purges


def _db(name: str, *, reachable: bool = True, purges=None, pending: bool = False) -> DatabaseRow:
    now = datetime.now(timezone.utc)
    row = DatabaseRow(
        name,
        "h:5432/" + name,
        None,
        reachable,
        None,
        None if reachable else "refused",
        True,
        1.0,
        as_of=None if pending else now,
        purges=purges,
    )
    return replace(row, reachable=reachable and not pending)


def _status(table: str, outcome: str, failures: int) -> PurgeTableStatus:
    now = datetime.now(timezone.utc)
    run = PurgeRun(1, table, now, now, 1, 10, False, outcome, None, "scheduler", 1.0)
    return PurgeTableStatus(table, run, failures, None)


def test_worst_first_and_the_fleet_filter():
    dbs = [
        _db("orders"),
        _db("shop/a", purges=(_status("keys", "succeeded", 1), _status("outbox", "succeeded", 0))),
        _db("shop/b", reachable=False),
        _db("shop/c", purges=(_status("inbox", "failed", 1),)),
        _db("shop/d", pending=True),
        _db("zeta", purges=()),
    ]
    order = [(r.name, r.table, r.state) for r in purge_rows(dbs)]
    assert order == [
        ("shop/c", "inbox", "failing"),
        ("shop/a", "keys", "failed_recently"),
        ("shop/b", None, "unreachable"),
        ("orders", None, "purges_unknown"),
        ("shop/d", None, "pending"),
        ("zeta", None, "never_purged"),
        ("shop/a", "outbox", "ok"),
    ]
    assert {r.name for r in purge_rows(dbs, "shop")} == {"shop/a", "shop/b", "shop/c", "shop/d"}
    assert all(r.fleet == "shop" for r in purge_rows(dbs, "shop"))
    assert purge_rows(dbs, "other") == []
