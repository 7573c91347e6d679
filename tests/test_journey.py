"""The journey across three databases of the reference tables (a producer, two consumers): a message consumed by one
consumer and missing at the other, a key stuck before its outbox row was written, a parked poison row, each named in
words; the routes learned from the tables; a trace id linked through IDEMDASH_TRACE_URL; bad input refused."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.journey_world import MINUTE, consume, produce
from tests.test_databases import write_config
from tests.test_keys import insert_key

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def world(pg_templates, clone_of, tmp_path):
    urls = {name: clone_of(pg_templates["enum"]) for name in ("shop", "billing", "email")}
    with (
        psycopg.connect(urls["shop"], autocommit=True) as shop,
        psycopg.connect(urls["billing"], autocommit=True) as billing,
        psycopg.connect(urls["email"], autocommit=True) as email,
    ):
        for i in range(5):  # the history the routes are learned from: both consumers get every payment
            mid = produce(shop, "checkout", f"old-{i}", "payment.captured", ago=20 * MINUTE)
            consume(billing, "billing", mid, ago=20 * MINUTE - (i + 2) * MINUTE / 60)
            consume(email, "email", mid, ago=20 * MINUTE - 3 * MINUTE / 60)
        ids = {
            "half": produce(shop, "checkout", "k-half", "payment.captured", ago=10 * MINUTE, traceparent=TRACE),
            "parked": produce(
                shop, "checkout", "k-poison", "payment.captured", ago=5 * MINUTE, status="parked", attempts=7
            ),
        }
        consume(billing, "billing", ids["half"], ago=10 * MINUTE - MINUTE / 30)
        insert_key(shop, "checkout", "k-stuck", "processing", claimed_by="api-7", attempts=2)
    config = write_config(tmp_path / "journey.toml", {name: {"url": url} for name, url in urls.items()})
    return config, ids


@pytest.mark.system  # over a second: three databases, routes learned, several journeys
def test_the_journey_names_the_missing_consumer_the_stuck_key_and_the_parked_row(make_app, world):
    config, ids = world
    client = make_app(CONFIG=config, TRACE_URL="https://jaeger.example/trace/{trace_id}").test_client()
    routes = client.get("/api/v1/routes").get_json()["routes"]
    assert [
        (r["event_type"], r["producers"], sorted((c["database"], c["consumer"]) for c in r["consumers"]))
        for r in routes
    ] == [("payment.captured", ["shop"], [("billing", "billing"), ("email", "email")])]

    half = client.get("/api/v1/journey?q=checkout/k-half").get_json()
    assert re.fullmatch(
        r"`payment.captured` \(shop\) published (9 min 5\d s|10 min( \d s)?) ago; missing at "
        r"`email` \(email\): it usually consumes within \d s",
        half["verdict"],
    ), half["verdict"]
    (message,) = half["messages"]
    assert message["message_id"] == ids["half"]
    assert [c["consumer"] for c in message["consumers"]] == ["billing"]
    assert [e["consumer"] for e in message["missing"]] == ["email"]
    assert half["keys"][0]["status"] == "succeeded"
    assert half["traces"] == [
        {
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
            "url": "https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736",
        }
    ]
    assert sorted(half["answered"]) == ["billing", "email", "shop"] and half["not_answered"] == []

    by_id = client.get(f"/api/v1/journey?q={ids['half']}").get_json()
    assert "missing at `email` (email)" in by_id["verdict"] and by_id["messages"][0]["missing"] == message["missing"]
    assert by_id["keys"] == []  # an outbox id names no key

    stuck = client.get("/api/v1/journey?q=checkout/k-stuck").get_json()
    assert stuck["verdict"].startswith("key `checkout/k-stuck` is stuck in processing: its lease ran out 10 min")
    assert stuck["verdict"].endswith("no outbox row was written") and stuck["messages"] == []

    parked = client.get("/api/v1/journey?q=checkout/k-poison").get_json()
    assert parked["verdict"] == (
        "`payment.captured` (shop) is parked by an operator (attempts 7): not published, no consumer will get it"
    )

    page = client.get("/journey?q=checkout/k-half").get_data(as_text=True)
    assert "missing at <code>email</code> (email)" in page
    assert 'href="https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"' in page


def test_a_journey_without_text_is_refused_and_the_page_asks_for_it(make_app, world):
    config, _ = world
    client = make_app(CONFIG=config).test_client()
    assert client.get("/api/v1/journey").status_code == 400
    assert client.get("/api/v1/journey?q=%20%20").status_code == 400
    assert 'name="q"' in client.get("/journey").get_data(as_text=True)


@pytest.mark.system  # over a second: three databases, routes learned, several journeys
def test_the_search_page_and_a_key_s_page_offer_the_journey(make_app, world):
    from bs4 import BeautifulSoup

    config, ids = world
    client = make_app(CONFIG=config).test_client()
    search = BeautifulSoup(client.get("/search?q=k-").get_data(as_text=True), "html.parser")  # keys by prefix
    assert search.select_one("a[data-journey]")["href"] == "/journey?q=k-"
    key = BeautifulSoup(client.get("/keys/checkout/k-half").get_data(as_text=True), "html.parser")
    link = key.select_one("a[data-journey]")["href"]
    assert link == "/journey?q=checkout/k-half"
    page = BeautifulSoup(client.get(link).get_data(as_text=True), "html.parser")
    assert "missing at email (email)" in page.select_one("[data-verdict]").get_text()


def test_a_key_s_text_is_shown_as_text_in_the_verdict(make_app, world):
    config, _ = world
    client = make_app(CONFIG=config).test_client()
    shop = tomllib.loads(Path(config).read_text())["databases"]["shop"]["url"]
    with psycopg.connect(shop, autocommit=True) as conn:
        insert_key(conn, "checkout", "<b>x`</b>`", "processing")
    page = client.get("/journey", query_string={"q": "checkout/<b>x`</b>`"}).get_data(as_text=True)
    assert "<b>x" not in page and "&lt;b&gt;x" in page


def test_an_aggregate_id_is_followed_to_its_messages_consumers(make_app, world):
    config, ids = world
    shop = tomllib.loads(Path(config).read_text())["databases"]["shop"]["url"]
    with psycopg.connect(shop) as conn:
        (aggregate,) = conn.execute(
            "SELECT aggregate_id::text FROM app.outbox_event WHERE outbox_id = %s", (ids["half"],)
        ).fetchone()
    answer = make_app(CONFIG=config).test_client().get(f"/api/v1/journey?q={aggregate.upper()}").get_json()
    (message,) = answer["messages"]
    assert message["message_id"] == ids["half"]
    assert [c["consumer"] for c in message["consumers"]] == ["billing"]
    assert [e["consumer"] for e in message["missing"]] == ["email"]


def test_a_consumer_whose_database_did_not_answer_is_unknown_not_missing(make_app, world, pg_server_dsn):
    config, ids = world
    client = make_app(CONFIG=config).test_client()
    assert client.get("/api/v1/routes").status_code == 200  # learned while email answers
    email = tomllib.loads(Path(config).read_text())["databases"]["email"]["url"]
    with psycopg.connect(pg_server_dsn, autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE {} WITH (FORCE)").format(
                sql.Identifier(psycopg.conninfo.conninfo_to_dict(email)["dbname"])
            )
        )
    answer = client.get(f"/api/v1/journey?q={ids['half']}").get_json()
    assert [d["database"] for d in answer["not_answered"]] == ["email"]
    (message,) = answer["messages"]
    assert message["missing"] == [] and [e["consumer"] for e in message["unknown"]] == ["email"]
    assert "unknown at `email`: its database email did not answer" in answer["verdict"]
