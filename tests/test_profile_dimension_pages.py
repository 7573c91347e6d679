"""Hotspots, workers, suppression, search, the stuck breakdown and the runbooks on every profile's database, read
through its role tables and their dimensions (core/profiles/dimensions.py): each library's own DDL, rows with known
counts, a database zone that is not UTC. Where a library records attempts and an owner (Wolverine, DBOS) the numbers
equal what the rows say; where it records neither, the page says so by the library's name."""

from __future__ import annotations

import json
from datetime import datetime

import psycopg
import pytest
from bs4 import BeautifulSoup

from tests import library_ddl as ddl
from tests.test_custom_shapes import SHAPE, TABLE
from tests.test_detect import CASES, IDS, _create_case, _nservicebus
from tests.test_profile_pages import SPRING_ROWS
from tests.test_profile_states import SEEDED

ZONE = "Asia/Tokyo"

# node 1 is alive (listed in wolverine_nodes); 7 and 9 are gone, so their rows are stuck; owner 0 is no one (any node)
WOLVERINE_ROWS = """
INSERT INTO wolverine.wolverine_nodes (id, node_number, description, uri) VALUES (gen_random_uuid(), 1, 'n', 'u');
INSERT INTO wolverine.wolverine_incoming_envelopes (id, status, owner_id, attempts, body, message_type, keep_until)
VALUES
  ('00000000-0000-0000-0000-000000000001', 'Incoming', 1, 6, '\\x00', 'm', NULL),
  ('00000000-0000-0000-0000-000000000002', 'Incoming', 7, 9, '\\x00', 'm', NULL),
  ('00000000-0000-0000-0000-000000000003', 'Incoming', 7, 2, '\\x00', 'm', NULL),
  ('00000000-0000-0000-0000-000000000004', 'Incoming', 0, 5, '\\x00', 'm', NULL),
  ('00000000-0000-0000-0000-000000000005', 'Handled', 1, 1, '\\x00', 'm', now() + interval '1 day'),
  ('00000000-0000-0000-0000-000000000006', 'Handled', 0, 7, '\\x00', 'm', now() + interval '1 day');
INSERT INTO wolverine.wolverine_outgoing_envelopes (id, owner_id, destination, attempts, body, message_type) VALUES
  ('00000000-0000-0000-0000-000000000011', 9, 'd', 5, '\\x00', 'm'),
  ('00000000-0000-0000-0000-000000000012', 1, 'd', 0, '\\x00', 'm'),
  ('00000000-0000-0000-0000-000000000013', 0, 'd', 3, '\\x00', 'm')
"""

# v2 is the latest version: wf-old (v1) is stuck, so is wf-silent (its executor e2 silent for an hour); wf-running
# runs now; one success now and one two days ago; one error ten minutes ago
_MS = "(extract(epoch FROM now()) * 1000)::bigint"
DBOS_ROWS = f"""
INSERT INTO dbos.application_versions (version_id, version_name, version_timestamp) VALUES
  ('a', 'v1', {_MS} - 7200000), ('b', 'v2', {_MS} - 3600000);
INSERT INTO dbos.workflow_status (workflow_uuid, status, name, executor_id, application_version, recovery_attempts,
                                  created_at, updated_at) VALUES
  ('wf-old', 'PENDING', 'ship', 'e1', 'v1', 4, {_MS} - 7200000, {_MS} - 7200000),
  ('wf-silent', 'PENDING', 'ship', 'e2', 'v2', 6, {_MS} - 3600000, {_MS} - 3600000),
  ('wf-running', 'PENDING', 'ship', 'e3', 'v2', 1, {_MS}, {_MS}),
  ('wf-done', 'SUCCESS', 'ship', 'e3', 'v2', 0, {_MS}, {_MS}),
  ('wf-done-old', 'SUCCESS', 'ship', 'e3', 'v2', 5, {_MS} - 172800000, {_MS} - 172800000),
  ('wf-err', 'ERROR', 'ship', 'e1', 'v2', 7, {_MS} - 600000, {_MS} - 600000)
"""

