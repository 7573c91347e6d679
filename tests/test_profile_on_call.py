"""The on-call pages on a database of every profile (the one model, dashboard/one_model.py): `/`, `/keys`, `/outbox`,
`/outbox/poison`, `/inbox` and their JSON answer 200 on another library's tables, each number by the library's own
states (the counts /api/v1/tables gives), and a panel the library cannot fill says so in words, never 0."""

from __future__ import annotations

import json

import psycopg
import pytest
from bs4 import BeautifulSoup

from tests import library_ddl as ddl
from tests.test_browser_profiles import CASES as SEEDED
from tests.test_browser_profiles import ZONES
from tests.test_custom_shapes import SHAPE, TABLE
from tests.test_detect import CASES, IDS, _create_case
from tests.test_profile_pages import SPRING_COUNTS, SPRING_ROWS

ROUTES = (
    "/",
    "/api/v1/overview",
    "/keys",
    "/api/v1/keys",
    "/outbox",
    "/api/v1/outbox",
    "/outbox/poison",
    "/api/v1/outbox/poison",
    "/inbox",
    "/api/v1/inbox",
)
FIELDS = {"stuck": "stuck", "in progress": "in_progress", "pending": "pending", "failed": "failed", "done": "done"}


@pytest.fixture(autouse=True)
def _no_config(monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)


def _tables_counts(client) -> dict[str, dict[str, int | None]]:
    """Each role's count of each meaning as /api/v1/tables gives it (the library's own states); None: not recorded."""
    answer = client.get("/api/v1/tables").get_json()
    return {
        t["role"]: {s["meaning"]: s["count"] if s["recorded"] else None for s in t["states"]}
        for t in answer["tables"]
        if t["name"]
    }


def _assert_overview_matches_tables(client) -> dict:
    overview = client.get("/api/v1/overview").get_json()
    counts = _tables_counts(client)
    for role in overview["roles"]:
        if role["no_table"]:
            assert role["role"] not in counts and role["table"] is None
            assert all(v == role["no_table"] for v in role["not_recorded"].values())
            continue
        for meaning, field in FIELDS.items():
            assert role[field] == counts[role["role"]][meaning], (role["role"], meaning)
            if counts[role["role"]][meaning] is None:
                assert role["not_recorded"][field].endswith("not recorded by " + overview["library"])
    return overview


