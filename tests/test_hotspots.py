"""/hotspots and its JSON twin against ground truth computed here from the rows the tests write."""

from __future__ import annotations

import random
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from bs4 import BeautifulSoup

LEASE = 300  # the default lease (IDEMDASH_DEFAULT_LEASE_SECONDS)
PAYLOAD = "<img src=x onerror=alert(1)><script>alert('hot')</script>"
STATUSES = ("processing", "succeeded", "failed_retryable", "failed_final")
BUCKETS = [("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4", 4, 4), ("5-9", 5, 9), ("10-19", 10, 19), ("20+", 20, None)]


@dataclass
class Key:
    scope: str
    key: str
    status: str
    claimed_by: str | None
    attempts: int
    claimed_at: datetime
    locked_until: datetime | None
    updated_at: datetime

    def stuck(self, now: datetime) -> bool:
        if self.status != "processing":
            return False
        if self.locked_until is not None:
            return self.locked_until < now
        return self.claimed_at < now - timedelta(seconds=LEASE)


def _now(conn) -> datetime:
    return conn.execute("SELECT now()").fetchone()[0]


def insert(conn, keys: list[Key]) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                   claimed_by, claimed_at, locked_until, attempt_count, created_at, updated_at, expires_at)
               VALUES (%s, %s, 'h', %s, %s, %s, %s, %s, %s, %s, %s + interval '30 days')""",
            [
                (
                    k.scope,
                    k.key,
                    k.status,
                    k.claimed_by,
                    k.claimed_at,
                    k.locked_until,
                    k.attempts,
                    k.claimed_at - timedelta(minutes=5),
                    k.updated_at,
                    k.claimed_at,
                )
                for k in keys
            ],
        )


def make_world(conn, seed: int, count: int = 400) -> list[Key]:
    """A random but known mix of keys: every status, stuck and live leases, attempts in every bucket."""
    rng = random.Random(seed)
    now = _now(conn)
    keys = []
    for i in range(count):
        status = rng.choice(STATUSES)
        claimed_at = now - timedelta(seconds=rng.randint(60, 2 * 86400))
        locked_until = None
        if status == "processing":
            # lease ran out, still live, or no lease (judged by claimed_at, half of them inside the lease)
            locked_until = rng.choice(
                [now - timedelta(seconds=rng.randint(60, 7200)), now + timedelta(seconds=rng.randint(60, 7200)), None]
            )
            if locked_until is None and rng.random() < 0.5:
                claimed_at = now - timedelta(seconds=rng.randint(1, LEASE - 60))
        attempts = rng.choice([1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 9, 10, 12, 19, 20, 35, rng.randint(1, 60)])
        keys.append(
            Key(
                scope=rng.choice(["create_order", "refund", "x/y scope", PAYLOAD]),
                key=f"k-{i}" if i % 50 else f"{PAYLOAD}-{i}",
                status=status,
                claimed_by=rng.choice(["api-1", "api-2", "worker-7", PAYLOAD, None]),
                attempts=attempts,
                claimed_at=claimed_at,
                locked_until=locked_until,
                # distinct per key, so the top-keys order has no ties to break
                updated_at=now - timedelta(seconds=10 * i + rng.randint(0, 9)),
            )
        )
    insert(conn, keys)
    return keys


def expected(now: datetime, keys: list[Key], n: int) -> dict:
    def groups(attr: str) -> dict:
        out: dict = defaultdict(lambda: Counter())
        for k in keys:
            if k.attempts < n:
                continue
            c = out[getattr(k, attr)]
            c["hotspot_keys"] += 1
            c["stuck"] += k.stuck(now)
            c["processing"] += k.status == "processing"
            c[k.status if k.status != "processing" else "_"] += k.status != "processing"
            c["max_attempts"] = max(c["max_attempts"], k.attempts)
        return {
            name: {
                f: c[f]
                for f in (
                    "hotspot_keys",
                    "stuck",
                    "processing",
                    "failed_retryable",
                    "failed_final",
                    "succeeded",
                    "max_attempts",
                )
            }
            for name, c in out.items()
        }

    hot = sorted((k for k in keys if k.attempts >= n), key=lambda k: (-k.attempts, -k.updated_at.timestamp()))
    histogram = {
        label: sum(lo <= k.attempts and (hi is None or k.attempts <= hi) for k in keys) for label, lo, hi in BUCKETS
    }
    return {
        "by_scope": groups("scope"),
        "by_worker": groups("claimed_by"),
        "top": [(k.scope, k.key) for k in hot[:20]],
        "top_keys": hot[:20],
        "histogram": histogram,
    }


def number(cell) -> int:
    return int(cell.get_text(strip=True).replace(",", ""))


@pytest.mark.parametrize("seed, n", [(1, None), (2, 3), (3, 12)])
def test_api_matches_ground_truth(make_app, conn, seed, n):
    keys = make_world(conn, seed)
    want = expected(_now(conn), keys, n or 5)
    assert any(c["stuck"] for c in want["by_scope"].values())  # the data exercises every column
    assert None in want["by_worker"] and len(want["top"]) == 20

    body = make_app().test_client().get("/api/v1/hotspots" + (f"?min_attempts={n}" if n else "")).get_json()

    assert body["min_attempts"] == (n or 5)
    assert {row.pop("scope"): row for row in body["by_scope"]} == want["by_scope"]
    assert {row.pop("claimed_by"): row for row in body["by_worker"]} == want["by_worker"]
    # most hotspot keys first
    assert [r["hotspot_keys"] for r in body["by_scope"]] == sorted(
        (r["hotspot_keys"] for r in body["by_scope"]), reverse=True
    )
    assert [(k["scope"], k["key"]) for k in body["top_keys"]] == want["top"]
    first = body["top_keys"][0]
    truth = want["top_keys"][0]
    assert (first["status"], first["claimed_by"], first["attempt_count"]) == (
        truth.status,
        truth.claimed_by,
        truth.attempts,
    )
    assert datetime.fromisoformat(first["updated_at"]) == truth.updated_at
    assert set(first) >= {
        "scope",
        "key",
        "status",
        "claimed_by",
        "attempt_count",
        "updated_at",
        "created_at",
        "locked_until",
        "stuck",
    }
    assert [(b["bucket"], b["min"], b["max"]) for b in body["histogram"]] == BUCKETS
    assert {b["bucket"]: b["keys"] for b in body["histogram"]} == want["histogram"]
    assert sum(b["keys"] for b in body["histogram"]) == len(keys)  # every key, not only hotspots
    assert body["truncated"] == {"by_scope": False, "by_worker": False}


def test_page_shows_the_same_numbers_and_links_to_the_matching_keys(make_app, conn):
    keys = make_world(conn, 4)
    want = expected(_now(conn), keys, 6)
    client = make_app().test_client()
    response = client.get("/hotspots?min_attempts=6")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    assert soup.select_one('[data-metric="min_attempts"]').get_text() == "6"
    assert soup.select_one("input[name=min_attempts]")["value"] == "6"

    shown = {
        tr["data-scope"]: {td["data-col"]: number(td) for td in tr.select("td[data-col]")}
        for tr in soup.select("#by-scope tbody tr")
    }
    assert shown == want["by_scope"]
    shown = {
        tr["data-claimed-by"] or None: {td["data-col"]: number(td) for td in tr.select("td[data-col]")}
        for tr in soup.select("#by-worker tbody tr")
    }
    assert shown == want["by_worker"]

    top = soup.select("#top-keys tbody tr")
    assert [tr.select_one("a.key").get_text() for tr in top] == [key for _, key in want["top"]]
    assert [number(tr.select_one('[data-col="attempt_count"]')) for tr in top] == [k.attempts for k in want["top_keys"]]
    # each key links to its own page
    detail = client.get(top[0].select_one("a.key")["href"])
    assert detail.status_code == 200 and want["top"][0][1] in BeautifulSoup(detail.data, "html.parser").get_text()

    bars = soup.select("#histogram tbody tr")
    assert {tr["data-bucket"]: number(tr.select_one('[data-col="keys"]')) for tr in bars} == want["histogram"]
    # bars are to scale: the biggest bucket is full width, an empty one has none
    widths = {tr["data-bucket"]: float(tr.select_one("svg rect")["width"]) for tr in bars}
    biggest = max(want["histogram"], key=want["histogram"].get)
    assert widths[biggest] == 100.0
    assert all(widths[b] < 100.0 for b in widths if want["histogram"][b] < want["histogram"][biggest])
    # buckets that hold keys with >= 6 attempts are highlighted, the others not
    assert [tr["data-bucket"] for tr in bars if "hot" in tr.get("class", [])] == ["5-9", "10-19", "20+"]
    # the default window is 24 hours (every key here changed within it); window=all is the whole table
    assert (
        "every key changed in the last 24 hours"
        in soup.select_one('[aria-label="Attempt histogram"]').get_text().lower()
    )
    whole = BeautifulSoup(client.get("/hotspots?min_attempts=6&window=all").data, "html.parser")
    assert "every key in the table" in whole.select_one('[aria-label="Attempt histogram"]').get_text().lower()

    # a stuck count links to the key list with the same filters, and that list holds exactly that many keys
    scope = next(s for s, c in want["by_scope"].items() if c["stuck"])
    row = soup.find("tr", attrs={"data-scope": scope})
    href = row.select_one('[data-col="stuck"] a')["href"]
    url = urlsplit(href)
    assert url.path == "/keys"
    assert parse_qs(url.query) == {"status": ["stuck"], "scope": [scope], "min_attempts": ["6"]}
    listed = client.get("/api/v1/keys?" + url.query + "&limit=500").get_json()["items"]
    assert len(listed) == want["by_scope"][scope]["stuck"]
    worker_href = soup.find("tr", attrs={"data-claimed-by": "api-1"}).select_one('[data-col="processing"] a')["href"]
    assert parse_qs(urlsplit(worker_href).query) == {
        "status": ["processing"],
        "claimed_by": ["api-1"],
        "min_attempts": ["6"],
    }
    listed = client.get("/api/v1/keys?" + urlsplit(worker_href).query + "&limit=500").get_json()["items"]
    assert len(listed) == want["by_worker"]["api-1"]["processing"]


def test_numbers_have_thousands_separators(client, conn):
    conn.execute("""INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        claimed_by, attempt_count, expires_at)
                    SELECT 'bulk', 'k' || i, 'h', 'succeeded', 'api-1', CASE WHEN i <= 1234 THEN 7 ELSE 1 END,
                           now() + interval '1 day'
                    FROM generate_series(1, 2500) AS i""")
    soup = BeautifulSoup(client.get("/hotspots").data, "html.parser")
    row = soup.find("tr", attrs={"data-scope": "bulk"})
    assert row.select_one('[data-col="hotspot_keys"]').get_text(strip=True) == "1,234"
    assert row.select_one('[data-col="succeeded"]').get_text(strip=True) == "1,234"
    assert soup.find("tr", attrs={"data-bucket": "1"}).select_one('[data-col="keys"]').get_text() == "1,266"
    assert soup.select_one('[data-metric="histogram_total"]').get_text() == "2,500"


def test_html_in_scopes_keys_and_workers_renders_as_inert_text(client, conn):
    now = _now(conn)
    insert(
        conn,
        [Key(PAYLOAD, PAYLOAD, "processing", PAYLOAD, 9, now - timedelta(hours=1), now - timedelta(minutes=30), now)],
    )
    response = client.get("/hotspots")
    html = response.get_data(as_text=True)
    soup = BeautifulSoup(html, "html.parser")
    assert [s for s in soup.find_all("script") if not s.get("src")] == []
    assert not soup.find("img")
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;hot&#39;)" in html
    assert soup.select_one("#by-scope tbody tr")["data-scope"] == PAYLOAD
    assert soup.select_one("#by-scope tbody th").get_text() == PAYLOAD
    assert soup.select_one("#by-worker tbody th").get_text() == PAYLOAD
    assert soup.select_one("#top-keys a.key").get_text() == PAYLOAD
    # the JSON carries the text unchanged
    body = client.get("/api/v1/hotspots").get_json()
    assert body["top_keys"][0]["key"] == PAYLOAD and body["by_worker"][0]["claimed_by"] == PAYLOAD


def _table_state(conn) -> tuple:
    return conn.execute("""SELECT count(*), coalesce(sum(attempt_count), 0),
                                  md5(coalesce(string_agg(idempotency_key || status::text || attempt_count
                                                          || updated_at::text, ',' ORDER BY idempotency_key), ''))
                           FROM app.idempotency_request""").fetchone()


@pytest.mark.parametrize(
    "query",
    [
        "min_attempts=0",
        "min_attempts=-1",
        "min_attempts=1000001",
        "min_attempts=abc",
        "min_attempts=2.5",
        "min_attempts=" + "9" * 40,
    ],
)
def test_bad_min_attempts_is_a_clear_400_and_changes_nothing(client, conn, query):
    make_world(conn, 5, count=40)
    before = _table_state(conn)
    good = client.get("/api/v1/hotspots?min_attempts=3").get_json()

    api = client.get("/api/v1/hotspots?" + query)
    assert api.status_code == 400
    [error] = api.get_json()["fields"]
    assert error["field"] == "min_attempts" and error["message"].startswith(
        ("must be at least 1", "must be at most 1000000", "must be a whole number")
    )
    page = client.get("/hotspots?" + query)
    assert page.status_code == 400
    soup = BeautifulSoup(page.data, "html.parser")
    assert "min_attempts" in soup.select_one("main").get_text()
    assert soup.select_one("#hotspots-panel") is None  # an error page, not a page with the wrong numbers

    assert _table_state(conn) == before
    again = client.get("/api/v1/hotspots?min_attempts=3").get_json()
    for body in (good, again):
        for key in body["top_keys"]:
            del key["overdue_seconds"]  # grows with the clock
    assert {k: again[k] for k in ("by_scope", "by_worker", "top_keys", "histogram")} == {
        k: good[k] for k in ("by_scope", "by_worker", "top_keys", "histogram")
    }


def test_min_attempts_bounds_are_accepted(client, conn):
    make_world(conn, 6, count=60)
    assert client.get("/api/v1/hotspots?min_attempts=1").get_json()["by_scope"]
    huge = client.get("/api/v1/hotspots?min_attempts=1000000").get_json()
    assert huge["by_scope"] == [] and huge["top_keys"] == [] and huge["min_attempts"] == 1_000_000


def test_default_comes_from_the_setting(make_app, conn):
    keys = make_world(conn, 7)
    want = expected(_now(conn), keys, 9)
    body = make_app(HOTSPOT_MIN_ATTEMPTS=9).test_client().get("/api/v1/hotspots").get_json()
    assert body["min_attempts"] == 9
    assert {row.pop("scope"): row for row in body["by_scope"]} == want["by_scope"]


def test_text_status_column(make_app, text_status_database_url):
    with psycopg.connect(text_status_database_url, autocommit=True) as c:
        keys = make_world(c, 8)
        want = expected(_now(c), keys, 5)
    body = make_app(text_status_database_url).test_client().get("/api/v1/hotspots").get_json()
    assert {row.pop("scope"): row for row in body["by_scope"]} == want["by_scope"]
    assert {row.pop("claimed_by"): row for row in body["by_worker"]} == want["by_worker"]
    assert [(k["scope"], k["key"]) for k in body["top_keys"]] == want["top"]


def test_empty_tables_render_empty_states(client):
    body = client.get("/api/v1/hotspots").get_json()
    assert body["by_scope"] == [] and body["by_worker"] == [] and body["top_keys"] == []
    assert [(b["bucket"], b["keys"]) for b in body["histogram"]] == [(label, 0) for label, _, _ in BUCKETS]
    response = client.get("/hotspots")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    empties = [p.get_text(" ", strip=True) for p in soup.select("p.empty")]
    assert empties.count("No key changed in the last 24 hours was attempted 5 times or more.") == 3
    assert "No key changed in the last 24 hours." in empties
    assert soup.select("table") == []
    whole = BeautifulSoup(client.get("/hotspots?window=all").data, "html.parser")
    empties = [p.get_text(" ", strip=True) for p in whole.select("p.empty")]
    assert empties.count("No key has been attempted 5 times or more.") == 3
    assert "The table has no keys yet." in empties


def test_htmx_request_returns_only_the_fragment(client, conn):
    make_world(conn, 9, count=50)
    response = client.get("/hotspots?min_attempts=2", headers={"HX-Request": "true"})
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    soup = BeautifulSoup(text, "html.parser")
    assert "<html" not in text and soup.select_one("header.topbar") is None and soup.select_one("form") is None
    panel = soup.select_one("#hotspots-panel")
    assert panel is not None and panel.has_attr("data-poll")
    assert panel["hx-get"] == "/hotspots?min_attempts=2"  # polling keeps the filter
    assert "every 30s" in panel["hx-trigger"] and panel["hx-swap"] == "outerHTML"
    assert soup.select_one('[data-metric="min_attempts"]').get_text() == "2"
    assert "HX-Request" in response.headers["Vary"]
    full = client.get("/hotspots?min_attempts=2")
    assert "HX-Request" in full.headers["Vary"] and b"<html" in full.data


def test_filter_form_works_without_javascript(client):
    soup = BeautifulSoup(client.get("/hotspots").data, "html.parser")
    form = soup.select_one("form#filters")
    assert form["method"] == "get" and form["action"] == "/hotspots"
    assert form["hx-get"] == "/hotspots" and form["hx-target"] == "#hotspots-panel"
    assert form["hx-push-url"] == "true"
    assert form.select_one("input[name=min_attempts]")["value"] == "5"
    assert form.select_one("button[type=submit]") is not None


def test_missing_tables_degrade_each_panel(make_app, empty_database_url):
    client = make_app(empty_database_url).test_client()
    page = client.get("/hotspots")
    assert page.status_code == 200
    soup = BeautifulSoup(page.data, "html.parser")
    assert len(soup.select(".panel-problem.schema")) == 4
    assert soup.select_one("header.topbar") is not None
    api = client.get("/api/v1/hotspots")
    assert api.status_code == 503 and "init-app-schema" in api.get_json()["error"]


@pytest.mark.system  # over a second: a panel waits out its statement timeout
def test_a_timed_out_panel_names_the_index(make_app, conn, database_url):
    make_world(conn, 10, count=20)
    client = make_app(STATEMENT_TIMEOUT_MS=200).test_client()
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        with psycopg.connect(database_url) as other:
            other.execute("LOCK TABLE app.idempotency_request IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(5)
        soup = BeautifulSoup(client.get("/hotspots").data, "html.parser")
        problems = soup.select(".panel-problem.timeout")
        assert len(problems) == 4
        advice = [p.select_one("pre.sql").get_text() for p in problems]
        assert all("CREATE INDEX CONCURRENTLY" in a and "(attempt_count" in a for a in advice)
        assert "WHERE attempt_count >= 2" in advice[0]
        histogram = soup.select_one('[aria-label="Attempt histogram"]').get_text(" ", strip=True)
        assert "needs a count of every row" in histogram
        api = client.get("/api/v1/hotspots")
        assert api.status_code == 503 and "attempt_count" in api.get_json()["error"]
    finally:
        release.set()
        holder.join(10)


def test_a_threshold_the_job_does_not_compute_is_kept_after_a_slow_live_read(client, conn, monkeypatch):
    """/hotspots?min_attempts=10 at 100M keys reads 85 ms live: the answer is kept for the rollup's interval and
    says so; the default threshold (the job's own variant) is never kept, so it always reads what the job stored or
    the table now."""
    from idemdash.queries import rollups as rollup_defs

    monkeypatch.setattr(rollup_defs, "LIVE_BUDGET_MS", 0.0)  # every live read counts as slow here

    def add(scope: str, n: int, attempts: int) -> None:
        conn.execute(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                   claimed_by, attempt_count, expires_at)
               SELECT %s, 'k' || i, 'h', 'succeeded', 'api-1', %s, now() + interval '1 day'
               FROM generate_series(1, %s) AS i""",
            (scope, attempts, n),
        )

    add("first", 3, 12)

    def scopes(url: str) -> dict:
        body = client.get(url).get_json()
        return {g["scope"]: g["hotspot_keys"] for g in body["by_scope"]}, body["precomputed"]

    kept, precomputed = scopes("/api/v1/hotspots?min_attempts=10")
    assert kept == {"first": 3} and "by_scope" not in precomputed  # read live this time
    add("second", 4, 12)
    again, precomputed = scopes("/api/v1/hotspots?min_attempts=10")
    assert again == {"first": 3} and precomputed["by_scope"]["computed_at"] is not None  # the kept answer
    page = BeautifulSoup(client.get("/hotspots?min_attempts=10").data, "html.parser")
    assert page.select_one("[data-kept]") is not None and "earlier view" in page.select_one("[data-kept]").get_text()
    default, _ = scopes("/api/v1/hotspots")
    assert default == {"first": 3, "second": 4}  # the job's variant: read now, never kept
    assert scopes("/api/v1/hotspots")[0] == {"first": 3, "second": 4}
