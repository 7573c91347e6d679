"""Debezium's outbox is published by a connector that reads the rows from the write-ahead log through a logical
replication slot: `/tables` shows each slot of the database and how far behind it is, and `/health` fails when no
slot reads the database and warns when a slot has no reader. On a server of its own with ``wal_level = logical``."""

from __future__ import annotations

import psycopg
import pytest
from bs4 import BeautifulSoup
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests import library_ddl as ddl
from tests.test_detect import _create_case

pytestmark = pytest.mark.system  # a server restart for wal_level

ROWS = (
    "INSERT INTO public.outboxevent (id, aggregatetype, aggregateid, type, payload) "
    "SELECT gen_random_uuid(), 'order', g::text, 'OrderPlaced', '{\"n\": 1}'::jsonb FROM generate_series(1, %s) g"
)


@pytest.fixture
def logical(own_server, monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)
    server_dsn, stop, start = own_server
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET wal_level = logical")
    stop()
    start()
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        assert admin.execute("SHOW wal_level").fetchone()[0] == "logical"
        admin.execute("CREATE DATABASE shop")
    url = make_conninfo(**(conninfo_to_dict(server_dsn) | {"dbname": "shop"}))
    _create_case(url, "public", [ddl.DEBEZIUM])
    return url


def _health(client) -> dict:
    checks = client.get("/api/v1/health/schema").get_json()["items"]
    return {c["id"]: c for c in checks}


def test_the_slots_lag_is_shown_and_health_says_when_nothing_reads_the_outbox(make_app, logical):
    client = make_app(logical, PROFILE="debezium-outbox").test_client()
    with psycopg.connect(logical, autocommit=True) as conn:
        conn.execute(ROWS, (3,))
        assert client.get("/api/v1/tables").get_json()["slots"] == []
        page = BeautifulSoup(client.get("/tables").data, "html.parser")
        assert "nothing publishes them" in page.select_one("[data-no-slot]").get_text()
        assert _health(client)["profile.wal_reader"]["status"] == "fail"

        conn.execute("SELECT pg_create_logical_replication_slot('orders_connector', 'pgoutput')")
        conn.execute(ROWS, (500,))  # written after the slot's position: not yet read
        (slot,) = client.get("/api/v1/tables").get_json()["slots"]
        assert (slot["slot_name"], slot["plugin"], slot["active"]) == ("orders_connector", "pgoutput", False)
        behind = slot["bytes_behind"]
        assert behind > 500 * 50  # at least the 500 rows' WAL
        check = _health(client)["profile.wal_reader"]
        assert check["status"] == "warn" and "orders_connector (pgoutput, no reader" in check["detail"]
        row = BeautifulSoup(client.get("/tables").data, "html.parser").select_one("tr[data-slot=orders_connector]")
        assert "not connected" in row.get_text()

        # the reader confirms what it has read: the lag falls to what was written since
        conn.execute("SELECT pg_replication_slot_advance('orders_connector', pg_current_wal_lsn())")
        (slot,) = client.get("/api/v1/tables").get_json()["slots"]
        assert slot["bytes_behind"] < behind
    # a reference database shows no slots at all
    assert make_app(logical).test_client().get("/api/v1/tables").get_json()["slots"] is None