@pytest.mark.system  # every route, a second and a half
def test_a_spring_modulith_database_gets_the_overview_the_lists_and_a_rows_page_in_a_zone_that_is_not_utc(
    make_app, empty_database_url
):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        conn.execute("UPDATE modulith.event_publication SET completion_attempts = 4 WHERE status = 'PUBLISHED'")
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = 'Asia/Tokyo'")
    client = make_app(
        empty_database_url,
        PROFILE="spring-modulith",
        APP_SCHEMA="modulith",
        INBOX_RETENTION_DAYS=1,
        OUTBOX_RETENTION_DAYS=1,
        DEFAULT_LEASE_SECONDS=300,
    ).test_client()
    for path in ROUTES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.data[:300])
    overview = _assert_overview_matches_tables(client)
    keys, outbox, inbox = overview["roles"]
    assert {f: outbox[f] for f in FIELDS.values()} == {f: SPRING_COUNTS[m] for m, f in FIELDS.items()}
    # the fresh PUBLISHED row was tried 4 times: likely poison, apart; the lag is the stale PROCESSING row's hour
    assert (outbox["poison"], outbox["done_24h"]) == (1, 1)
    assert 3500 < outbox["lag_seconds"] < 3700 and outbox["poison_oldest_seconds"] < 60
    assert keys["no_table"].startswith("Spring Modulith event publication registry has no keys table")
    assert inbox["no_table"] and keys["stuck"] is None
    soup = BeautifulSoup(client.get("/").data, "html.parser")
    assert soup.select_one("[data-metric='outbox.stuck']").get_text() == "1"
    assert soup.select_one("[data-metric='outbox.poison']").get_text() == "1"
    assert "has no keys or inbox table" in soup.select_one("[data-no-table]").get_text()
    assert [a.get_text() for a in soup.select("nav[aria-label=Pages] a")] == [
        "Overview",
        "Hotspots",
        "Workers",
        "Suppression",
        "Outbox",
        "Audit",
        "Purges",
        "Health",
        "Runbooks",
        "Tables",
    ]
    assert "spring-modulith · read-only" in soup.select_one("header").get_text()
    # the outbox: pending rows by the library's states, the poison one listed apart; a row's own page by its uuid
    pending = client.get("/api/v1/outbox").get_json()
    assert [i["row"]["status"] for i in pending["items"]] == ["PROCESSING", "PUBLISHED"]
    assert pending["not_recorded"]["group"].startswith("a group per row is not recorded by Spring Modulith")
    [poison] = client.get("/api/v1/outbox/poison").get_json()["items"]
    assert poison["row"]["status"] == "PUBLISHED"
    [row_id] = json.loads(poison["identity"])
    row = client.get(f"/api/v1/outbox/{row_id}")
    assert row.status_code == 200 and row.get_json()["row"]["status"] == "PUBLISHED"
    assert client.get(f"/outbox/{row_id}").status_code == 200
    missing = client.get("/api/v1/outbox/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    # keyset pages: one row a page, then the next, none twice
    first = client.get("/api/v1/outbox?state=done&limit=2").get_json()
    second = client.get(f"/api/v1/outbox?state=done&limit=2&cursor={first['next_cursor']}").get_json()
    assert len(first["items"]) == 2 and len(second["items"]) == 1 and second["next_cursor"] is None
    assert not {i["identity"] for i in first["items"]} & {i["identity"] for i in second["items"]}
    # dates as people read them: how long ago, the absolute time on hover
    page = BeautifulSoup(client.get("/outbox").data, "html.parser")
    assert page.select("table.library-rows time[data-rel]") and "T" not in page.select_one("time[data-rel]").get_text()
    # writes of the reference tables' actions stay refused
    assert (
        client.post(
            "/api/v1/keys/reclassify", json={"scope": "s", "key": "k", "to": "safe_to_retry", "reason": "r"}
        ).status_code
        == 403
    )


@pytest.mark.system  # a second each, thirteen shapes
@pytest.mark.parametrize(("name", "version", "default_schema", "statements", "tables"), CASES, ids=IDS)
def test_every_profile_answers_every_on_call_route_with_its_own_tables(
    make_app, empty_database_url, name, version, default_schema, statements, tables
):
    _create_case(empty_database_url, default_schema, statements)
    overrides = {"OUTBOX_TABLE": tables["outbox"]} if name == "nservicebus" else {}
    client = make_app(empty_database_url, PROFILE=name, **overrides).test_client()
    for path in ROUTES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.data[:300])
    overview = _assert_overview_matches_tables(client)
    assert overview["problem"] is None and [r["role"] for r in overview["roles"]] == ["keys", "outbox", "inbox"]
    for role in overview["roles"]:
        assert role["table"] == tables.get(role["role"]) and bool(role["no_table"]) == (role["role"] not in tables)
    # a role the library has no table for: its page says so
    keys = client.get("/api/v1/keys").get_json()
    assert (keys["no_table"] is None) == ("keys" in tables)
    if "keys" not in tables:
        assert "has no keys table" in BeautifulSoup(client.get("/keys").data, "html.parser").get_text()
    # a key by scope and key: 404 where there is none (or where one column tells keys apart: naming the row's page)
    missing = client.get("/api/v1/keys/1/k")
    assert missing.status_code == 404 and missing.get_json()["error"]
    assert client.get("/keys/1/k").status_code == 404


CUSTOM_COUNTS = {"pending": 2, "in progress": 2, "stuck": 1, "done": 2, "failed": 1}


