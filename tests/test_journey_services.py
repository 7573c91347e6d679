"""The journey over five databases, each one service, as the on-call engineer meets it: `shop` produces on the
reference tables; `billing` consumes on the reference tables, `email` on pg-transactional-outbox's inbox driven by
the library's own Node code from npm (tests/pgto/inbox.cjs), `ledger` on MassTransit's own DDL; `audit` is on a host
that hangs. Ground truth: a payment consumed by billing and email and missing at ledger, a key stuck before its outbox
row was written, a parked poison row. The journey names each exactly within its deadline, says which database did not
answer, and the learned routes are the staged topology; in Chromium, from the search page and from a key's page, at
1440 and 390 px, with no serious axe violation."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from idemdash.queries.catalog import find_shapes
from idemdash.queries.profile_indexes import create_profile_index, list_profile_index_status
from tests import library_ddl as ddl
from tests import npm_packages
from tests.fleet import HungHost
from tests.journey_world import MINUTE, consume, consume_masstransit, produce
from tests.test_databases import write_config
from tests.test_detect import create
from tests.test_keys import insert_key
from tests.test_pgto_npm import PACKAGES, _node_url
from tests.waiting import wait_until

pytestmark = pytest.mark.system  # npm, a Node process, a hung host's deadline

INBOX = Path(__file__).resolve().parent / "pgto" / "inbox.cjs"
SHOTS = Path(os.environ.get("IDEMDASH_TEST_SHOTS", "/tmp/idemdash-journey-shots"))
TOPOLOGY = {
    "payment.captured": (["shop"], [("billing", "billing"), ("email", "email"), ("ledger", "ledger")]),
    "order.shipped": (["shop"], [("billing", "billing")]),
}


def _node(modules: Path, mode: str, url: str, stdin: str = "") -> None:
    subprocess.run(
        ["node", str(INBOX), str(modules), mode],
        env={**os.environ, "DATABASE_URL": _node_url(url)},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def _pgto_consumes(url: str, messages: list[tuple[str, str]]) -> None:
    """The library's inbox receives ``messages`` (id, type) and its polling listener handles every one."""
    modules = npm_packages.install(".pgto", PACKAGES, marker="pg-transactional-outbox/package.json") / "node_modules"
    _node(modules, "setup", url)
    _node(modules, "receive", url, "\n".join(json.dumps({"id": i, "messageType": t}) for i, t in messages))
    listener = subprocess.Popen(
        ["node", str(INBOX), str(modules), "listen"],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "DATABASE_URL": _node_url(url)},
    )
    try:

        def handled():
            with psycopg.connect(url) as conn:
                return conn.execute("SELECT count(*) FROM public.inbox WHERE processed_at IS NULL").fetchone()[0] == 0

        wait_until(handled, 30, what="pg-transactional-outbox's listener to handle every inbox message")
    finally:
        listener.send_signal(signal.SIGTERM)
        listener.wait(10)


