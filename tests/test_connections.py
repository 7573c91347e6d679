"""Connections on demand: with several databases a web worker opens a database's pool when a request first uses it,
closes it once unused for IDEMDASH_FLEET_IDLE_SECONDS, and keeps its pools and background reads within
IDEMDASH_FLEET_MAX_CONNECTIONS (queries/pool_budget.py); with one database the pool opens at start, as always.

Counted where it matters: in the server's pg_stat_activity, by database and application_name (the web pools'
sessions are named ``idemdash``, the refresh's ``idemdash-refresh``). Real databases, real threads."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from idemdash.core.settings import ConfigError
from tests.fleet import HungHost
from tests.test_databases import write_config
from tests.test_keys import insert_key
from tests.waiting import wait_until

POOL = "idemdash"  # application_name of the web pools' sessions


def dbname(url: str) -> str:
    return conninfo_to_dict(url)["dbname"]


def sessions(server: str, urls: dict[str, str], application_name: str | None = POOL) -> dict[str, int]:
    """Sessions on each of ``urls``' databases (of ``application_name``, or of any with None), by config name."""
    names = {dbname(url): name for name, url in urls.items()}
    with psycopg.connect(server, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname, count(*) FROM pg_stat_activity WHERE datname = ANY(%s) "
            "AND (%s::text IS NULL OR application_name = %s) GROUP BY 1",
            (list(names), application_name, application_name),
        ).fetchall()
    return {names[datname]: count for datname, count in rows}


@pytest.fixture
def many(pg_templates, clone_of, tmp_path):
    """A config file of 20 databases, each a clone of the reference template."""
    urls = {f"db{i:02d}": clone_of(pg_templates["enum"]) for i in range(20)}
    return {
        "config": write_config(tmp_path / "many.toml", {name: {"url": url} for name, url in urls.items()}),
        "urls": urls,
    }


def test_one_database_keeps_its_pool_open_from_the_start(make_app, database_url, pg_server_dsn):
    app = make_app(database_url)
    urls = {"default": database_url}
    # nothing asked for a page: the pool opened when the app was made, and holds IDEMDASH_POOL_MIN_SIZE (1)
    assert wait_until(lambda: sessions(pg_server_dsn, urls).get("default"), timeout=10, what="the pool's connection")
    usage = app.extensions["idemdash_pools"].usage()
    assert (usage.lazy, usage.budget, usage.open_pools) == (False, None, 1)
    check = {c["id"]: c for c in app.test_client().get("/api/v1/health/schema").get_json()["items"]}["connections"]
    assert check["status"] == "ok" and "no budget applies" in check["detail"], check


@pytest.mark.system
def test_twenty_databases_open_a_pool_only_for_the_page_asked_and_close_it_once_idle(many, make_app, pg_server_dsn):
    app = make_app(CONFIG=many["config"], FLEET_IDLE_SECONDS=1, FLEET_REFRESH_THREADS=2)
    client = app.test_client()
    assert client.get("/healthz").status_code == 200  # the worker's first request: the refresh starts, no pool
    time.sleep(0.5)  # a pool opened at start would have connected by now
    assert sessions(pg_server_dsn, many["urls"]) == {}

    assert client.get("/db/db07/keys").status_code == 200
    held = sessions(pg_server_dsn, many["urls"])
    assert set(held) == {"db07"} and held["db07"] >= 1, held
    usage = app.extensions["idemdash_pools"].usage()
    assert usage.open_pools == 1 and usage.pool_connections >= 1 and usage.budget == 50

    scrape = client.get("/metrics").get_data(as_text=True)
    assert "idemdash_worker_connection_budget 50.0" in scrape
    assert 'idemdash_worker_connections{kind="pools"}' in scrape
    assert sessions(pg_server_dsn, many["urls"]).keys() == {"db07"}  # the scrape read the others without a pool

    # unused for IDEMDASH_FLEET_IDLE_SECONDS (1 s): closed, its connections gone from the server
    wait_until(lambda: not sessions(pg_server_dsn, many["urls"]), timeout=10, what="the idle pool to close")
    assert app.extensions["idemdash_pools"].usage().open_pools == 0
    assert client.get("/db/db07/keys").status_code == 200  # and opened again when asked again
    assert set(sessions(pg_server_dsn, many["urls"])) == {"db07"}


