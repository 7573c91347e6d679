"""Fleet views on the all-databases page: worst first with the reasons, filters by fleet, environment and attention
(a bad value is a 400), the search of every database at once (a hung host reported as not asked, within the
deadline), the header's switcher at 25 databases, and how many series /metrics serves for 30 databases."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
from bs4 import BeautifulSoup
from prometheus_client.parser import text_string_to_metric_families
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from idemdash.dashboard.fleet_search import DEADLINE_SECONDS
from tests.fleet import HungHost, closed_port
from tests.test_databases import write_config
from tests.test_keys import insert_key


def outbox_row(conn, age: str = "1 hour", aggregate_id: str | None = None) -> None:
    conn.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope, "
        "idempotency_key, payload, created_at) VALUES ('e', 'a', coalesce(%s::uuid, gen_random_uuid()), "
        "'s', gen_random_uuid()::text, '{}', now() - %s::interval)",
        (aggregate_id, age),
    )


def failed_purge(conn) -> None:
    conn.execute(
        "INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, rows_deleted, dry_run, "
        "outcome, started_by, error) VALUES ('keys', now() - interval '5 minutes', now(), 0, false, "
        "'failed', 'scheduler', 'lock timeout')"
    )


def write_toml(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def mixed(pg_templates, clone_of, tmp_path):
    """alpha (fine, prod), bravo (stuck keys and a failed purge, prod), echo (refusing), and fleet shards of two
    members (staging): charlie (an outbox row pending an hour), delta (a failed purge)."""
    urls = {name: clone_of(pg_templates["enum"]) for name in ("alpha", "bravo", "charlie", "delta")}
    with psycopg.connect(urls["bravo"], autocommit=True) as conn:
        insert_key(conn, "orders", "b-1")
        insert_key(conn, "orders", "b-2")
        failed_purge(conn)
    with psycopg.connect(urls["charlie"], autocommit=True) as conn:
        outbox_row(conn, "1 hour")
        outbox_row(conn, "1 minute")
    with psycopg.connect(urls["delta"], autocommit=True) as conn:
        failed_purge(conn)
        outbox_row(conn, "1 minute")  # under the threshold: no outbox_lag
    server = conninfo_to_dict(urls["charlie"])
    template = make_conninfo(urls["charlie"], dbname="NAME").replace("NAME", "{name}")
    names = {conninfo_to_dict(urls[n])["dbname"]: n for n in ("charlie", "delta")}
    assert server["dbname"] in names
    text = f"""
[databases.alpha]
url = "{urls["alpha"]}"
environment = "prod"

[databases.bravo]
url = "{urls["bravo"]}"
environment = "prod"

[databases.echo]
url = "postgresql://idemdash@127.0.0.1:{closed_port()}/gone"

