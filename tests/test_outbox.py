"""The outbox page and its JSON twin, checked against rows the tests write themselves."""

from __future__ import annotations

import random
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import psycopg
import pytest
from bs4 import BeautifulSoup
from psycopg.types.json import Jsonb

from tests.test_keys import insert_key, walk

MANY = 3  # attempts from which a pending row counts as a likely poison event


@dataclass
class Event:
    event_type: str
    status: str
    created_at: datetime
    attempt_count: int = 0
    published_at: datetime | None = None
    scope: str = "create_order"
    key: str = field(default_factory=lambda: f"key-{uuid.uuid4()}")
    aggregate_type: str = "order"
    payload: object = field(default_factory=dict)
    outbox_id: uuid.UUID = field(default_factory=uuid.uuid4)


def now_of(conn) -> datetime:
    return conn.execute("SELECT now()").fetchone()[0]


def insert_events(conn, events: list[Event], table: str = "app.outbox_event") -> None:
    with conn.cursor() as cur:
        cur.executemany(
            f"""INSERT INTO {table} (outbox_id, event_type, aggregate_type, aggregate_id, idempotency_scope,
                    idempotency_key, payload, status, attempt_count, created_at, published_at)
                VALUES (%s, %s, %s, gen_random_uuid(), %s, %s, %s, %s, %s, %s, %s)""",
            [
                (
                    e.outbox_id,
                    e.event_type,
                    e.aggregate_type,
                    e.scope,
                    e.key,
                    Jsonb(e.payload),
                    e.status,
                    e.attempt_count,
                    e.created_at,
                    e.published_at,
                )
                for e in events
            ],
        )


def soup_of(response) -> BeautifulSoup:
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return BeautifulSoup(response.data, "html.parser")


def list_ids(soup: BeautifulSoup) -> list[str]:
    return [tr["data-outbox-id"] for tr in soup.select('table[data-rows="list"] tbody tr')]


def make_world(conn, seed: int) -> tuple[datetime, list[Event]]:
    """A random but known mix; no time lands within 10 minutes of the 24-hour boundary."""
    rng = random.Random(seed)
    now = now_of(conn)

    def ago(low_s: int, high_s: int) -> datetime:
        while True:
            seconds = rng.randint(low_s, high_s)
            if abs(seconds - 86400) > 600:
                return now - timedelta(seconds=seconds)

    events = []
    for i in range(300):
        event_type = rng.choice(["order.created", "payment.captured", "invoice.sent", "legacy.unroutable"])
        status = rng.choice(["pending", "published", "published", "dead_letter"])
        created = ago(5, 3 * 86400)
        published = None
        if status == "published":
            published = min(now, created + timedelta(seconds=rng.randint(0, 2 * 86400)))
            if abs((now - published).total_seconds() - 86400) < 600:
                published = now - timedelta(hours=30)
                created = min(created, published)
        attempts = rng.choice([0, 0, 0, 1, 2, 3, 4, 7, 12]) if status == "pending" else rng.randint(0, 2)
        events.append(Event(event_type, status, created, attempts, published, key=f"k-{seed}-{i}"))
    insert_events(conn, events)
    return now, events


def expected(now: datetime, events: list[Event]) -> dict:
    pending = [e for e in events if e.status == "pending"]
    day_ago = now - timedelta(hours=24)
    types: dict[str, dict] = {}
    for e in pending:
        t = types.setdefault(e.event_type, {"pending": 0, "oldest": None, "max_attempts": None, "published_24h": 0})
        t["pending"] += 1
        t["oldest"] = e.created_at if t["oldest"] is None else min(t["oldest"], e.created_at)
        t["max_attempts"] = e.attempt_count if t["max_attempts"] is None else max(t["max_attempts"], e.attempt_count)
    for e in events:
        if e.published_at is not None and e.published_at >= day_ago:
            types.setdefault(e.event_type, {"pending": 0, "oldest": None, "max_attempts": None, "published_24h": 0})
            types[e.event_type]["published_24h"] += 1
    many = sorted(
        (e for e in pending if e.attempt_count >= MANY), key=lambda e: (-e.attempt_count, e.created_at, e.outbox_id)
    )
    return {
        "pending": len(pending),
        "oldest": min((e.created_at for e in pending), default=None),
        "pending_many": sum(e.attempt_count >= MANY for e in pending),
        "types": types,
        "many": [str(e.outbox_id) for e in many[:20]],
        "pending_order": [str(e.outbox_id) for e in sorted(pending, key=lambda e: (e.created_at, e.outbox_id))],
    }