@pytest.mark.system  # every route, a second and a half
def test_a_custom_shape_gets_the_on_call_pages_with_its_own_states(make_app, empty_database_url, tmp_path):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(TABLE)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = 'America/St_Johns'")
    path = tmp_path / "idemdash.toml"
    path.write_text(SHAPE.format(url=empty_database_url))
    client = make_app(None, CONFIG=str(path), DATABASE_URL="", OUTBOX_RETENTION_DAYS=30).test_client()
    for route in ROUTES:
        response = client.get(route)
        assert response.status_code == 200, (route, response.data[:300])
    overview = _assert_overview_matches_tables(client)
    outbox = overview["roles"][1]
    assert {m: outbox[f] for m, f in FIELDS.items()} == CUSTOM_COUNTS
    # the shape names a done time: one row sent a day ago is done in 24 h... and none since; no attempts column
    assert outbox["done_24h"] == 0 and outbox["poison"] is None
    assert (
        outbox["not_recorded"]["poison"]
        == "attempts is not recorded by the payments service's outbox for its outbox table"
    )
    soup = BeautifulSoup(client.get("/").data, "html.parser")
    assert (
        "Attempts is not recorded by the payments service's outbox"
        in soup.select_one("[data-not-recorded='outbox.poison']").get_text()
    )
    poison = client.get("/api/v1/outbox/poison").get_json()
    assert (poison["recorded"], poison["items"]) == (False, [])
    # its stuck row on the outbox's stuck tab; its row page by the identity
    stuck = client.get("/api/v1/outbox?state=stuck").get_json()["items"]
    assert [i["identity"] for i in stuck] == ["[3]"]
    assert client.get("/api/v1/outbox/5f2d5a5e-0000-0000-0000-000000000000").status_code == 404


@pytest.mark.system  # a second or two each, eleven libraries
@pytest.mark.parametrize(
    ("name", "schema", "statements", "rows", "follow", "count"),
    SEEDED,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(SEEDED)],
)
def test_each_librarys_rows_in_every_state_are_counted_by_its_own_definitions_on_every_page(
    make_app, empty_database_url, name, schema, statements, rows, follow, count
):
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(rows)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = 'Asia/Tokyo'")
    zone = {"LIBRARY_TIMEZONE": ZONES[name]} if name in ZONES else {}
    client = make_app(empty_database_url, PROFILE=name, DEFAULT_LEASE_SECONDS=300, **zone).test_client()
    for path in ROUTES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.data[:300])
    overview = _assert_overview_matches_tables(client)
    counts = _tables_counts(client)
    role, meaning = follow
    assert counts[role][meaning] == count
    by_role = {r["role"]: r for r in overview["roles"]}
    if role in by_role:
        assert by_role[role][FIELDS.get(meaning, "done")] == count or meaning not in FIELDS
    # each list shows exactly the rows of each meaning the library records (all of them: fewer than a page)
    for listed, api in (("keys", "/api/v1/keys"), ("outbox", "/api/v1/outbox")):
        for state, n in counts.get(listed, {}).items():
            if n is None or state == "purgeable":
                continue
            items = client.get(api, query_string={"state": state}).get_json()["items"]
            assert len(items) == n, (listed, state)
            shown = BeautifulSoup(
                client.get(api.replace("/api/v1", ""), query_string={"state": state}).data, "html.parser"
            )
            assert len(shown.select("table.library-rows tbody tr")) == n
    # the likely poison rows: as many listed as the overview counts
    outbox = by_role["outbox"]
    poison = client.get("/api/v1/outbox/poison").get_json()
    assert poison["recorded"] == (outbox["poison"] is not None)
    assert len(poison["items"]) == (outbox["poison"] or 0)
    if not poison["recorded"]:
        assert "not recorded by" in poison["note"] or "table" in poison["note"]
    # the overview's HTML shows the same numbers, and says what the library does not record
    soup = BeautifulSoup(client.get("/").data, "html.parser")
    for r in overview["roles"]:
        for field, value in ((f, r[f]) for f in (*FIELDS.values(), "poison", "done_24h") if f != "done"):
            cell = soup.select_one(f"[data-metric='{r['role']}.{field}']")
            if value is not None:
                assert cell is not None and cell.get_text() == f"{value:,}", (r["role"], field)
        for field, words in r["not_recorded"].items():
            if not r["no_table"] and field != "done":  # done: said on the done in 24 h card
                slug = {"in_progress": "in-progress", "done_24h": "done-24h"}.get(field, field)
                said = soup.select_one(f"#card-{r['role']}-{slug}").get_text(" ", strip=True)
                assert words[1:] in said and "not recorded by" in said, (words, said)