[fleets.shards]
url_template = "{template}"
names = {list(names)!r}
environment = "staging"
""".replace("'", '"')
    members = {f"shards/{db}": n for db, n in names.items()}
    return {"config": write_toml(tmp_path / "mixed.toml", text), "members": members}


def refreshed(make_app, config: str, **settings):
    app = make_app(CONFIG=config, FLEET_REFRESH_SECONDS=3600, **settings)
    app.extensions["idemdash_overview"].ask_all_now()  # the refresh, directly: no waiting for its threads
    return app


@pytest.mark.system
def test_the_rows_come_worst_first_with_their_reasons_and_each_filter_keeps_its_own(mixed, make_app):
    client = refreshed(make_app, mixed["config"]).test_client()
    items = client.get("/api/v1/databases").get_json()["items"]
    named = [mixed["members"].get(i["name"], i["name"]) for i in items]
    assert named == ["echo", "bravo", "charlie", "delta", "alpha"]
    reasons = {mixed["members"].get(i["name"], i["name"]): i["attention"] for i in items}
    assert reasons == {
        "echo": ["unreachable"],
        "bravo": ["stuck_keys", "purge_failed"],
        "charlie": ["outbox_lag"],
        "delta": ["purge_failed"],
        "alpha": [],
    }
    assert {i["fleet"] for i in items if i["name"].startswith("shards/")} == {"shards"}
    assert items[0]["fleet"] is None and "stuck" in items[1]  # the fields there were are still there

    def names(query: str) -> list[str]:
        response = client.get("/api/v1/databases" + query)
        assert response.status_code == 200, response.get_json()
        return [mixed["members"].get(i["name"], i["name"]) for i in response.get_json()["items"]]

    assert names("?fleet=shards") == ["charlie", "delta"]
    assert names("?fleet=-") == ["echo", "bravo", "alpha"]
    assert names("?environment=prod") == ["bravo", "alpha"]
    assert names("?environment=staging&attention=1") == ["charlie", "delta"]
    assert names("?attention=1") == ["echo", "bravo", "charlie", "delta"]

    # the page: the same order, the reasons shown, and the filter fragment htmx swaps in
    page = BeautifulSoup(client.get("/databases?fleet=-").data, "html.parser")
    assert [tr["data-database"] for tr in page.select("#databases-panel tbody tr")] == ["echo", "bravo", "alpha"]
    assert page.select_one('tr[data-database="bravo"] [data-attention]')["data-attention"] == "stuck_keys purge_failed"
    fragment = client.get("/databases?environment=staging", headers={"HX-Request": "true"})
    soup = BeautifulSoup(fragment.data, "html.parser")
    assert soup.select_one("#databases-panel")["hx-get"].endswith("?environment=staging")  # polling keeps the filter
    assert len(soup.select("#databases-panel tbody tr")) == 2 and soup.select_one("#filters") is None


def test_a_filter_that_names_nothing_is_a_404_saying_what_there_is_and_a_malformed_one_a_400(
    database_url, make_app, tmp_path
):
    config = write_toml(
        tmp_path / "two.toml",
        f'[databases.one]\nurl = "{database_url}"\nenvironment = "prod"\n[databases.two]\nurl = "{database_url}"\n',
    )
    client = make_app(CONFIG=config, FLEET_REFRESH_SECONDS=3600).test_client()
    fleet = client.get("/api/v1/databases?fleet=nope")
    assert fleet.status_code == 404
    assert "fleet='nope'" in fleet.get_json()["error"] and "'-'" in fleet.get_json()["error"]
    environment = client.get("/api/v1/databases?environment=staging")
    assert environment.status_code == 404 and "the environments are prod" in environment.get_json()["error"]
    for malformed in ("attention=maybe", "fleet=Not%20a%20name", "environment=%3Cscript%3E"):
        response = client.get(f"/api/v1/databases?{malformed}")
        assert response.status_code == 400, malformed
        assert malformed.partition("=")[0] in response.get_json()["error"]
    page = client.get("/databases?fleet=nope", headers={"HX-Request": "true"})  # the page's filter, swapped in place
    assert page.status_code == 404 and b"no [fleets.nope]" in page.data
    assert [i["name"] for i in client.get("/api/v1/databases?environment=prod").get_json()["items"]] == ["one"]
    assert [i["name"] for i in client.get("/api/v1/databases?fleet=-").get_json()["items"]] == ["one", "two"]


@pytest.mark.system
def test_a_key_is_found_in_the_two_databases_of_six_that_hold_it_and_a_hung_host_is_not_asked(
    pg_templates, clone_of, make_app, tmp_path
):
    urls = {f"db{i}": clone_of(pg_templates["enum"]) for i in range(6)}
    message = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
    for name in ("db1", "db4"):
        with psycopg.connect(urls[name], autocommit=True) as conn:
            insert_key(conn, "orders", "order-4471")
    with psycopg.connect(urls["db2"], autocommit=True) as conn:
        conn.execute(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at) "
            "VALUES ('billing', %s, 'h', now())",
            (message,),
        )
    hung = HungHost()
    try:
        urls["hung"] = f"postgresql://idemdash@127.0.0.1:{hung.port}/hung?connect_timeout=2&sslmode=disable"
        client = make_app(
            CONFIG=write_config(tmp_path / "six.toml", {n: {"url": u} for n, u in urls.items()}),
            FLEET_REFRESH_SECONDS=3600,
            FLEET_REFRESH_THREADS=2,
        ).test_client()
        started = time.monotonic()
        answer = client.get("/api/v1/databases/search?q=order-4471").get_json()
        took = time.monotonic() - started
        assert [h["database"] for h in answer["held_by"]] == ["db1", "db4"]
        assert answer["held_by"][0]["keys"][0]["url"] == "/db/db1/keys/orders/order-4471"
        assert sorted(answer["not_held_by"]) == ["db0", "db2", "db3", "db5"]
        assert [n["database"] for n in answer["not_asked"]] == ["hung"]
        assert "no answer within 2 s" in answer["not_asked"][0]["why"]
        # never waits for the hung host past the deadline: the lookup itself stops at it, and the request around it
        # (a first request also builds the app's pools) adds no second wait; loose, for a loaded CI machine
        assert answer["seconds"] < DEADLINE_SECONDS + 0.3, answer["seconds"]
        assert took < 2 * DEADLINE_SECONDS, took

        by_message = client.get(f"/api/v1/databases/search?q={message}").get_json()
        assert [h["database"] for h in by_message["held_by"]] == ["db2"]
        assert by_message["held_by"][0]["messages"][0]["consumer"] == "billing"
        scoped = client.get("/api/v1/databases/search?q=order-4471&scope=refunds").get_json()
        assert scoped["held_by"] == []
        assert client.get("/api/v1/databases/search").status_code == 400
    finally:
        hung.close()


def test_the_switcher_lists_twenty_of_25_databases_and_links_to_all(database_url, make_app, tmp_path):
    names = [f"db{i:02d}" for i in range(25)]
    config = write_config(tmp_path / "many.toml", {n: {"url": database_url} for n in names})
    client = make_app(CONFIG=config, FLEET_REFRESH_SECONDS=3600).test_client()
    page = BeautifulSoup(client.get("/db/db24/search").data, "html.parser")
    switcher = page.select_one(".db-switcher")
    links = [a.get_text() for a in switcher.select("li a")]
    assert links == names[:20] + ["db24", "All 25 databases…"]
    assert switcher.select_one("[data-more]")["data-more"] == "5"
    few = write_config(tmp_path / "few.toml", {n: {"url": database_url} for n in names[:3]})
    small = BeautifulSoup(
        make_app(CONFIG=few, FLEET_REFRESH_SECONDS=3600).test_client().get("/databases").data, "html.parser"
    )
    assert [a.get_text() for a in small.select(".db-switcher li a")] == names[:3] + ["All 3 databases…"]


def database_series(client) -> dict[str, int]:
    body = client.get("/metrics").data.decode()
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if "database" in sample.labels:
                counts[sample.name] = counts.get(sample.name, 0) + 1
    return counts


@pytest.mark.system
def test_thirty_databases_make_five_series_each_for_the_alerts(database_url, make_app, tmp_path):
    with psycopg.connect(database_url, autocommit=True) as conn:
        failed_purge(conn)  # one table with a finished run: one idemdash_purge_last_run_failed series each
        insert_key(conn, "orders", "k-1")
    config = write_config(tmp_path / "thirty.toml", {f"db{i:02d}": {"url": database_url} for i in range(30)})
    client = make_app(CONFIG=config).test_client()
    auto = database_series(client)  # auto: the alerts' series past 20 databases
    assert auto == {
        "idemdash_database_up": 30,
        "idemdash_stuck": 30,
        "idemdash_outbox_lag_seconds": 30,
        "idemdash_outbox_poison": 30,
        "idemdash_purge_last_run_failed": 30,
    }
    assert sum(auto.values()) == 5 * 30
    client.get("/db/db07/search")  # the request histogram: one database label for the fleet
    client.get("/db/db08/search")
    after = database_series(client)
    histogram = {k: v for k, v in after.items() if k.startswith("idemdash_http_request_duration_seconds")}
    assert sum(after.values()) == 5 * 30 + sum(histogram.values()) and histogram
    assert histogram["idemdash_http_request_duration_seconds_count"] == 1  # both requests in one series
    every = database_series(make_app(CONFIG=config, METRICS_PER_DATABASE="all").test_client())
    assert sum(every.values()) > sum(auto.values()) and every["idemdash_stuck_keys"] == 30


@pytest.mark.system
def test_a_database_whose_last_ask_failed_is_not_asked_again_by_the_search(database_url, make_app, tmp_path):
    with psycopg.connect(database_url, autocommit=True) as conn:
        insert_key(conn, "orders", "order-9")
    config = write_config(
        tmp_path / "down.toml",
        {"up": {"url": database_url}, "down": {"url": f"postgresql://idemdash@127.0.0.1:{closed_port()}/gone"}},
    )
    app = make_app(CONFIG=config, FLEET_REFRESH_SECONDS=3600)
    app.extensions["idemdash_overview"].ask_all_now()
    answer = app.test_client().get("/api/v1/databases/search?q=orders/order-9").get_json()
    assert [(h["database"], [k["key"] for k in h["keys"]]) for h in answer["held_by"]] == [("up", ["order-9"])]
    assert [n["database"] for n in answer["not_asked"]] == ["down"]
    assert answer["not_asked"][0]["why"].startswith("its last background ask failed: connection refused")
    page = BeautifulSoup(
        app.test_client().get("/databases/search?q=order-9", headers={"HX-Request": "true"}).data, "html.parser"
    )
    assert page.select_one('[data-not-asked="down"]') is not None and page.select_one("h1") is None
    assert page.select_one('[data-held-by="up"] a')["href"] == "/db/up/search?q=order-9"