@pytest.mark.parametrize("many", [0, 4, 20, 25])
def test_the_likely_poison_list_is_every_row_past_the_threshold_up_to_its_limit(client, conn, many):
    """Most attempts first, cut at 20: fewer than 20 past the threshold are all listed, however many pending rows
    have fewer attempts (the list reads the top pending rows by attempts, then keeps those past the threshold)."""
    now = now_of(conn)
    events = [Event("order.created", "pending", now - timedelta(minutes=i), attempt_count=i % MANY) for i in range(60)]
    events += [
        Event("order.created", "pending", now - timedelta(seconds=i), attempt_count=MANY + i % 5) for i in range(many)
    ]
    events += [Event("order.created", "dead_letter", now, attempt_count=40) for _ in range(3)]
    insert_events(conn, events)
    want = sorted(
        (e for e in events if e.status == "pending" and e.attempt_count >= MANY),
        key=lambda e: (-e.attempt_count, e.created_at, e.outbox_id),
    )
    got = client.get("/api/v1/outbox").get_json()["many_attempts"]
    assert [r["outbox_id"] for r in got] == [str(e.outbox_id) for e in want[:20]]
    assert len(got) == min(many, 20)


@pytest.mark.system
@pytest.mark.parametrize("seed", [1, 2])
def test_summary_matches_ground_truth(client, conn, seed):
    now, events = make_world(conn, seed)
    want = expected(now, events)
    assert want["pending_many"] > 20  # the poison list is cut at 20, so the bound is exercised

    body = client.get("/api/v1/outbox").get_json()
    assert set(body) >= {"items", "next_cursor", "backlog", "by_event_type", "many_attempts"}
    backlog = body["backlog"]
    assert backlog["pending"] == want["pending"]
    assert datetime.fromisoformat(backlog["oldest_pending_at"]) == want["oldest"]
    assert backlog["lag_seconds"] >= (now - want["oldest"]).total_seconds()
    assert backlog["pending_many_attempts"] == want["pending_many"]

    got_types = {t["event_type"]: t for t in body["by_event_type"]}
    assert set(got_types) == set(want["types"])
    for name, t in want["types"].items():
        g = got_types[name]
        assert g["pending"] == t["pending"], name
        assert g["max_attempts"] == t["max_attempts"], name
        assert g["published_24h"] == t["published_24h"], name
        assert (datetime.fromisoformat(g["oldest_pending_at"]) if g["oldest_pending_at"] else None) == t["oldest"]
    assert [t["pending"] for t in body["by_event_type"]] == sorted(
        (t["pending"] for t in body["by_event_type"]), reverse=True
    )

    assert [r["outbox_id"] for r in body["many_attempts"]] == want["many"]
    assert all(r["status"] == "pending" and r["attempt_count"] >= MANY for r in body["many_attempts"])

    assert set(body["items"][0]) == {
        "outbox_id",
        "event_type",
        "aggregate_type",
        "aggregate_id",
        "idempotency_scope",
        "idempotency_key",
        "status",
        "attempt_count",
        "created_at",
        "published_at",
        "age_seconds",
        "payload",
    }
    # the first page of the default list: pending, oldest first
    assert [r["outbox_id"] for r in body["items"]] == want["pending_order"][:50]
    assert body["next_cursor"] is not None

    soup = soup_of(client.get("/outbox"))
    metric = {el["data-metric"]: el for el in soup.select("[data-metric]")}
    assert metric["pending"].get_text(strip=True).replace(",", "") == str(want["pending"])
    assert metric["pending_many_attempts"].get_text(strip=True) == str(want["pending_many"])
    assert datetime.fromisoformat(metric["oldest_pending_at"]["data-value"]) == want["oldest"]
    rows = {tr["data-event-type"]: tr for tr in soup.select("table.by-type tbody tr")}
    assert set(rows) == set(want["types"])
    for name, t in want["types"].items():
        cell = {td["data-col"]: td.get_text(strip=True).replace(",", "") for td in rows[name].select("td[data-col]")}
        assert cell["pending"] == str(t["pending"])
        assert cell["published_24h"] == str(t["published_24h"])
        assert cell["max_attempts"] == (str(t["max_attempts"]) if t["max_attempts"] is not None else "-")
    # one table of pending rows, likely poison ones marked (the API keeps its many_attempts list)
    assert soup.select('table[data-rows="many"]') == []
    assert list_ids(soup) == want["pending_order"][:50]
    listed = {tr["data-outbox-id"]: tr for tr in soup.select('table[data-rows="list"] tbody tr')}
    poison = {e: tr.has_attr("data-poison") for e, tr in listed.items()}
    by_id = {str(e.outbox_id): e for e in events}
    assert poison == {i: by_id[i].attempt_count >= MANY for i in listed}