ROUTES = [
    "/hotspots",
    "/api/v1/hotspots",
    "/hotspots?window=all&min_attempts=1",
    "/suppression",
    "/api/v1/suppression",
    "/workers",
    "/api/v1/workers?window=7d",
    "/search",
    "/search?q=nothing-like-it",
    "/api/v1/search?q=nothing-like-it",
    "/api/v1/search?q=%5B%221%22%5D",
    "/api/v1/keys/breakdown",
    "/runbook",
    "/runbook/stuck-keys",
    "/runbook/outbox-backlog",
]


@pytest.fixture(autouse=True)
def _no_config(monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)


def _database(url: str, schema: str, statements: list[str], rows: str | None) -> None:
    _create_case(url, schema, statements)
    with psycopg.connect(url, autocommit=True) as conn:
        if rows:
            conn.execute(rows)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = '{ZONE}'")


def _text(html: bytes) -> str:
    return " ".join(BeautifulSoup(html, "html.parser").get_text(" ").split())


@pytest.mark.system  # every library's tables, fifteen routes each: over a second per profile
@pytest.mark.parametrize(("name", "version", "default_schema", "statements", "tables"), CASES, ids=IDS)
def test_every_route_answers_on_every_librarys_database(
    make_app, empty_database_url, name, version, default_schema, statements, tables
):
    seed, _ = SEEDED.get((name, version), (None, None))
    _database(empty_database_url, default_schema, statements, seed)
    overrides = {"OUTBOX_TABLE": tables["outbox"]} if name == "nservicebus" else {}
    client = make_app(empty_database_url, PROFILE=name, **overrides).test_client()
    for route in ROUTES:
        answer = client.get(route)
        assert answer.status_code == 200, (route, answer.data[:500])
        if route.startswith("/api/"):
            assert answer.get_json()["profile"] == name, route
            assert answer.get_json()["problem"] is None, (route, answer.get_json())
    # what the library does not record is said by its name, never a 0
    library = client.get("/api/v1/hotspots").get_json()["library"]
    assert f"is not recorded by {library}" in client.get("/api/v1/suppression").get_json()["note"]
    for table in client.get("/api/v1/hotspots").get_json()["tables"]:
        assert (table["attempts"]["recorded"] and table["top_rows"] is not None) or (
            library in table["attempts"]["note"] and table["top_rows"] is None
        ), table
    workers = client.get("/api/v1/workers").get_json()
    for table in workers["tables"]:
        assert table["owner"]["recorded"] or library in table["owner"]["note"], table
    page = _text(client.get("/workers").data)
    if not any(t["owner"]["recorded"] for t in workers["tables"] if t["table"]):
        assert f"is not recorded by {library}" in page


@pytest.mark.system  # fifteen routes over a configured shape: about 4 s
def test_a_custom_shape_answers_every_route_and_says_what_it_does_not_record(make_app, empty_database_url, tmp_path):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(TABLE)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = '{ZONE}'")
    path = tmp_path / "idemdash.toml"
    path.write_text(SHAPE.format(url=empty_database_url))
    client = make_app(None, CONFIG=str(path), DATABASE_URL="").test_client()
    for route in ROUTES:
        assert client.get(route).status_code == 200, route
    hot = client.get("/api/v1/hotspots").get_json()
    outbox = next(t for t in hot["tables"] if t["role"] == "outbox")
    assert (outbox["table"], outbox["attempts"]["recorded"], outbox["top_rows"]) == ("events_out", False, None)
    assert (
        outbox["attempts"]["note"] == "attempts is not recorded by the payments service's outbox for its outbox table"
    )
    # the identity column (its primary key) finds the row, and the page goes straight to it
    found = client.get("/api/v1/search?q=3").get_json()
    assert [(i["role"], i["identity"]) for i in found["items"]] == [("outbox", "[3]")]
    assert client.get("/search?q=3").headers["Location"].endswith("/tables/outbox/row?id=%5B3%5D")
    # under the database's own path, its links stay there
    twin = client.get("/api/v1/db/payments/search?q=3").get_json()
    assert [i["url"] for i in twin["items"]] == ["/db/payments/tables/outbox/row?id=%5B3%5D"]
    assert client.get("/db/payments/workers").status_code == 200
    breakdown = client.get("/api/v1/keys/breakdown").get_json()
    assert breakdown["table"] is None
    assert breakdown["note"].startswith("the payments service's outbox has no keys table")


