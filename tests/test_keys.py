"""Key lists, key detail and the runbook, checked against rows the tests write themselves."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import psycopg
import pytest
from bs4 import BeautifulSoup
from psycopg.types.json import Jsonb

from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema

LEASE = 300

# Keys a browser, a router or a template could mangle.
NASTY_KEYS = [
    "plain-key",
    "a/b/c",
    "a//double",
    "trailing/",
    "/leading",
    "with space",
    "100% sure",
    "what?query=1",
    "hash#fragment",
    "quote'single\"double",
    "üñíçødé/キー/🔑",
    "../escape",
    "a/./b",
    "..",
    "back\\slash",
    "<script>alert('key')</script>",
    "x" * 1200,
]


def insert_key(
    conn,
    scope,
    key,
    status="processing",
    *,
    claimed_by="api-1",
    attempts=1,
    locked_until=timedelta(minutes=-10),
    claimed_ago=timedelta(hours=1),
    updated_ago=timedelta(0),
    expires_in=timedelta(days=1),
    response_body=None,
    failure=None,
    table="app.idempotency_request",
):
    """locked_until is relative to now (negative: lease ran out), or None for no lease."""
    now = conn.execute("SELECT now()").fetchone()[0]
    conn.execute(
        f"""INSERT INTO {table} (idempotency_scope, idempotency_key, request_hash, status, claimed_by,
                claimed_at, locked_until, attempt_count, created_at, updated_at, expires_at, response_body,
                failure_code, failure_message)
            VALUES (%s, %s, 'hash', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (
            scope,
            key,
            status,
            claimed_by,
            now - claimed_ago,
            None if locked_until is None else now + locked_until,
            attempts,
            now - claimed_ago,
            now - updated_ago,
            now + expires_in,
            Jsonb(response_body) if response_body is not None else None,
            failure[0] if failure else None,
            failure[1] if failure else None,
        ),
    )


def walk(client, url):
    """Follow next_cursor to the end; return every item in order."""
    items, cursor, pages = [], None, 0
    while True:
        sep = "&" if "?" in url else "?"
        response = client.get(url + (f"{sep}cursor={cursor}" if cursor else ""))
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        items += body["items"]
        cursor = body["next_cursor"]
        pages += 1
        assert pages < 1000
        if cursor is None:
            return items, pages


def test_stuck_list_matches_ground_truth_and_filters(client, conn):
    rng = random.Random(7)
    truth = []
    for i in range(80):
        scope = rng.choice(["create_order", "refund"])
        worker = rng.choice(["api-1", "api-2", "worker-7"])
        attempts = rng.randint(1, 8)
        kind = rng.choice(["stuck", "live", "nolease_old", "nolease_new", "done"])
        if kind == "stuck":
            insert_key(
                conn,
                scope,
                f"k{i}",
                claimed_by=worker,
                attempts=attempts,
                locked_until=-timedelta(seconds=rng.randint(10, 7200)),
            )
        elif kind == "live":
            insert_key(conn, scope, f"k{i}", claimed_by=worker, attempts=attempts, locked_until=timedelta(minutes=5))
        elif kind == "nolease_old":
            insert_key(
                conn,
                scope,
                f"k{i}",
                claimed_by=worker,
                attempts=attempts,
                locked_until=None,
                claimed_ago=timedelta(seconds=LEASE + 60),
            )
        elif kind == "nolease_new":
            insert_key(
                conn,
                scope,
                f"k{i}",
                claimed_by=worker,
                attempts=attempts,
                locked_until=None,
                claimed_ago=timedelta(seconds=10),
            )
        else:
            insert_key(conn, scope, f"k{i}", "succeeded", claimed_by=worker, attempts=attempts, locked_until=None)
        truth.append((scope, f"k{i}", worker, attempts, kind))

    stuck = {(s, k) for s, k, w, a, kind in truth if kind in ("stuck", "nolease_old")}
    processing = {(s, k) for s, k, w, a, kind in truth if kind != "done"}
    got, _ = walk(client, "/api/v1/keys?status=stuck&limit=7")
    assert {(i["scope"], i["key"]) for i in got} == stuck
    assert len(got) == len(stuck)
    got, _ = walk(client, "/api/v1/keys?status=processing&limit=9")
    assert {(i["scope"], i["key"]) for i in got} == processing

    want = {
        (s, k)
        for s, k, w, a, kind in truth
        if kind in ("stuck", "nolease_old") and s == "refund" and w == "api-2" and a >= 3
    }
    got, _ = walk(client, "/api/v1/keys?status=stuck&scope=refund&claimed_by=api-2&min_attempts=3&limit=2")
    assert {(i["scope"], i["key"]) for i in got} == want

    # the most overdue first: no-lease keys (NULL locked_until) lead, then ascending lease end
    got, _ = walk(client, "/api/v1/keys?status=stuck")
    with_lease = [i["locked_until"] for i in got if i["locked_until"] is not None]
    assert with_lease == sorted(with_lease)
    assert all(i["locked_until"] is None for i in got[: len(got) - len(with_lease)])
    assert all(i["overdue_seconds"] > 0 for i in got)