@pytest.mark.system
def test_opening_pool_after_pool_never_holds_more_than_the_budget(many, make_app, pg_server_dsn):
    budget = 8  # background reads: 1 refresh thread + 1 for /metrics; each pool up to 2: three pools at once
    app = make_app(
        CONFIG=many["config"],
        FLEET_MAX_CONNECTIONS=budget,
        FLEET_REFRESH_THREADS=1,
        POOL_MAX_SIZE=2,
        FLEET_REFRESH_SECONDS=1,
    )
    most, stop = [0], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            most[0] = max(most[0], sum(sessions(pg_server_dsn, many["urls"], None).values()))
            time.sleep(0.01)

    statuses: list[int] = []

    def browse(names: list[str]) -> None:
        client = app.test_client()
        for name in names:
            for path in ("keys", "outbox"):
                statuses.append(client.get(f"/db/{name}/{path}").status_code)

    sampler = threading.Thread(target=sample)
    sampler.start()
    names = list(many["urls"])
    browsers = [threading.Thread(target=browse, args=(names[i::3],)) for i in range(3)]  # three at a time
    try:
        for browser in browsers:
            browser.start()
        for browser in browsers:
            browser.join(120)
    finally:
        stop.set()
        sampler.join(10)
    assert statuses and set(statuses) == {200}, statuses
    assert 0 < most[0] <= budget, most[0]
    usage = app.extensions["idemdash_pools"].usage()
    assert usage.open_pools <= 3 and usage.reserved <= budget, usage
    assert len(sessions(pg_server_dsn, many["urls"])) <= 3 + 1  # three pools and, maybe, the refresh's one ask


@pytest.mark.system  # over a second: waits for a busy pool
def test_with_every_pool_busy_a_page_of_another_database_answers_503_naming_the_budget(
    database_url, make_app, tmp_path, clone_of, pg_templates
):
    config = write_config(
        tmp_path / "two.toml", {"alpha": {"url": database_url}, "beta": {"url": clone_of(pg_templates["enum"])}}
    )
    # background reads: 1 refresh thread + 1 for /metrics; room for one pool of 2
    app = make_app(
        CONFIG=config, FLEET_MAX_CONNECTIONS=4, FLEET_REFRESH_THREADS=1, POOL_MAX_SIZE=2, POOL_TIMEOUT_SECONDS=1
    )
    pools, targets = app.extensions["idemdash_pools"], app.extensions["idemdash_targets"]
    with pools.lease(targets["alpha"]):  # a request on alpha, still running
        started = time.monotonic()
        response = app.test_client().get("/api/v1/db/beta/keys")
        took = time.monotonic() - started
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    assert "IDEMDASH_FLEET_MAX_CONNECTIONS" in response.get_json()["error"]
    assert 1 <= took < 3, took  # waited IDEMDASH_POOL_TIMEOUT_SECONDS for alpha's pool to be released
    # alpha idle: beta's page closes alpha's pool and opens its own
    assert app.test_client().get("/api/v1/db/beta/keys").status_code == 200
    assert not targets["alpha"].pool_is_open() and targets["beta"].pool_is_open()
    with pytest.raises(ConfigError, match="IDEMDASH_FLEET_MAX_CONNECTIONS \\(3\\) leaves no room"):
        make_app(CONFIG=config, FLEET_MAX_CONNECTIONS=3, FLEET_REFRESH_THREADS=1, POOL_MAX_SIZE=2)


def test_requests_opening_the_same_pool_at_once_open_one(database_url, make_app, tmp_path):
    config = write_config(tmp_path / "two.toml", {"alpha": {"url": database_url}, "beta": {"url": database_url}})
    app = make_app(CONFIG=config)
    target = app.extensions["idemdash_targets"]["beta"]
    seen: list[int] = []
    start = threading.Barrier(8)

    def read() -> None:
        start.wait()
        with target.read() as conn:
            conn.execute("SELECT 1")
            seen.append(id(target.pool))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(seen) == 8 and len(set(seen)) == 1  # a second pool would have replaced the first under some reader
    assert app.extensions["idemdash_pools"].usage().open_pools == 1


@pytest.mark.system
def test_a_page_of_a_hung_host_answers_503_within_the_deadline(database_url, make_app, tmp_path):
    host = HungHost()
    try:
        config = write_config(
            tmp_path / "hung.toml",
            {
                "alpha": {"url": database_url},
                "hung": {"url": f"postgresql://idemdash@127.0.0.1:{host.port}/hung?sslmode=disable"},
            },
        )
        # the pool's connect gives up after IDEMDASH_POOL_CONNECT_TIMEOUT_SECONDS (2), the request's wait after
        # IDEMDASH_POOL_TIMEOUT_SECONDS (3): the 503 names the hung host
        client = make_app(CONFIG=config).test_client()
        started = time.monotonic()
        response = client.get("/api/v1/db/hung/keys")
        took = time.monotonic() - started
        assert response.status_code == 503 and response.headers["Retry-After"] == "5"
        assert f"no answer from 127.0.0.1 port {host.port} within the connect timeout" in response.get_json()["error"]
        assert took < 3 + 1.5, took
        assert client.get("/api/v1/db/alpha/keys").status_code == 200  # the other database is not held up
    finally:
        host.close()