@pytest.mark.system  # about 1.5 s
def test_wolverine_hotspots_and_workers_equal_the_rows(make_app, empty_database_url):
    _database(empty_database_url, "wolverine", [ddl.WOLVERINE], WOLVERINE_ROWS)
    client = make_app(empty_database_url, PROFILE="wolverine", DEFAULT_LEASE_SECONDS=300).test_client()
    hot = client.get("/api/v1/hotspots?min_attempts=5").get_json()
    tables = {t["role"]: t for t in hot["tables"]}
    inbox = tables["inbox"]
    assert [(r["attempts"], r["owner"], r["stuck"]) for r in inbox["top_rows"]] == [
        (9, "7", True),
        (7, None, False),
        (6, "1", False),
        (5, None, False),
    ]
    assert inbox["top_rows"][0]["url"].endswith("/tables/inbox/row?id=%5B%2200000000-0000-0000-0000-000000000002%22%5D")
    # owner 0 is no one: its rows make the group of no owner
    assert [(g["owner"], g["rows"], g["stuck"], g["max_attempts"]) for g in inbox["by_owner"]] == [
        (None, 2, 0, 7),
        ("7", 1, 1, 9),
        ("1", 1, 0, 6),
    ]
    assert inbox["by_group"] is None and "not recorded by Wolverine" in inbox["group"]["note"]
    assert inbox["window_applies"] is False and hot["since"] is None
    assert [(r["attempts"], r["owner"], r["stuck"]) for r in tables["outbox"]["top_rows"]] == [(5, "9", True)]
    assert tables["keys"]["table"] is None and tables["keys"]["attempts"]["note"].startswith(
        "Wolverine durable messaging (PostgreSQL) has no keys table"
    )

    workers = client.get("/api/v1/workers").get_json()
    assert [
        (w["role"], w["name"], w["stuck"], w["in_progress"], w["failed"], w["done"], w["last_seen"])
        for w in workers["items"]
    ] == [
        ("inbox", "7", 2, 2, None, 0, None),
        ("outbox", "9", 1, None, None, None, None),
        ("inbox", "1", 0, 1, None, 1, None),
    ]
    assert workers["items"][0]["url"].endswith("/tables/inbox?state=stuck")

    page = BeautifulSoup(client.get("/workers").data, "html.parser")
    row = page.select_one('tr[data-worker="7"][data-role="inbox"]')
    assert {td["data-col"]: td.get_text(" ", strip=True) for td in row.select("td[data-col]")} == {
        "stuck": "2",
        "in_progress": "2",
        "done": "0",
    }
    # failed (dead letters are a table of their own) and a time of change: recorded for no table with an owner
    assert " ".join(page.select_one("[data-not-recorded-states]").get_text().split()) == (
        "Failed: not recorded by Wolverine durable messaging (PostgreSQL) for wolverine_outgoing_envelopes or "
        "wolverine_incoming_envelopes."
    )
    assert "no window applies" in page.get_text() and page.select_one("nav.tabs") is None
    hot_page = BeautifulSoup(client.get("/hotspots?min_attempts=5").data, "html.parser")
    assert [td.get_text(strip=True) for td in hot_page.select("#top-rows-inbox td[data-col=attempts]")] == [
        "9",
        "7",
        "6",
        "5",
    ]
    assert "A group per row is not recorded by Wolverine" in hot_page.get_text()
    assert hot_page.select_one("#hotspots-panel nav.tabs") is None  # no table records when a row changed
    assert [a.get_text() for a in hot_page.select("#top-rows-inbox td.keycell a")][
        0
    ] == "00000000-0000-0000-0000-000000000002"

    found = client.get("/api/v1/search?q=00000000-0000-0000-0000-000000000011").get_json()
    assert [(i["role"], i["identity"]) for i in found["items"]] == [
        ("outbox", '["00000000-0000-0000-0000-000000000011"]')
    ]
    assert [w["role"] for w in client.get("/api/v1/search?q=7").get_json()["workers"]] == ["inbox"]
    breakdown = client.get("/api/v1/keys/breakdown").get_json()
    assert breakdown["table"] is None and "has no keys table" in breakdown["note"]