@pytest.mark.system
@pytest.mark.parametrize("status", ["pending", "published"])
def test_pagination_with_ties_sees_every_row_once_in_order(client, conn, status):
    # 45 rows over three created_at values: only outbox_id breaks the ties
    now = now_of(conn)
    moments = [now - timedelta(hours=h) for h in (3, 2, 1)]
    events = [
        Event("order.created", status, moments[i % 3], published_at=now if status == "published" else None)
        for i in range(45)
    ]
    other = "published" if status == "pending" else "pending"
    noise = [Event("order.created", other, moments[0]) for _ in range(5)] + [
        Event("order.created", "dead_letter", moments[1]) for _ in range(5)
    ]
    insert_events(conn, events + noise)
    order = sorted(events, key=lambda e: (e.created_at, e.outbox_id), reverse=status != "pending")
    want = [str(e.outbox_id) for e in order]

    got, pages = walk(client, f"/api/v1/outbox?status={status}&limit=4")
    ids = [r["outbox_id"] for r in got]
    assert len(ids) == len(set(ids)) == 45
    assert pages == 12
    assert ids == want
    assert {r["status"] for r in got} == {status}

    # the page's own pager walks the same rows in the same order
    seen, url, hops = [], f"/outbox?status={status}&limit=7", 0
    while url:
        soup = soup_of(client.get(url))
        seen += list_ids(soup)
        nxt = soup.select_one('#rows a[rel="next"]')
        url = nxt["href"] if nxt else None
        hops += 1
        assert hops < 20
    assert seen == want
    assert hops == 7
    assert "No more rows" not in soup.get_text()