# CAP's received rows: two consumer groups, written from the CAP host's wall clock (Asia/Kolkata)
CAP_RECEIVED = """
INSERT INTO cap."received" ("Id", "Version", "Name", "Group", "Content", "Retries", "Added", "ExpiresAt",
                            "StatusName") VALUES
  (11, 'v1', 'orders.created', 'billing', '{}', 0, (now() AT TIME ZONE 'Asia/Kolkata') - interval '3 hours',
   (now() AT TIME ZONE 'Asia/Kolkata') + interval '1 day', 'Succeeded'),
  (12, 'v1', 'orders.created', 'billing', '{}', 0, (now() AT TIME ZONE 'Asia/Kolkata') - interval '1 hour',
   (now() AT TIME ZONE 'Asia/Kolkata') + interval '1 day', 'Succeeded'),
  (13, 'v1', 'orders.created', 'shipping', '{}', 5, (now() AT TIME ZONE 'Asia/Kolkata') - interval '2 hours', NULL,
   'Scheduled')
"""


def test_where_the_library_records_groups_the_outbox_filters_and_the_inbox_breaks_down_by_them(
    make_app, empty_database_url
):
    [(_, schema, statements, rows, _, _)] = [c for c in SEEDED if c[0] == "cap"]
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(rows)
        conn.execute(CAP_RECEIVED)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = 'Asia/Tokyo'")
    client = make_app(empty_database_url, PROFILE="cap", LIBRARY_TIMEZONE="Asia/Kolkata").test_client()
    outbox = client.get("/api/v1/outbox?state=pending").get_json()
    assert outbox["group_column"] == "Name" and "group" not in outbox["not_recorded"]
    names = sorted(i["row"]["Name"] for i in outbox["items"])
    only = client.get("/api/v1/outbox", query_string={"state": "pending", "group": "orders.created"}).get_json()
    assert [i["row"]["Name"] for i in only["items"]] == ["orders.created"] * names.count("orders.created") != []
    assert {tuple(g["group"]) for g in outbox["by_group"]} >= {("orders.created",)}
    # the backlog's lag reads CAP's local times in its zone: the oldest pending orders.created row came 2 hours ago
    [created] = [g for g in outbox["by_group"] if g["group"] == ["orders.created"]]
    assert 7100 < created["lag_seconds"] < 7300
    inbox = client.get("/api/v1/inbox").get_json()
    assert inbox["group_columns"] == ["Name", "Group"]
    by = {tuple(g["group"]): g for g in inbox["groups"]}
    assert (by[("orders.created", "billing")]["rows"], by[("orders.created", "shipping")]["rows"]) == (2, 1)
    assert 3500 < by[("orders.created", "billing")]["newest_seconds"] < 3700
    assert 10700 < by[("orders.created", "billing")]["oldest_seconds"] < 10900
    # the shipping row was tried 5 times: likely poison, apart; the consumer filter narrows the groups
    assert inbox["numbers"]["poison"] == 1
    assert [g["group"] for g in client.get("/api/v1/inbox?consumer=SHIP").get_json()["groups"]] == [
        ["orders.created", "shipping"]
    ]
    page = BeautifulSoup(client.get("/inbox").data, "html.parser")
    assert len(page.select("table.profile-groups tbody tr")) == 2


