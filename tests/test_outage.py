"""The database goes away and comes back while the app keeps running (no restart)."""

from __future__ import annotations

import time

import psycopg
import pytest
from bs4 import BeautifulSoup
from psycopg.conninfo import make_conninfo

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, create_app_schema
from idemdash.queries.migrate import migrate

pytestmark = pytest.mark.system  # see docs/development.md, Tests


def test_pages_answer_503_during_an_outage_and_recover_without_a_restart(own_server, make_app):
    url, stop, start = own_server
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, Tables())
        claim_key(conn, Tables(), "s", "k", "h", "w", lock_seconds=0)
    client = make_app(make_conninfo(url, connect_timeout=2)).test_client()
    before = client.get("/api/v1/overview")
    assert before.status_code == 200, before.get_json()
    assert before.get_json()["keys"]["stuck"] == 1

    stop()
    try:
        page = client.get("/")
        assert page.status_code == 503
        soup = BeautifulSoup(page.data, "html.parser")
        assert "database is unreachable" in soup.get_text()
        assert soup.find("meta", attrs={"http-equiv": "refresh"}) is not None
        assert page.headers["Retry-After"] == "5"
        api = client.get("/api/v1/keys?status=stuck")
        assert api.status_code == 503 and "unreachable" in api.get_json()["error"]
        assert client.get("/readyz").status_code == 503
        assert client.get("/healthz").status_code == 200
        assert client.get("/keys/s/k").status_code == 503
    finally:
        start()

    deadline = time.monotonic() + 20
    recovered_after = None
    while time.monotonic() < deadline:
        if client.get("/api/v1/overview").status_code == 200:
            recovered_after = 20 - (deadline - time.monotonic())
            break
        time.sleep(0.2)
    assert recovered_after is not None, "the app did not recover within 20 s of the database returning"
    assert client.get("/").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/api/v1/keys?status=stuck").get_json()["items"][0]["key"] == "k"