def test_overdue_filter(client, conn):
    insert_key(conn, "s", "five-min", locked_until=-timedelta(minutes=5))
    insert_key(conn, "s", "two-hours", locked_until=-timedelta(hours=2))
    items = client.get("/api/v1/keys?status=stuck&overdue=1h").get_json()["items"]
    assert [i["key"] for i in items] == ["two-hours"]
    items = client.get("/api/v1/keys?status=stuck&overdue=90s").get_json()["items"]
    assert {i["key"] for i in items} == {"five-min", "two-hours"}


@pytest.mark.parametrize("status", ["stuck", "succeeded"])
def test_pagination_with_ties_sees_every_row_once(client, conn, status):
    # 45 keys share the exact same sort value; only the primary key breaks the tie
    same = conn.execute("SELECT now() - interval '1 hour'").fetchone()[0]
    rows = []
    for scope in ("b-scope", "a-scope", "c/scope"):
        for i in range(15):
            rows.append((scope, f"key-{i:02d}"))
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                   claimed_at, locked_until, created_at, updated_at, expires_at)
               VALUES (%s, %s, 'h', %s, %s, %s, %s, %s, now() + interval '1 day')""",
            [
                (
                    s,
                    k,
                    "processing" if status == "stuck" else "succeeded",
                    same,
                    same if status == "stuck" else None,
                    same,
                    same,
                )
                for s, k in rows
            ],
        )
    got, pages = walk(client, f"/api/v1/keys?status={status}&limit=4")
    keys = [(i["scope"], i["key"]) for i in got]
    assert len(keys) == len(set(keys)) == 45
    assert pages == 12
    expected_order = sorted(rows) if status == "stuck" else sorted(rows, reverse=True)
    assert keys == expected_order


@pytest.mark.system
def test_nasty_keys_round_trip_through_their_links(client, conn):
    for key in NASTY_KEYS:
        insert_key(conn, "create_order", key, response_body={"k": key})
    insert_key(conn, "odd/scope", "k1")
    insert_key(conn, "..", "k2")
    page = BeautifulSoup(client.get("/keys?status=stuck&limit=500").data, "html.parser")
    links = {a["title"]: a["href"] for a in page.select("a.key")}
    assert set(links) == set(NASTY_KEYS) | {"k1", "k2"}
    for key, href in links.items():
        path = urlsplit(href).path
        assert not any(seg in (".", "..") for seg in path.split("/")), href  # a browser would fold these
        detail = client.get(href)
        assert detail.status_code == 200, (key, href)
        soup = BeautifulSoup(detail.data, "html.parser")
        shown = soup.select_one("h1 .mono").get_text()
        assert shown == key
        # and the JSON twin of the same key
        api = soup.find("a", string="JSON")["href"]
        assert client.get(api).get_json()["key"]["key"] == key


def test_html_in_keys_workers_and_bodies_renders_as_inert_text(client, conn):
    payload = "<img src=x onerror=alert(1)><script>alert('x')</script>"
    insert_key(conn, "create_order", payload, claimed_by=payload, response_body={"html": payload})
    conn.execute(
        """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload)
                    VALUES (%s, 'order', gen_random_uuid(), 'create_order', %s, %s)""",
        (payload, payload, Jsonb({"evil": payload})),
    )
    for url in ["/keys?status=stuck", "/keys?status=processing"]:
        soup = BeautifulSoup(client.get(url).data, "html.parser")
        assert not soup.find("img")
        assert [s for s in soup.find_all("script") if not s.get("src")] == []
        assert payload in soup.get_text()
    href = BeautifulSoup(client.get("/keys").data, "html.parser").select_one("a.key")["href"]
    soup = BeautifulSoup(client.get(href).data, "html.parser")
    assert not soup.find("img") and [s for s in soup.find_all("script") if not s.get("src")] == []
    assert payload in soup.select_one("#response-body").get_text()
    assert soup.get_text().count(payload) >= 3  # key, claimed_by, outbox event type


def test_key_detail_json_shape_and_evidence(client, conn):
    insert_key(conn, "create_order", "with-effect", attempts=2)
    conn.execute("""INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload)
                    VALUES ('order.created', 'order', gen_random_uuid(), 'create_order', 'with-effect', '{}')""")
    insert_key(conn, "create_order", "no-effect")
    insert_key(conn, "create_order", "flaky", attempts=9)
    insert_key(conn, "create_order", "live", locked_until=timedelta(minutes=3))
    insert_key(conn, "create_order", "done", "succeeded", locked_until=None, response_body={"orderId": 42})
    insert_key(conn, "create_order", "expired", expires_in=-timedelta(hours=1), claimed_ago=timedelta(days=2))

    body = client.get("/api/v1/keys/create_order/with-effect").get_json()
    assert set(body) >= {"key", "outbox_events", "audit", "suggestion"}
    assert set(body["key"]) >= {
        "scope",
        "key",
        "status",
        "request_hash",
        "claimed_by",
        "claimed_at",
        "locked_until",
        "overdue_seconds",
        "attempt_count",
        "created_at",
        "updated_at",
        "expires_at",
        "response_body",
        "result_ref_type",
        "result_ref_id",
        "failure_code",
        "failure_message",
    }
    assert datetime.fromisoformat(body["key"]["claimed_at"]).tzinfo is not None
    assert [e["event_type"] for e in body["outbox_events"]] == ["order.created"]
    assert body["suggestion"]["to"] == "already_succeeded"
    assert "outbox" in body["suggestion"]["evidence"][0]

    def suggestion(key):
        return client.get(f"/api/v1/keys/create_order/{key}").get_json()["suggestion"]["to"]

    assert suggestion("no-effect") == "safe_to_retry"
    assert suggestion("flaky") == "needs_review"
    assert suggestion("live") is None
    assert suggestion("done") is None
    assert suggestion("expired") == "abandoned"
    assert client.get("/api/v1/keys/create_order/done").get_json()["key"]["response_body"] == {"orderId": 42}


def test_missing_key_is_404_with_a_message(client):
    response = client.get("/api/v1/keys/create_order/nope")
    assert response.status_code == 404
    assert "nope" in response.get_json()["error"]
    assert client.get("/keys/create_order/nope").status_code == 404
    assert client.get("/api/v1/key?scope=create_order").status_code == 400


@pytest.mark.parametrize(
    "query, fragment",
    [
        ("status=bogus", "status must be one of"),
        ("min_attempts=abc", "min_attempts"),
        ("min_attempts=0", "min_attempts"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("overdue=soon", "overdue"),
        ("cursor=!!!", "cursor"),
        ("cursor=bm90LWpzb24", "cursor"),
        ("cursor=WzEsMiwzXQ", "cursor"),
        ("scope=" + "x" * 3000, "scope"),
    ],
)
def test_bad_input_is_a_clear_400(client, query, fragment):
    api = client.get("/api/v1/keys?" + query)
    assert api.status_code == 400
    assert fragment in api.get_json()["error"]
    page = client.get("/keys?" + query)
    assert page.status_code == 400
    assert fragment in page.get_data(as_text=True)


def test_htmx_filter_request_returns_only_the_table(client, conn):
    insert_key(conn, "refund", "r1")
    response = client.get("/keys?status=stuck&scope=refund", headers={"HX-Request": "true"})
    text = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in text and 'id="keys-panel"' in text and "r1" in text
    assert "HX-Request" in response.headers["Vary"]
    # a history restore wants the whole page
    restore = client.get("/keys?status=stuck", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in restore.get_data(as_text=True)


def test_empty_states(client):
    for status in ("stuck", "processing", "succeeded", "failed_retryable", "failed_final"):
        response = client.get(f"/keys?status={status}")
        assert response.status_code == 200
        assert BeautifulSoup(response.data, "html.parser").select_one("p.empty") is not None
        body = client.get(f"/api/v1/keys?status={status}").get_json()
        assert (body["items"], body["next_cursor"], body["prev_cursor"]) == ([], None, None)
        assert body["counts"][status] == {"count": 0, "more": False, "snapshot": None, "snapshot_at": None}


@pytest.mark.system  # over a second: kept out of the fast loop
def test_a_timed_out_panel_says_so_and_names_the_index(make_app, conn, database_url):
    insert_key(conn, "s", "k")
    app = make_app(STATEMENT_TIMEOUT_MS=200)
    client = app.test_client()
    # an open transaction holding an exclusive lock makes every read of the table wait past the timeout
    locked = threading.Event()
    release = threading.Event()

    def hold_lock():
        with psycopg.connect(database_url) as other:
            other.execute("LOCK TABLE app.idempotency_request IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(5)
        page = client.get("/keys?status=stuck")
        assert page.status_code == 200
        soup = BeautifulSoup(page.data, "html.parser")
        problem = soup.select_one(".panel-problem.timeout")
        assert problem is not None and "200 ms" in problem.get_text()
        assert "CREATE INDEX CONCURRENTLY" in problem.select_one("pre.sql").get_text()
        assert soup.select_one("header.topbar") is not None  # the rest of the page rendered
        api = client.get("/api/v1/keys?status=stuck")
        assert api.status_code == 503 and "CREATE INDEX" in api.get_json()["error"]
    finally:
        release.set()
        holder.join(10)


def test_missing_table_degrades_the_panel_not_the_page(make_app):
    client = make_app(KEYS_TABLE="no_such_table").test_client()
    page = client.get("/keys")
    assert page.status_code == 200
    problem = BeautifulSoup(page.data, "html.parser").select_one(".panel-problem.schema")
    assert problem is not None and "init-app-schema" in problem.get_text()


def test_other_schema_and_table_names(make_app, empty_database_url):
    tables = Tables(schema="Ops Data", keys="Idem Keys", inbox="in box", outbox="out box")
    with psycopg.connect(empty_database_url, autocommit=True) as c:
        from idemdash.queries.migrate import migrate

        migrate(c)
        create_app_schema(c, tables, "text")
        insert_key(c, "sc", "k/1", table='"Ops Data"."Idem Keys"')
    client = make_app(
        empty_database_url, APP_SCHEMA="Ops Data", KEYS_TABLE="Idem Keys", INBOX_TABLE="in box", OUTBOX_TABLE="out box"
    ).test_client()
    assert [i["key"] for i in client.get("/api/v1/keys?status=stuck").get_json()["items"]] == ["k/1"]
    assert client.get("/api/v1/keys/sc/k/1").get_json()["key"]["status"] == "processing"
    assert client.get("/api/v1/overview").get_json()["keys"]["stuck"] == 1


def test_runbook_links(make_app, conn):
    insert_key(conn, "create_order", "a b/c")
    default = make_app().test_client()
    soup = BeautifulSoup(default.get("/keys/create_order/a b/c").data, "html.parser")
    href = soup.select_one("main").find("a", string="Runbook")["href"]
    runbook = default.get(href)
    assert runbook.status_code == 200
    text = BeautifulSoup(runbook.data, "html.parser").get_text()
    assert "already_succeeded" in text and "needs_review" in text
    assert "idempotency_key = 'a b/c'" in text  # the inspection SQL names this key as a quoted literal

    custom = make_app(RUNBOOK_URL="https://wiki.example/runbooks/stuck?scope={scope}&key={key}&s={status}")
    body = custom.test_client().get("/api/v1/keys/create_order/a b/c").get_json()
    assert body["runbook_url"] == "https://wiki.example/runbooks/stuck?scope=create_order&key=a%20b%2Fc&s=stuck"


def test_runbook_sql_quotes_hostile_keys(client):
    text = BeautifulSoup(
        client.get("/runbook/stuck-keys?scope=s&key=x'; DROP TABLE t; --").data, "html.parser"
    ).get_text()
    assert "idempotency_key = 'x''; DROP TABLE t; --'" in text


def test_text_status_column(make_app, text_status_database_url):
    with psycopg.connect(text_status_database_url, autocommit=True) as c:
        insert_key(c, "s", "stuck-one")
        insert_key(c, "s", "done", "failed_final", locked_until=None, failure=("boom", "it broke"))
    client = make_app(text_status_database_url).test_client()
    assert [i["key"] for i in client.get("/api/v1/keys?status=stuck").get_json()["items"]] == ["stuck-one"]
    assert [i["key"] for i in client.get("/api/v1/keys?status=failed_final").get_json()["items"]] == ["done"]
    assert client.get("/api/v1/keys/s/done").get_json()["key"]["failure_message"] == "it broke"


def test_empty_filter_fields_are_dropped_from_the_address(client):
    response = client.get("/keys?status=stuck&scope=&claimed_by=api-1&min_attempts=")
    assert response.status_code == 302
    assert response.headers["Location"] == "/keys?status=stuck&claimed_by=api-1"
    fragment = client.get("/keys?status=stuck&scope=", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and fragment.headers["HX-Push-Url"] == "/keys?status=stuck"
    assert client.get("/no/such/page?x=").status_code == 404


def test_runbook_lists_the_runbooks_and_the_navigation_opens_it(make_app):
    """`/runbook` answered 404: the navigation's "Runbook" opened the stuck-key runbook and nothing listed both."""
    client = make_app().test_client()
    page = client.get("/runbook")
    assert page.status_code == 200
    soup = BeautifulSoup(page.data, "html.parser")
    listed = {li["data-runbook"]: li.find("a")["href"] for li in soup.select("main li[data-runbook]")}
    assert listed == {"stuck-keys": "/runbook/stuck-keys", "outbox-backlog": "/runbook/outbox-backlog"}
    for href in listed.values():
        runbook = BeautifulSoup(client.get(href).data, "html.parser")
        assert runbook.select_one("main .crumbs a")["href"] == "/runbook"
        assert runbook.select_one('nav[aria-label="Pages"] a[aria-current="page"]').get_text() == "Runbooks"
    nav = soup.select_one('nav[aria-label="Pages"] a[data-go="r"]')
    assert (nav["href"], nav.get_text(), nav.get("aria-current")) == ("/runbook", "Runbooks", "page")
    assert soup.select_one("[data-own-runbooks]") is None
    own = make_app(RUNBOOK_URL="https://wiki.example/runbooks/{runbook}").test_client().get("/runbook")
    note = BeautifulSoup(own.data, "html.parser").select_one("[data-own-runbooks]")
    assert "https://wiki.example/runbooks/{runbook}" in note.get_text()