def test_the_librarys_tables_of_its_own_roles_are_on_the_overview_with_what_they_record(make_app, empty_database_url):
    """Wolverine records failures in its dead letters, not in its envelopes: the overview says so beside them."""
    [(_, schema, statements, rows, _, _)] = [c for c in SEEDED if c[0] == "wolverine"]
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(rows)
    client = make_app(empty_database_url, PROFILE="wolverine", DEFAULT_LEASE_SECONDS=300).test_client()
    overview = client.get("/api/v1/overview").get_json()
    others = {o["role"]: {s["meaning"]: s["count"] for s in o["states"]} for o in overview["other_tables"]}
    counts = _tables_counts(client)
    assert others["dead_letters"] == {m: n for m, n in counts["dead_letters"].items() if n is not None}
    assert (
        overview["roles"][1]["not_recorded"]["failed"] == "failed is not recorded by Wolverine durable messaging "
        "(PostgreSQL)"
    )
    soup = BeautifulSoup(client.get("/").data, "html.parser")
    link = soup.select_one("[data-other='dead_letters.failed']")
    assert link.get_text(" ", strip=True) == f"{counts['dead_letters']['failed']} failed"
    assert link["href"].endswith("/tables/dead_letters?state=failed")


def test_a_key_of_a_library_told_apart_by_two_columns_opens_by_scope_and_key(make_app, empty_database_url):
    """Brandur's keys are told apart by (user_id, idempotency_key): `/keys/<scope>/<key>` is that row's page."""
    [(_, schema, statements, rows, _, _)] = [c for c in SEEDED if c[0] == "brandur"]
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(rows)
        user_id, key = conn.execute(
            "SELECT user_id, idempotency_key FROM public.idempotency_keys ORDER BY id LIMIT 1"
        ).fetchone()
    client = make_app(empty_database_url, PROFILE="brandur", DEFAULT_LEASE_SECONDS=300).test_client()
    found = client.get(f"/api/v1/keys/{user_id}/{key}")
    assert found.status_code == 200
    assert (found.get_json()["identity"], found.get_json()["row"]["idempotency_key"]) == (
        json.dumps([str(user_id), key]),
        key,
    )
    by_query = client.get("/api/v1/key", query_string={"scope": str(user_id), "key": key}).get_json()
    assert by_query | {"as_of": None} == found.get_json() | {"as_of": None}
    page = BeautifulSoup(client.get(f"/keys/{user_id}/{key}").data, "html.parser")
    assert "idempotency_key" in page.get_text() and key in page.get_text()
    missing = client.get(f"/api/v1/keys/{user_id}/no-such-key")
    assert missing.status_code == 404 and "no row of idempotency_keys" in missing.get_json()["error"]
    assert client.get("/api/v1/keys/not-a-number/k").status_code == 400  # its user_id is a bigint: bad input


def test_the_overview_shows_the_trends_and_purges_stored_in_the_librarys_database(make_app, database_url):
    """A library's tables beside idemdash's own schema (migrated): its stored snapshots and purge runs are shown."""
    _create_case(database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys,
                            failed_retryable_keys, failed_final_keys_24h, outbox_pending, outbox_lag_seconds,
                            inbox_rows_24h, rows_purged)
                        SELECT now() - g * interval '10 minutes', g, 0, 0, 0, 2, 60, 0, 0
                        FROM generate_series(1, 3) g""")
    client = make_app(database_url, PROFILE="spring-modulith", APP_SCHEMA="modulith").test_client()
    overview = client.get("/api/v1/overview").get_json()
    assert [p["stuck_keys"] for p in overview["trends"]] == [3, 2, 1] and overview["last_purges"] == []
    soup = BeautifulSoup(client.get("/").data, "html.parser")
    assert soup.select("figure.spark-card") and not soup.select("[data-trends-empty]")
    assert "No purge has run yet" in soup.get_text()