def test_filters_by_event_type_and_any_status(client, conn):
    now = now_of(conn)
    events = [
        Event(rng_type, status, now - timedelta(minutes=i))
        for i, (rng_type, status) in enumerate(
            [
                (t, s)
                for t in ("order.created", "refund.issued", "order created")
                for s in ("pending", "published", "dead_letter", "pending")
            ]
        )
    ]
    insert_events(conn, events)

    def ids(query: str) -> set[str]:
        items, _ = walk(client, "/api/v1/outbox?" + query)
        return {r["outbox_id"] for r in items}

    def want(pred) -> set[str]:
        return {str(e.outbox_id) for e in events if pred(e)}

    assert ids("status=pending") == want(lambda e: e.status == "pending")
    assert ids("") == want(lambda e: e.status == "pending")  # pending is the default
    assert ids("status=dead_letter") == want(lambda e: e.status == "dead_letter")
    assert ids("status=published&event_type=refund.issued") == want(
        lambda e: e.status == "published" and e.event_type == "refund.issued"
    )
    assert ids("event_type=order%20created") == want(
        lambda e: e.status == "pending" and e.event_type == "order created"
    )
    assert ids("status=no_such_status") == set()
    assert ids("event_type=order") == set()  # an exact match, not a prefix

    soup = soup_of(client.get("/outbox?status=dead_letter&event_type=order.created"))
    rows = soup.select('table[data-rows="list"] tbody tr')
    assert {tr["data-outbox-id"] for tr in rows} == want(
        lambda e: e.status == "dead_letter" and e.event_type == "order.created"
    )
    assert {tr["data-status"] for tr in rows} == {"dead_letter"}
    # the status filter offers every status the table holds, and keeps the current one selected
    options = [o["value"] for o in soup.select("select[name=status] option")]
    assert set(options) == {"pending", "published", "dead_letter"}
    assert soup.select_one("select[name=status] option[selected]")["value"] == "dead_letter"
    assert soup.select_one("input[name=event_type]")["value"] == "order.created"
    assert "data-filter-focus" in soup.select_one("input[name=event_type]").attrs

    empty = soup_of(client.get("/outbox?status=no_such_status"))
    assert "No rows with status" in empty.select_one("#rows p.empty").get_text()
    assert "no_such_status" in [o["value"] for o in empty.select("select[name=status] option")]


def test_rows_link_to_their_key_and_show_the_payload(client, conn):
    key = "checkout a/b?c"
    insert_key(conn, "create_order", key)
    now = now_of(conn)
    event = Event(
        "order.created",
        "pending",
        now - timedelta(minutes=5),
        attempt_count=1,
        key=key,
        payload={"orderId": 42, "lines": [{"sku": "A-1", "qty": 2}]},
    )
    insert_events(conn, [event])
    soup = soup_of(client.get("/outbox"))
    row = soup.select_one(f'tr[data-outbox-id="{event.outbox_id}"]')
    link = row.select_one("a.key")
    assert link.get_text() == key
    detail = soup_of(client.get(link["href"]))
    assert detail.select_one("h1 .mono").get_text() == key
    payload = row.select_one("details pre.json").get_text()
    assert payload == '{\n  "lines": [\n    {\n      "qty": 2,\n      "sku": "A-1"\n    }\n  ],\n  "orderId": 42\n}'
    assert row.select_one('[data-col="attempt_count"]').get_text() == "1"
    assert "5 min" in row.select_one('[data-col="age"]').get_text()


def test_html_in_event_types_keys_and_payloads_renders_inert(client, conn):
    evil = "<img src=x onerror=alert(1)><script>alert('x')</script>"
    now = now_of(conn)
    insert_key(conn, evil, evil)
    events = [
        Event(
            evil,
            "pending",
            now - timedelta(minutes=1),
            attempt_count=5,
            scope=evil,
            key=evil,
            aggregate_type=evil,
            payload={"html": evil, evil: [evil]},
        ),
        Event("ok", evil, now - timedelta(minutes=2), payload={"x": evil}),
    ]
    insert_events(conn, events)
    for url in ["/outbox", f"/outbox?event_type={evil}", "/outbox?status=" + evil.replace("&", "%26")]:
        response = client.get(url, query_string=None)
        soup = soup_of(response)
        assert not soup.find("img"), url
        assert [s for s in soup.find_all("script") if not s.get("src")] == [], url
        assert evil in soup.get_text(), url
    soup = soup_of(client.get("/outbox", query_string={"status": "pending"}))
    assert soup.get_text().count(evil) >= 6  # by-type row, poison row and list row, each with type, key, payload
    soup = soup_of(client.get("/outbox", query_string={"status": evil}))
    assert [tr["data-status"] for tr in soup.select('table[data-rows="list"] tbody tr')] == [evil]
    assert evil in [o["value"] for o in soup.select("select[name=status] option")]
    link = soup_of(client.get("/outbox")).select_one('table[data-rows="list"] a.key')
    assert client.get(link["href"]).status_code == 200
    body = client.get("/api/v1/outbox", query_string={"event_type": evil}).get_json()
    assert body["items"][0]["payload"] == {"html": evil, evil: [evil]}