@pytest.mark.system  # DBOS's migrations and some twenty requests: over a second
def test_dbos_hotspots_workers_breakdown_and_search_equal_the_rows(make_app, empty_database_url):
    _database(empty_database_url, "dbos", [ddl.DBOS], DBOS_ROWS)
    client = make_app(empty_database_url, PROFILE="dbos", DEFAULT_LEASE_SECONDS=300).test_client()
    every = client.get("/api/v1/hotspots?window=all&min_attempts=5").get_json()
    keys = next(t for t in every["tables"] if t["role"] == "keys")
    assert [(json.loads(r["identity"]), r["attempts"], r["owner"], r["stuck"]) for r in keys["top_rows"]] == [
        (["wf-err"], 7, "e1", False),
        (["wf-silent"], 6, "e2", True),
        (["wf-done-old"], 5, "e3", False),
    ]
    assert [(g["owner"], g["rows"], g["stuck"], g["max_attempts"]) for g in keys["by_owner"]] == [
        ("e1", 1, 0, 7),
        ("e2", 1, 1, 6),
        ("e3", 1, 0, 5),
    ]
    # DBOS records when a workflow last changed (updated_at): the window narrows its rows
    day = client.get("/api/v1/hotspots?window=24h&min_attempts=5").get_json()
    assert day["since"] is not None
    assert [r["attempts"] for r in next(t for t in day["tables"] if t["role"] == "keys")["top_rows"]] == [7, 6]

    hour = client.get("/api/v1/workers?window=1h").get_json()
    assert [(w["name"], w["stuck"], w["in_progress"], w["failed"], w["done"]) for w in hour["items"]] == [
        ("e1", 1, 1, 1, 0),
        ("e2", 1, 1, 0, 0),
        ("e3", 0, 1, 0, 1),
    ]
    seen = {w["name"]: w["last_seen"] for w in hour["items"]}
    with psycopg.connect(empty_database_url) as conn:
        conn.execute("SET timezone = 'UTC'")
        expected = dict(
            conn.execute("""SELECT executor_id, to_timestamp(max(updated_at)::float8 / 1000)
                                        FROM dbos.workflow_status
                                        WHERE status = 'PENDING' OR updated_at >= (extract(epoch FROM now()) * 1000
                                                                                     - 3600000)
                                        GROUP BY 1""").fetchall()
        )
    assert {n: datetime.fromisoformat(v) for n, v in seen.items()} == expected
    week = client.get("/api/v1/workers?window=7d").get_json()
    assert {w["name"]: w["done"] for w in week["items"]} == {"e1": 0, "e2": 0, "e3": 2}
    page = BeautifulSoup(client.get("/workers").data, "html.parser")
    assert page.select_one('tr[data-worker="e1"] td[data-col=failed]').get_text(strip=True) == "1"
    assert page.select_one('tr[data-worker="e1"] td[data-col=last_seen] time') is not None

    breakdown = client.get("/api/v1/keys/breakdown").get_json()
    assert (breakdown["table"], breakdown["total"], breakdown["by_group"]) == ("workflow_status", 2, None)
    assert breakdown["by_owner"] == [{"owner": "e1", "count": 1}, {"owner": "e2", "count": 1}]
    assert "not recorded by DBOS" in breakdown["group"]["note"]
    assert client.get("/api/v1/keys/breakdown?status=processing").status_code == 400

    exact = client.get("/api/v1/search?q=wf-silent").get_json()
    assert [i["identity"] for i in exact["items"]] == ['["wf-silent"]']
    assert client.get("/search?q=wf-silent").headers["Location"].endswith("/tables/keys/row?id=%5B%22wf-silent%22%5D")
    prefix = client.get("/api/v1/search?q=wf-done").get_json()
    assert sorted(i["identity"] for i in prefix["items"]) == ['["wf-done"]']  # the exact one, before any prefix
    by_prefix = client.get("/api/v1/search?q=wf-d").get_json()
    assert sorted(i["identity"] for i in by_prefix["items"]) == ['["wf-done"]', '["wf-done-old"]']
    assert [w["owner"] for w in client.get("/api/v1/search?q=e2").get_json()["workers"]] == ["e2"]