@pytest.fixture
def services(pg_templates, clone_of, tmp_path):
    urls = {
        "shop": clone_of(pg_templates["enum"]),
        "billing": clone_of(pg_templates["enum"]),
        "email": clone_of(None),
        "ledger": clone_of(None),
    }  # the libraries' databases: their own tables alone
    create(urls["ledger"], "public", ddl.MASSTRANSIT)
    with psycopg.connect(urls["ledger"], autocommit=True) as conn:
        [found] = find_shapes(conn)
        for status in list_profile_index_status(conn, found):  # what `idemdash check --apply-indexes` builds
            create_profile_index(conn, found, status)
    sent: list[tuple[str, str]] = []
    with (
        psycopg.connect(urls["shop"], autocommit=True) as shop,
        psycopg.connect(urls["billing"], autocommit=True) as billing,
        psycopg.connect(urls["ledger"], autocommit=True) as ledger,
    ):
        for i in range(6):
            mid = produce(shop, "checkout", f"paid-{i}", "payment.captured", ago=MINUTE)
            consume(billing, "billing", mid, ago=MINUTE - timedelta(seconds=2))
            consume_masstransit(ledger, mid, ago=MINUTE - timedelta(seconds=3))
            sent.append((mid, "payment.captured"))
        for i in range(3):
            consume(
                billing,
                "billing",
                produce(shop, "shipping", f"ship-{i}", "order.shipped", ago=MINUTE),
                ago=MINUTE - timedelta(seconds=1),
            )
        half = produce(
            shop,
            "checkout",
            "order-4471",
            "payment.captured",
            ago=10 * MINUTE,
            traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        consume(billing, "billing", half, ago=10 * MINUTE - timedelta(seconds=2))
        sent.append((half, "payment.captured"))
        poison = produce(
            shop, "checkout", "order-poison", "payment.captured", ago=5 * MINUTE, status="parked", attempts=9
        )
        insert_key(shop, "checkout", "order-stuck", "processing", claimed_by="api-7", attempts=3)
    _pgto_consumes(urls["email"], sent)
    hung = HungHost()
    urls["audit"] = f"postgresql://idemdash@127.0.0.1:{hung.port}/audit?connect_timeout=2&sslmode=disable"
    profiles = {
        "email": {"profile": "pg-transactional-outbox", "app_schema": "public"},
        "ledger": {"profile": "masstransit", "app_schema": "public"},
    }
    config = write_config(
        tmp_path / "services.toml", {name: {"url": url, **profiles.get(name, {})} for name, url in urls.items()}
    )
    yield config, {"half": half, "poison": poison}
    hung.close()


def _timed(client, url):
    started = time.monotonic()
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_json(), time.monotonic() - started


def test_the_journey_names_each_step_not_taken_within_its_deadline(make_app, services):
    config, ids = services
    client = make_app(CONFIG=config, TRACE_URL="https://tempo.example/trace/{trace_id}").test_client()
    routes, _ = _timed(client, "/api/v1/routes")
    assert {
        r["event_type"]: (r["producers"], sorted((c["database"], c["consumer"]) for c in r["consumers"]))
        for r in routes["routes"]
    } == TOPOLOGY
    assert [d["database"] for d in routes["not_answered"]] == ["audit"]

    half, took = _timed(client, "/api/v1/journey?q=checkout/order-4471")
    assert took < half["deadline_seconds"] + 0.5 and half["seconds"] <= half["deadline_seconds"] + 0.2
    assert [d["database"] for d in half["not_answered"]] == ["audit"]
    assert sorted(half["answered"]) == ["billing", "email", "ledger", "shop"]
    (message,) = half["messages"]
    assert message["message_id"] == ids["half"]
    assert sorted((c["database"], c["consumer"], c["state"]) for c in message["consumers"]) == [
        ("billing", "billing", "consumed"),
        ("email", "email", "consumed"),
    ]
    assert [(e["database"], e["consumer"]) for e in message["missing"]] == [("ledger", "ledger")]
    assert re.fullmatch(
        r"`payment.captured` \(shop\) published (9 min 5\d s|10 min( \d+ s)?) ago; missing at "
        r"`ledger` \(ledger\): it usually consumes within \d s",
        half["verdict"],
    ), half["verdict"]
    assert half["problems"] == [half["verdict"]]
    assert half["traces"][0]["url"] == "https://tempo.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"

    stuck, took = _timed(client, "/api/v1/journey?q=checkout/order-stuck")
    assert took < stuck["deadline_seconds"] + 0.5
    assert re.fullmatch(
        r"key `checkout/order-stuck` is stuck in processing: its lease ran out 10 min( \d+ s)? ago "
        r"\(claimed by api-7, 3 attempts\); no outbox row was written",
        stuck["verdict"],
    ), stuck["verdict"]

    poison, _ = _timed(client, f"/api/v1/journey?q={ids['poison']}")
    assert poison["verdict"] == (
        "`payment.captured` (shop) is parked by an operator (attempts 9): not published, no consumer will get it"
    )
    assert poison["messages"][0]["consumers"] == [] and poison["messages"][0]["missing"] == []

    # a message id the producer's outbox no longer holds: the consumers' rows alone
    gone = ids["half"]
    with psycopg.connect(_url_of(config, "shop"), autocommit=True) as conn:
        conn.execute("DELETE FROM app.outbox_event WHERE outbox_id = %s", (gone,))
    alone, _ = _timed(client, f"/api/v1/journey?q={gone}")
    assert sorted(c["database"] for c in alone["unmatched"]) == ["billing", "email"]
    assert alone["verdict"].startswith("consumed by `billing`, `email`; its outbox row is not in any database")


def _url_of(config: str, name: str) -> str:
    text = Path(config).read_text()
    return re.search(rf'\[databases\.{name}\]\nurl = "([^"]+)"', text).group(1)


@pytest.mark.browser
def test_the_on_call_engineer_follows_a_request_in_chromium(make_app, live_server, chromium, services):
    from tests.test_browser_pages import PHONE, _axe_source, _serious

    config, _ = services
    base = live_server(make_app(CONFIG=config))
    source = _axe_source()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, viewport in (("1440", {"width": 1440, "height": 1000}), ("390", PHONE)):
        context = chromium.new_context(viewport=viewport, bypass_csp=True)
        page = context.new_page()
        try:
            # from the search box: a key's name finds its page, whose link follows it across services
            page.goto(base + "/")
            page.locator("#header-search").fill("order-4471")
            page.locator("#header-search").press("Enter")
            page.wait_for_url(re.compile(r"/keys/checkout/order-4471"))
            page.locator("a[data-journey]").click()
            page.locator("[data-verdict]").wait_for()
            assert "missing at ledger (ledger)" in page.locator("[data-verdict]").inner_text()
            assert page.locator("[data-not-answered=audit]").count() == 1
            assert page.locator("li[data-consumer=ledger][data-state=missing]").count() == 1
            assert page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
            page.screenshot(path=str(SHOTS / f"journey-from-key-{width}.png"), full_page=True)
            assert _serious(page, source) == []
            # from the search page: keys by prefix, then its offer of the journey
            page.goto(base + "/search?q=order-")
            page.locator("a[data-journey]").click()
            page.locator("[data-verdict]").wait_for()
            page.goto(base + "/journey")
            page.get_by_role("searchbox", name=re.compile("^Follow")).fill("checkout/order-stuck")
            page.get_by_role("button", name="Follow").click()
            page.locator("[data-verdict]").wait_for()
            assert "stuck in processing" in page.locator("[data-verdict]").inner_text()
            page.screenshot(path=str(SHOTS / f"journey-stuck-{width}.png"), full_page=True)
            assert _serious(page, source) == []
            page.goto(base + "/routes")
            assert page.locator("tr[data-route='payment.captured']").count() == 3
            page.screenshot(path=str(SHOTS / f"routes-{width}.png"), full_page=True)
            assert _serious(page, source) == []
        finally:
            context.close()