@pytest.mark.parametrize(
    "query, fragment",
    [
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("limit=501", "limit"),
        ("cursor=garbage!", "cursor"),
        ("cursor=bm90LWpzb24", "cursor"),  # not JSON
        ("cursor=WzEsMiwzXQ", "cursor"),  # [1,2,3]: wrong arity
        ("cursor=WyJub3QgYSB0aW1lIiwiYWJjIl0", "cursor"),  # ["not a time","abc"]
        ("cursor=WyIyMDI2LTAxLTAxVDAwOjAwOjAwKzAwOjAwIiwibm90LWEtdXVpZCJd", "cursor"),  # a time, not a uuid
        ("cursor=W251bGwsIjAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMCJd", "cursor"),  # [null, uuid]
        ("status=" + "s" * 101, "status"),
        ("event_type=" + "e" * 3000, "event_type"),
    ],
)
def test_bad_input_is_a_clear_400(client, query, fragment):
    api = client.get("/api/v1/outbox?" + query)
    assert api.status_code == 400
    assert fragment in api.get_json()["error"]
    page = client.get("/outbox?" + query)
    assert page.status_code == 400
    assert fragment in page.get_data(as_text=True)
    assert "<html" in page.get_data(as_text=True)


def test_a_hundred_character_status_is_accepted(client):
    assert client.get("/api/v1/outbox?status=" + "s" * 100).get_json()["items"] == []


def test_cursor_from_one_page_continues_for_the_same_status(client, conn):
    now = now_of(conn)
    insert_events(conn, [Event("e", "published", now - timedelta(seconds=i), published_at=now) for i in range(3)])
    first = client.get("/api/v1/outbox?status=published&limit=2").get_json()
    rest = client.get(f"/api/v1/outbox?status=published&limit=2&cursor={first['next_cursor']}").get_json()
    assert len(first["items"]) == 2 and len(rest["items"]) == 1 and rest["next_cursor"] is None


def test_empty_tables_render_helpful_empty_states(client):
    body = client.get("/api/v1/outbox").get_json()
    assert body["items"] == [] and body["next_cursor"] is None
    assert body["backlog"]["pending"] == 0 and body["backlog"]["lag_seconds"] is None
    assert body["by_event_type"] == [] and body["many_attempts"] == []
    soup = soup_of(client.get("/outbox"))
    assert soup.select_one('[data-metric="pending"]').get_text(strip=True) == "0"
    assert soup.select_one('[data-metric="lag"]').get_text(strip=True) == "none"
    empties = " ".join(p.get_text() for p in soup.select("p.empty"))
    assert "Nothing is pending" in empties
    assert soup.select_one('[data-metric="pending_many_attempts"]').get_text(strip=True) == "0"
    assert soup.select_one("h1").get_text() == "Outbox"
    assert soup.select_one('nav a[aria-current="page"]').get_text() == "Outbox"
    published = soup_of(client.get("/outbox?status=published"))
    assert "No rows with status" in published.select_one("#rows p.empty").get_text()


def test_database_without_the_tables_degrades_each_panel(make_app, empty_database_url):
    client = make_app(empty_database_url).test_client()
    page = client.get("/outbox")
    assert page.status_code == 200
    soup = BeautifulSoup(page.data, "html.parser")
    problems = soup.select(".panel-problem.schema")
    assert len(problems) == 3  # backlog, by type, the list (likely poison rows are marked in it)
    assert "init-app-schema" in problems[0].get_text()
    assert client.get("/api/v1/outbox").status_code == 503