@pytest.mark.system
def test_spring_modulith_records_no_owner_and_says_so(make_app, empty_database_url):
    _database(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2], SPRING_ROWS)
    client = make_app(empty_database_url, PROFILE="spring-modulith", APP_SCHEMA="modulith").test_client()
    workers = client.get("/api/v1/workers").get_json()
    outbox = next(t for t in workers["tables"] if t["role"] == "outbox")
    assert workers["items"] == [] and outbox["owner"] == {
        "recorded": False,
        "columns": [],
        "note": "who holds a row is not recorded by Spring Modulith event publication registry for its outbox table",
    }
    page = _text(client.get("/workers").data)
    assert "Who holds a row is not recorded by Spring Modulith event publication registry for its outbox table" in page
    runbook = BeautifulSoup(client.get("/runbook/stuck-keys").data, "html.parser")
    links = [a["href"] for a in runbook.select(".runbook-steps a")]
    assert "/tables/outbox?state=stuck" in links and "/hotspots" in links and "/workers" not in links
    assert runbook.select_one("li[data-not-recorded]") is not None
    nav = [a.get_text() for a in BeautifulSoup(client.get("/").data, "html.parser").select("nav a")]
    assert {"Hotspots", "Workers", "Suppression", "Runbooks"} <= set(nav) and "Keys" not in nav


def test_nservicebus_names_its_tables_for_search(make_app, empty_database_url):
    _database(empty_database_url, "public", [_nservicebus("Sales_")], None)
    client = make_app(empty_database_url, PROFILE="nservicebus", OUTBOX_TABLE="Sales_OutboxData").test_client()
    answer = client.get("/api/v1/search?q=m-1").get_json()
    assert answer["match"] == "none" and [s["table"] for s in answer["searched"]] == ["Sales_OutboxData"]


def test_the_table_of_what_each_profile_records_in_the_docs_is_the_profiles_own():
    from pathlib import Path

    from idemdash.core.profiles import PROFILES
    from idemdash.core.profiles.dimensions import ROLES, column, records, role_table

    dims = ["group", "owner", "attempts", "lease", "changed", "decisions", "suppression"]

    def cell(table, dimension: str) -> str:
        if not records(table, dimension):
            return "-"
        if dimension == "group":
            return ", ".join(f"`{g}`" for g in table.groups)
        return "yes" if dimension in ("decisions", "suppression") else f"`{column(table, dimension)}`"

    rows = [
        f"| {name} | {role}: `{table.name}` | " + " | ".join(cell(table, d) for d in dims) + " |"
        for name, chosen in PROFILES.items()
        for role in ROLES
        if (table := role_table(chosen, role)) is not None
    ]
    doc = (Path(__file__).resolve().parent.parent / "docs" / "profiles.md").read_text()
    section = doc.split("## What each profile records", 1)[1].split("\n## ", 1)[0]
    shown = [line for line in section.splitlines() if line.startswith("| ") and ": `" in line]
    assert shown == rows
