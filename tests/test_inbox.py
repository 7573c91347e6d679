"""The inbox page and its JSON twin, checked against rows the tests write themselves."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest
from bs4 import BeautifulSoup

RETENTION_DAYS = 30  # the default IDEMDASH_INBOX_RETENTION_DAYS


def now_of(conn) -> datetime:
    return conn.execute("SELECT now()").fetchone()[0]


def insert_messages(conn, rows: list[tuple[str, datetime]], table: str = "app.processed_message") -> None:
    with conn.cursor() as cur:
        cur.executemany(
            f"""INSERT INTO {table} (consumer_name, message_id, message_hash, processed_at)
                            VALUES (%s, gen_random_uuid()::text, 'h', %s)""",
            rows,
        )


def soup_of(response) -> BeautifulSoup:
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return BeautifulSoup(response.data, "html.parser")


def consumer_rows(soup: BeautifulSoup) -> dict[str, dict[str, str]]:
    return {
        tr["data-consumer"]: {td["data-col"]: td for td in tr.select("td[data-col]")}
        for tr in soup.select("table.consumers tbody tr")
    }


BOUNDARIES = (3600, 86400, 7 * 86400, RETENTION_DAYS * 86400)


def make_world(conn, seed: int) -> tuple[datetime, list[tuple[str, datetime]]]:
    """Random rows over 40 days; none within 10 minutes of a window edge or the retention."""
    rng = random.Random(seed)
    now = now_of(conn)
    rows = []
    while len(rows) < 400:
        seconds = rng.choice([rng.randint(1, 7200), rng.randint(1, 3 * 86400), rng.randint(1, 40 * 86400)])
        if any(abs(seconds - b) < 600 for b in BOUNDARIES):
            continue
        consumer = rng.choice(["billing", "shipping", "analytics", "fraud-check", "notifications"])
        rows.append((consumer, now - timedelta(seconds=seconds)))
    # a consumer that stopped writing two days ago, and one that is young
    rows += [("legacy-sync", now - timedelta(days=2, hours=h)) for h in range(5)]
    rows += [("new-consumer", now - timedelta(minutes=m)) for m in (1, 2, 3)]
    insert_messages(conn, rows)
    return now, rows


def expected(now: datetime, rows: list[tuple[str, datetime]]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for consumer, at in rows:
        c = out.setdefault(consumer, {"rows_1h": 0, "rows_24h": 0, "rows_7d": 0, "oldest": at, "newest": at})
        age = now - at
        c["rows_1h"] += age <= timedelta(hours=1)
        c["rows_24h"] += age <= timedelta(hours=24)
        c["rows_7d"] += age <= timedelta(days=7)
        c["oldest"] = min(c["oldest"], at)
        c["newest"] = max(c["newest"], at)
    for c in out.values():
        c["retention"] = "purge overdue" if now - c["oldest"] > timedelta(days=RETENTION_DAYS) else "within retention"
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_consumers_match_ground_truth(client, conn, seed):
    now, rows = make_world(conn, seed)
    want = expected(now, rows)
    assert {c["retention"] for c in want.values()} == {"purge overdue", "within retention"}

    body = client.get("/api/v1/inbox").get_json()
    assert body["retention_days"] == RETENTION_DAYS
    got = {c["consumer_name"]: c for c in body["consumers"]}
    assert list(got) == sorted(want)  # by name
    for name, c in want.items():
        g = got[name]
        assert (g["rows_1h"], g["rows_24h"], g["rows_7d"]) == (c["rows_1h"], c["rows_24h"], c["rows_7d"]), name
        assert datetime.fromisoformat(g["oldest_processed_at"]) == c["oldest"], name
        assert datetime.fromisoformat(g["newest_processed_at"]) == c["newest"], name
        assert g["retention"] == c["retention"], name
        assert g["purge_overdue"] == (c["retention"] == "purge overdue")
        assert g["oldest_age_seconds"] >= (now - c["oldest"]).total_seconds()
    totals = body["totals"]
    assert totals["rows_1h"] == sum(c["rows_1h"] for c in want.values())
    assert totals["rows_24h"] == sum(c["rows_24h"] for c in want.values())
    assert totals["rows_7d"] == sum(c["rows_7d"] for c in want.values())
    assert datetime.fromisoformat(totals["oldest_processed_at"]) == min(c["oldest"] for c in want.values())
    assert totals["retention"] == "purge overdue"
    assert body["consumers_truncated"] is False

    soup = soup_of(client.get("/inbox"))
    shown = consumer_rows(soup)
    assert list(shown) == sorted(want)
    for name, c in want.items():
        cells = shown[name]
        for col in ("rows_1h", "rows_24h", "rows_7d"):
            assert cells[col].get_text(strip=True).replace(",", "") == str(c[col]), (name, col)
        assert cells["retention"]["data-retention"] == c["retention"]
        assert c["retention"] in cells["retention"].get_text()
        assert datetime.fromisoformat(cells["oldest_processed_at"].select_one("time")["datetime"]) == c["oldest"]
    metric = {el["data-metric"]: el.get_text(strip=True).replace(",", "") for el in soup.select("[data-metric]")}
    assert metric["rows_24h"] == str(totals["rows_24h"]) and metric["rows_7d"] == str(totals["rows_7d"])
    # a consumer with nothing in the last hour is marked; a busy one is not
    assert "quiet" in soup.select_one('tr[data-consumer="legacy-sync"]').get("class", [])
    assert "quiet" not in soup.select_one('tr[data-consumer="new-consumer"]').get("class", [])


def test_retention_flag_on_both_sides_of_the_boundary(make_app, conn):
    now = now_of(conn)
    retention = timedelta(days=RETENTION_DAYS)
    insert_messages(
        conn,
        [
            ("just-inside", now - retention + timedelta(minutes=2)),
            ("just-inside", now - timedelta(minutes=1)),
            ("just-past", now - retention - timedelta(minutes=2)),
            ("just-past", now - timedelta(minutes=1)),
        ],
    )
    client = make_app().test_client()
    got = {c["consumer_name"]: c["retention"] for c in client.get("/api/v1/inbox").get_json()["consumers"]}
    assert got == {"just-inside": "within retention", "just-past": "purge overdue"}
    shown = consumer_rows(soup_of(client.get("/inbox")))
    assert shown["just-inside"]["retention"]["data-retention"] == "within retention"
    assert shown["just-past"]["retention"]["data-retention"] == "purge overdue"
    assert "by 2 min" in shown["just-past"]["retention"].get_text()

    # the setting moves the boundary: with 40 days both are within it
    longer = make_app(INBOX_RETENTION_DAYS=40).test_client()
    body = longer.get("/api/v1/inbox").get_json()
    assert body["retention_days"] == 40
    assert {c["retention"] for c in body["consumers"]} == {"within retention"}
    assert body["totals"]["retention"] == "within retention"
    assert "40 days" in soup_of(longer.get("/inbox")).get_text()


@pytest.mark.system
def test_consumers_are_bounded_and_filterable(client, conn):
    now = now_of(conn)
    names = [f"consumer-{i:03d}" for i in range(205)] + ["Billing-EU", "billing-us"]
    insert_messages(conn, [(n, now - timedelta(minutes=5)) for n in names])
    body = client.get("/api/v1/inbox").get_json()
    assert len(body["consumers"]) == 200 and body["consumers_truncated"] is True
    assert [c["consumer_name"] for c in body["consumers"]] == sorted(names)[:200]
    assert body["totals"]["rows_1h"] == len(names)  # totals count every consumer, not only those shown
    soup = soup_of(client.get("/inbox"))
    assert len(soup.select("table.consumers tbody tr")) == 200
    assert "Only the first 200 consumers" in soup.get_text()

    body = client.get("/api/v1/inbox?consumer=BILLING").get_json()
    assert [c["consumer_name"] for c in body["consumers"]] == ["Billing-EU", "billing-us"]
    assert body["consumers_truncated"] is False
    soup = soup_of(client.get("/inbox?consumer=billing"))
    assert list(consumer_rows(soup)) == ["Billing-EU", "billing-us"]
    assert soup.select_one("input[name=consumer]")["value"] == "billing"
    # '%' and '_' are plain characters in the filter, not patterns
    assert client.get("/api/v1/inbox?consumer=%25").get_json()["consumers"] == []
    none = soup_of(client.get("/inbox?consumer=nobody"))
    assert "No consumer name contains" in none.select_one("p.empty").get_text()


def test_html_in_consumer_names_renders_inert(client, conn):
    evil = "<img src=x onerror=alert(1)><script>alert('x')</script>"
    insert_messages(conn, [(evil, now_of(conn))])
    for url in ["/inbox", "/inbox?consumer=" + evil]:
        soup = soup_of(client.get(url))
        assert not soup.find("img")
        assert [s for s in soup.find_all("script") if not s.get("src")] == []
        assert evil in soup.get_text()
    assert list(consumer_rows(soup_of(client.get("/inbox")))) == [evil]


def test_empty_inbox_renders_helpful_empty_states(client):
    body = client.get("/api/v1/inbox").get_json()
    assert body["consumers"] == [] and body["retention_days"] == RETENTION_DAYS
    assert body["totals"]["rows_24h"] == 0 and body["totals"]["oldest_processed_at"] is None
    assert body["totals"]["retention"] == "within retention"
    soup = soup_of(client.get("/inbox"))
    assert "the inbox table is empty" in soup.select_one("p.empty").get_text()
    assert soup.select_one('[data-metric="rows_24h"]').get_text(strip=True) == "0"
    assert soup.select_one('nav a[aria-current="page"]').get_text() == "Inbox"


def test_database_without_the_tables_degrades_each_panel(make_app, empty_database_url):
    client = make_app(empty_database_url).test_client()
    page = client.get("/inbox")
    assert page.status_code == 200
    problems = BeautifulSoup(page.data, "html.parser").select(".panel-problem.schema")
    assert len(problems) == 2 and "init-app-schema" in problems[0].get_text()
    assert client.get("/api/v1/inbox").status_code == 503


def test_htmx_request_gets_only_the_fragment(client, conn):
    insert_messages(conn, [("billing", now_of(conn))])
    response = client.get("/inbox?consumer=bill", headers={"HX-Request": "true"})
    text = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in text and "<form" not in text
    panel = BeautifulSoup(text, "html.parser").select_one("#inbox-panel")
    assert panel.has_attr("data-poll") and panel["hx-get"] == "/inbox?consumer=bill"
    assert panel["hx-trigger"] == "every 15s, refresh"
    assert panel.select_one('tr[data-consumer="billing"]') is not None
    assert "HX-Request" in response.headers["Vary"]


def test_bad_input_is_a_clear_400(client):
    api = client.get("/api/v1/inbox?consumer=" + "c" * 201)
    assert api.status_code == 400 and "consumer" in api.get_json()["error"]
    page = client.get("/inbox?consumer=" + "c" * 201)
    assert page.status_code == 400 and "consumer" in page.get_data(as_text=True)
