"""/audit and GET /api/v1/audit, against audit rows the tests insert themselves."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from bs4 import BeautifulSoup
from psycopg.types.json import Jsonb

from idemdash.queries import cursor

FIELDS = {
    "audit_id",
    "at",
    "actor",
    "action",
    "scope",
    "key",
    "from_status",
    "to_status",
    "reason",
    "evidence",
    "detail",
    "parent_id",
    "children",
}
BASE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def insert_audit(
    conn,
    *,
    at=BASE,
    actor="alice",
    action="reclassify:safe_to_retry",
    scope="create_order",
    key="k-1",
    from_status="processing",
    to_status="failed_retryable",
    reason="worker died",
    evidence=None,
    detail=None,
) -> int:
    return conn.execute(
        """INSERT INTO idemdash.audit_log (at, actor, action, scope, key, from_status, to_status, reason,
                                           evidence, detail)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING audit_id""",
        (at, actor, action, scope, key, from_status, to_status, reason, Jsonb(evidence or {}), Jsonb(detail or {})),
    ).fetchone()[0]


def walk(client, url):
    """Follow next_cursor to the end; every item in order, and how many pages it took."""
    items, next_cursor, pages = [], None, 0
    while True:
        sep = "&" if "?" in url else "?"
        response = client.get(url + (f"{sep}cursor={next_cursor}" if next_cursor else ""))
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        items += body["items"]
        next_cursor = body["next_cursor"]
        pages += 1
        assert pages < 500
        if next_cursor is None:
            return items, pages


@pytest.fixture
def many(conn):
    """40 actions over 3 actors and 2 scopes, many sharing the very same timestamp."""
    rng = random.Random(11)
    rows = []
    for i in range(40):
        at = BASE - timedelta(seconds=rng.choice([0, 0, 0, 5, 5, 60, 3600]))  # heavy ties in `at`
        row = {
            "at": at,
            "actor": rng.choice(["alice", "bob", "carol@example.com"]),
            "scope": rng.choice(["create_order", "refund"]),
            "key": f"key-{i % 7}",
        }
        row["audit_id"] = insert_audit(conn, **row)
        rows.append(row)
    rows.sort(key=lambda r: (r["at"], r["audit_id"]), reverse=True)
    return rows


def test_api_walks_every_action_once_newest_first_with_ties(client, many):
    items, pages = walk(client, "/api/v1/audit?limit=3")
    assert [i["audit_id"] for i in items] == [r["audit_id"] for r in many]
    assert pages == 14  # 40 rows, 3 a page: the 14th page holds the last row
    assert set(items[0]) == FIELDS
    assert datetime.fromisoformat(items[0]["at"]) == many[0]["at"]
    assert items[0]["evidence"] == {} and items[0]["reason"] == "worker died"


@pytest.mark.parametrize(
    "query",
    [
        "actor=bob",
        "scope=refund",
        "key=key-3",
        "scope=create_order&actor=alice",
        "scope=refund&key=key-2&actor=carol@example.com",
    ],
)
def test_api_filters_match_exactly(client, many, query):
    wanted = dict(part.split("=") for part in query.split("&"))
    expected = [r["audit_id"] for r in many if all(r[k] == v for k, v in wanted.items())]
    assert expected, "the fixture should produce some matches"
    items, _ = walk(client, f"/api/v1/audit?{query}&limit=4")
    assert [i["audit_id"] for i in items] == expected


def test_api_filter_with_no_match_and_default_limit(client, conn):
    for i in range(60):
        insert_audit(conn, key=f"k{i}")
    body = client.get("/api/v1/audit").get_json()
    assert len(body["items"]) == 50 and body["next_cursor"]
    assert client.get("/api/v1/audit?actor=ALICE").get_json() == {"items": [], "next_cursor": None}
    assert client.get("/api/v1/audit?key=k").get_json()["items"] == []  # exact, not a prefix


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=501",
        "limit=ten",
        "cursor=***",
        "cursor=" + "A" * 9000,
        "cursor=" + cursor.encode(["not a time", 1]),
        "cursor=" + cursor.encode([BASE.isoformat(), "1"]),
        "cursor=" + cursor.encode([BASE.isoformat(), True]),
        "cursor=" + cursor.encode([BASE.isoformat(), 2**70]),
        "cursor=" + cursor.encode([BASE.replace(tzinfo=None).isoformat(), 1]),
        "cursor=" + cursor.encode([BASE.isoformat()]),
        "actor=" + "a" * 501,
        "scope=" + "s" * 2001,
        "key=%00",
    ],
)
def test_bad_parameters_are_400(client, query):
    api = client.get(f"/api/v1/audit?{query}")
    assert api.status_code == 400, query
    assert api.get_json()["error"]
    page = client.get(f"/audit?{query}")
    assert page.status_code == 400
    assert page.mimetype == "text/html"


def _rows(response):
    soup = BeautifulSoup(response.data, "html.parser")
    return soup, soup.select("#audit-panel tbody tr")


def test_page_lists_actions_with_links_and_pager(client, conn):
    first = insert_audit(conn, at=BASE - timedelta(minutes=5), key="a/b c", reason="first", evidence={"outbox_rows": 1})
    second = insert_audit(
        conn,
        at=BASE,
        actor="bob",
        action="reclassify:abandoned",
        to_status="failed_final",
        scope="refund",
        key="r-9",
        reason="second",
    )
    insert_audit(
        conn,
        at=BASE,
        actor="scheduler",
        action="purge:run",
        scope=None,
        key=None,
        from_status=None,
        to_status=None,
        reason=None,
        detail={"table": "inbox"},
    )
    soup, rows = _rows(client.get("/audit"))
    assert len(rows) == 3
    assert [r["id"] for r in rows[1:]] == [f"audit-{second}", f"audit-{first}"]  # newest first, ties by id
    cells = rows[1].find_all("td")
    assert cells[1].get_text(strip=True) == "bob"
    assert cells[2].code.get_text() == "reclassify:abandoned"
    assert cells[3].select_one("a.key")["href"] == "/keys/refund/r-9"
    assert cells[2].select_one(".change").get_text(" ", strip=True) == "processing → failed_final"
    assert cells[4].get_text(strip=True) == "second"
    assert rows[2].find_all("td")[3].select_one("a.key")["href"] == "/keys/create_order/a/b%20c"
    assert '"outbox_rows": 1' in rows[2].find("pre").get_text()
    purge = rows[0].find_all("td")
    assert purge[3].get_text(strip=True) == "-" and purge[2].select_one(".change") is None
    assert '"table": "inbox"' in purge[5].get_text()
    # actor and scope links filter the log
    assert cells[1].a["href"] == "/audit?actor=bob"
    assert cells[3].select_one("a.scope")["href"] == "/audit?scope=refund"

    soup, rows = _rows(client.get("/audit?limit=2"))
    assert len(rows) == 2
    older = soup.select_one("#audit-panel a[rel=next]")
    assert older.get_text(strip=True) == "Older 2 »"
    soup, rows = _rows(client.get(older["href"]))
    assert [r["id"] for r in rows] == [f"audit-{first}"]
    assert soup.select_one("#audit-panel a[rel=next]") is None
    assert "« Newest" in soup.select_one("#audit-panel .pager").get_text()


def test_page_filter_form_works_without_javascript(client, conn):
    insert_audit(conn, actor="alice", key="mine")
    insert_audit(conn, actor="bob", key="theirs")
    soup, rows = _rows(client.get("/audit?actor=bob"))
    assert [r.select_one("a.key").get_text(strip=True) for r in rows] == ["theirs"]
    form = soup.select_one("form#filters")
    assert form["method"] == "get" and form["action"] == "/audit"
    assert form["hx-push-url"] == "true" and form["hx-target"] == "#audit-panel"
    inputs = form.select("input")
    assert inputs[0]["name"] == "scope" and inputs[0].has_attr("data-filter-focus")
    assert form.select_one("input[name=actor]")["value"] == "bob"
    panel = soup.select_one("#audit-panel")
    assert panel.has_attr("data-poll") and panel["hx-trigger"] == "every 30s, refresh"
    # an empty field submitted by the plain form is dropped from the address
    redirect = client.get("/audit?scope=&key=&actor=bob")
    assert redirect.status_code == 302 and redirect.headers["Location"] == "/audit?actor=bob"


def test_htmx_gets_only_the_panel(client, conn):
    insert_audit(conn, key="frag-key")
    response = client.get("/audit?key=frag-key", headers={"HX-Request": "true"})
    text = response.get_data(as_text=True)
    assert text.lstrip().startswith('<div id="audit-panel"')
    assert "<header" not in text
    soup = BeautifulSoup(text, "html.parser")
    assert soup.select_one("a.key")["href"] == "/keys/create_order/frag-key"  # macros imported in the block
    assert "HX-Request" in response.headers["Vary"]


def test_empty_states_say_what_to_do(client, conn):
    text = BeautifulSoup(client.get("/audit").data, "html.parser").select_one("#audit-panel").get_text(" ")
    assert "No operator actions yet" in text and "Reclassifying a stuck key" in text
    insert_audit(conn)
    text = BeautifulSoup(client.get("/audit?actor=nobody").data, "html.parser").select_one("#audit-panel").get_text(" ")
    assert "No operator actions match these filters" in text
    last = client.get("/api/v1/audit?limit=1").get_json()
    assert last["next_cursor"] is None
    beyond = cursor.encode([BASE.isoformat(), 1])
    text = (
        BeautifulSoup(client.get(f"/audit?cursor={beyond}").data, "html.parser")
        .select_one("#audit-panel")
        .get_text(" ")
    )
    assert "this was the last page" in text


def test_untrusted_text_renders_inert(client, conn):
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    insert_audit(
        conn,
        actor=f"eve{payload}",
        key=f"k{payload}",
        scope=f"s{payload}",
        reason=f"why {payload}",
        action=f"reclassify:{payload}",
        from_status=payload,
        to_status='x" onmouseover="alert(3)',
        evidence={"note": payload},
    )
    response = client.get("/audit")
    soup = BeautifulSoup(response.data, "html.parser")
    body = soup.select_one("#audit-panel")
    assert body.find("script") is None and body.find("img") is None
    assert not any(attr.startswith("on") for tag in body.find_all(True) for attr in tag.attrs)
    row = body.select_one("tbody tr")
    assert row.find_all("td")[4].get_text(strip=True) == f"why {payload}"
    assert row.select_one("a.scope").get_text() == f"s{payload}"
    assert row.find_all("td")[1].get_text(strip=True) == f"eve{payload}"
    assert payload in row.find("pre").get_text()
    api = client.get("/api/v1/audit").get_json()["items"][0]
    assert api["reason"] == f"why {payload}" and api["key"] == f"k{payload}"


def test_sign_in_applies_to_the_audit_log(make_app, conn):
    insert_audit(conn, actor="alice")
    client = make_app(AUTH="proxy").test_client()
    viewer = {"X-Forwarded-User": "bob", "X-Forwarded-Groups": "developers"}
    assert client.get("/audit", headers=viewer).status_code == 200  # reading is a viewer's right
    assert client.get("/api/v1/audit", headers=viewer).get_json()["items"][0]["actor"] == "alice"
    assert client.get("/api/v1/audit", headers=viewer, environ_base={"REMOTE_ADDR": "10.9.8.7"}).status_code == 401


def test_a_bulk_action_is_one_line_that_expands_to_its_keys(client, conn):
    from idemdash.queries import Tables
    from idemdash.queries.app_schema import claim_key

    for i in range(4):
        claim_key(conn, Tables(), "refund", f"r{i}", "h", "api-1", lock_seconds=0)
    single = insert_audit(conn, at=datetime.now(timezone.utc), scope="refund", key="other")
    api = "/api/v1/keys/reclassify-bulk"
    preview = client.post(api, json={"filter": {"scope": "refund"}, "to": "abandoned", "preview": True}).get_json()
    done = client.post(
        api,
        json={"filter": {"scope": "refund"}, "to": "abandoned", "reason": "refunds stuck", "as_of": preview["as_of"]},
    ).get_json()
    assert done["changed"] == 4

    items = client.get("/api/v1/audit").get_json()["items"]
    assert [(i["audit_id"], i["children"], i["key"]) for i in items] == [
        (done["audit_id"], 4, None),
        (single, 0, "other"),
    ]
    assert items[0]["detail"]["filter"]["scope"] == "refund" and items[0]["reason"] == "refunds stuck"
    # scope filter: the bulk line counts for its scope
    assert [i["audit_id"] for i in client.get("/api/v1/audit?scope=refund").get_json()["items"]] == [
        done["audit_id"],
        single,
    ]
    children = client.get(f"/api/v1/audit?parent={done['audit_id']}").get_json()["items"]
    assert sorted(c["key"] for c in children) == ["r0", "r1", "r2", "r3"]
    assert {c["parent_id"] for c in children} == {done["audit_id"]}
    # a key's history shows the bulk action's row for that key
    [row] = client.get("/api/v1/audit?scope=refund&key=r2").get_json()["items"]
    assert row["parent_id"] == done["audit_id"] and row["to_status"] == "failed_final"

    page = BeautifulSoup(client.get("/audit").data, "html.parser")
    rows = page.select("#audit-panel table.audit > tbody > tr")
    assert len(rows) == 2
    summary = rows[0].select_one("details.children summary")
    assert summary["data-children"] == "4" and "stuck keys in scope 'refund'" in summary.get_text()
    assert rows[0].select_one("details.children")["hx-get"] == f"/audit?parent={done['audit_id']}"
    # what the expansion loads (and the link without JavaScript) lists the four keys
    expanded = BeautifulSoup(
        client.get(f"/audit?parent={done['audit_id']}", headers={"HX-Request": "true"}).data, "html.parser"
    )
    assert sorted(a.get_text() for a in expanded.select("table.audit td.keycell a.key")) == ["r0", "r1", "r2", "r3"]