def test_htmx_request_gets_only_the_fragment(client, conn):
    insert_events(conn, [Event("order.created", "pending", now_of(conn))])
    response = client.get("/outbox?event_type=order.created", headers={"HX-Request": "true"})
    text = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "<html" not in text and "<form" not in text
    soup = BeautifulSoup(text, "html.parser")
    panel = soup.select_one("#outbox-panel")
    assert panel is not None and panel.has_attr("data-poll")
    assert panel["hx-get"] == "/outbox?event_type=order.created"
    assert panel["hx-trigger"] == "every 15s, refresh" and panel["hx-swap"] == "outerHTML"
    assert len(list_ids(soup)) == 1
    assert "HX-Request" in response.headers["Vary"]
    assert "HX-Request" in client.get("/outbox").headers["Vary"]
    restore = client.get("/outbox", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in restore.get_data(as_text=True)


def test_filter_form_works_without_javascript(client):
    soup = soup_of(client.get("/outbox"))
    form = soup.select_one("form#filters")
    assert form["method"] == "get" and urlsplit(form["action"]).path == "/outbox"
    assert form["hx-push-url"] == "true" and form["hx-target"] == "#outbox-panel"
    # an empty field submitted by a plain form is dropped from the address
    response = client.get("/outbox?status=pending&event_type=")
    assert response.status_code == 302 and response.headers["Location"] == "/outbox?status=pending"


@pytest.mark.system  # over a second: kept out of the fast loop
def test_timed_out_panels_say_so_and_name_their_index(make_app, conn, database_url):
    app = make_app(STATEMENT_TIMEOUT_MS=200)
    client = app.test_client()
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        with psycopg.connect(database_url) as other:
            other.execute("LOCK TABLE app.outbox_event IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(15)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(5)
        soup = soup_of(client.get("/outbox?status=published"))
        problems = soup.select(".panel-problem.timeout")
        assert len(problems) == 3
        statements = " ".join(p.select_one("pre.sql").get_text() for p in problems)
        for index in (
            "outbox_event_pending_idemdash_idx",
            "outbox_event_published_idemdash_idx",
            "outbox_event_status_created_idemdash_idx",
        ):
            assert index in statements
        # the filter still offers the two usual statuses when their lookup timed out
        assert [o["value"] for o in soup.select("select[name=status] option")] == ["pending", "published"]
        api = client.get("/api/v1/outbox")
        assert api.status_code == 503 and "CREATE INDEX" in api.get_json()["error"]
    finally:
        release.set()
        holder.join(15)


def test_the_backlog_is_read_from_the_rollup_job_at_scale_with_its_ages_as_of_now(client, conn):
    """At 5M outbox rows counting every pending row on each view costs what the overview's backlog costs: the
    page reads the same stored number, says when it was computed, and its lag still grows with the clock."""
    from datetime import timezone

    from idemdash.queries.overview import OutboxBacklog
    from idemdash.queries.rollup_store import upsert_rollup

    now = datetime.now(timezone.utc)
    computed = now - timedelta(seconds=20)
    stored = OutboxBacklog(
        pending=125_000,
        oldest_pending_at=now - timedelta(hours=3),
        lag_seconds=600.0,  # the oldest healthy row was 10 min old when the job counted, 20 s ago
        poison=2_500,
        oldest_poison_at=now - timedelta(hours=3),
        poison_oldest_seconds=3 * 3600 - 20.0,
    )
    upsert_rollup(conn, "outbox_backlog", "", computed, 250.0, [stored])
    body = client.get("/api/v1/outbox").get_json()
    backlog = body["backlog"]
    assert backlog["pending"] == 125_000 and backlog["pending_many_attempts"] == 2_500
    assert 619 <= backlog["healthy_lag_seconds"] <= 640 and backlog["lag_seconds"] == backlog["healthy_lag_seconds"]
    assert 3 * 3600 - 1 <= backlog["poison_oldest_seconds"] <= 3 * 3600 + 20
    assert body["precomputed"]["backlog"]["computed_ms"] == 250.0
    page = BeautifulSoup(client.get("/outbox").data, "html.parser")
    assert page.select_one('[data-metric="pending"]').get_text() == "125,000"
    assert any("The backlog: as of" in p.get_text() for p in page.select("[data-precomputed]"))
    # the overview reads the same stored number
    assert client.get("/api/v1/overview").get_json()["outbox"]["pending"] == 125_000