SEARCH = "idemdash-fleet-search"  # application_name of the all-databases search's own sessions


@pytest.mark.system  # 60 searches of 2 s at most, in threads
def test_many_searches_at_once_stay_within_the_budget(pg_templates, clone_of, make_app, pg_server_dsn, tmp_path):
    """60 searches at once over 12 databases, with a budget of 14 (the least that fits the background reads and one
    pool): the worker never holds more than 14 connections on those databases, whoever asks; a database an ask could
    not reach in time is said to be not asked, never asked past the budget."""
    urls = {f"db{i:02d}": clone_of(pg_templates["enum"]) for i in range(12)}
    with psycopg.connect(urls["db05"], autocommit=True) as conn:
        insert_key(conn, "orders", "order-4471")
    config = write_config(tmp_path / "twelve.toml", {name: {"url": url} for name, url in urls.items()})
    app = make_app(CONFIG=config, FLEET_MAX_CONNECTIONS=14)
    peak = {"all": 0, "search": 0}
    stop = threading.Event()

    def watch() -> None:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            while not stop.is_set():
                now = dict(
                    conn.execute(
                        "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = ANY(%s) GROUP BY 1",
                        ([dbname(u) for u in urls.values()],),
                    )
                )
                peak["all"] = max(peak["all"], sum(now.values()))
                peak["search"] = max(peak["search"], now.get(SEARCH, 0))

    answers: list[dict] = []
    start = threading.Barrier(60)

    def search() -> None:
        client = app.test_client()
        start.wait()
        answers.append(client.get("/api/v1/databases/search?q=orders/order-4471").get_json())

    watcher = threading.Thread(target=watch)
    watcher.start()
    searches = [threading.Thread(target=search) for _ in range(60)]
    for thread in searches:
        thread.start()
    for thread in searches:
        thread.join(30)
    stop.set()
    watcher.join(10)
    assert len(answers) == 60 and all(a["seconds"] <= 2.5 for a in answers), [a["seconds"] for a in answers]
    assert peak["search"] >= 1 and peak["all"] <= 14, peak
    # every database is accounted for in each answer, and the key was found by the searches that reached db05
    for answer in answers:
        assert {h["database"] for h in answer["held_by"]} | set(answer["not_held_by"]) | {
            n["database"] for n in answer["not_asked"]
        } == set(urls)
    assert any(h["database"] == "db05" for a in answers for h in a["held_by"])
    wait_until(
        lambda: app.extensions["idemdash_pools"].usage().background_connections == 0,
        timeout=10,
        what="every slot given back once the asks in flight end",
    )


@pytest.mark.system  # waits out the search's 2 s deadline
def test_a_search_that_finds_every_connection_taken_waits_its_deadline_and_says_so(
    pg_templates, clone_of, make_app, pg_server_dsn, tmp_path
):
    urls = {f"db{i}": clone_of(pg_templates["enum"]) for i in range(3)}
    config = write_config(tmp_path / "three.toml", {name: {"url": url} for name, url in urls.items()})
    app = make_app(CONFIG=config, FLEET_REFRESH_THREADS=2, FLEET_REFRESH_SECONDS=3600)
    keeper = app.extensions["idemdash_pools"]
    client = app.test_client()
    assert client.get("/healthz").status_code == 200  # the refresh asks each database once, then rests
    wait_until(
        lambda: keeper.usage().background_connections == 0 and not sessions(pg_server_dsn, urls, None),
        timeout=10,
        what="the refresh's first round to end",
    )
    with ExitStack() as held:  # every slot the budget keeps for the background reads, taken
        for _ in range(keeper.background):
            held.enter_context(keeper.own_connection())
        started = time.monotonic()
        answer = client.get("/api/v1/databases/search?q=orders/order-1").get_json()
        waited = time.monotonic() - started
        assert sessions(pg_server_dsn, urls, SEARCH) == {}
    assert 1.9 <= waited <= 3.0, waited
    assert [n["database"] for n in answer["not_asked"]] == list(urls) and answer["held_by"] == []
    assert all(
        "IDEMDASH_FLEET_MAX_CONNECTIONS" in n["why"] and "no answer" not in n["why"] for n in answer["not_asked"]
    ), answer["not_asked"]
    # slots given back: the next search asks them all
    again = client.get("/api/v1/databases/search?q=orders/order-1").get_json()
    assert again["not_asked"] == [] and sorted(again["not_held_by"]) == sorted(urls)
