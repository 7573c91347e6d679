"""/suppression and its JSON twin against ground truth computed here from the rows the tests write."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup

PAYLOAD = "<img src=x onerror=alert(1)><script>alert('sup')</script>"
STATUSES = ("processing", "succeeded", "failed_retryable", "failed_final")
WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
# Ages of created_at, each well clear of a window's edge (the request's now() is a little later than ours).
AGES = [
    (timedelta(minutes=1), timedelta(minutes=50)),
    (timedelta(minutes=70), timedelta(hours=23)),
    (timedelta(hours=25), timedelta(days=6, hours=22)),
    (timedelta(days=7, hours=2), timedelta(days=12)),
]
COUNTED = (
    "keys",
    "first_attempt",
    "retried",
    "total_attempts",
    "extra_attempts",
    "max_attempts",
    "succeeded",
    "failed_final",
    "processing",
    "failed_retryable",
)


@dataclass
class Key:
    scope: str
    key: str
    status: str
    attempts: int
    created_at: datetime


def _now(conn) -> datetime:
    return conn.execute("SELECT now()").fetchone()[0]


def insert(conn, keys: list[Key]) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                   claimed_by, claimed_at, locked_until, attempt_count, created_at, updated_at, expires_at)
               VALUES (%s, %s, 'h', %s, 'api-1', %s, NULL, %s, %s, %s, %s + interval '30 days')""",
            [
                (k.scope, k.key, k.status, k.created_at, k.attempts, k.created_at, k.created_at, k.created_at)
                for k in keys
            ],
        )


def make_world(
    conn, seed: int, count: int = 500, scopes=("create_order", "refund", "send_invoice", "x/y scope")
) -> list[Key]:
    rng = random.Random(seed)
    now = _now(conn)
    keys = []
    for i in range(count):
        low, high = rng.choice(AGES)
        age = timedelta(seconds=rng.uniform(low.total_seconds(), high.total_seconds()))
        keys.append(
            Key(
                rng.choice(scopes),
                f"k-{i}",
                rng.choice(STATUSES),
                rng.choice([1, 1, 1, 1, 1, 2, 2, 3, 4, 7, rng.randint(1, 40)]),
                now - age,
            )
        )
    insert(conn, keys)
    return keys


def expected(now: datetime, keys: list[Key], window: str) -> tuple[dict, dict]:
    since = now - WINDOWS[window]
    per: dict = defaultdict(lambda: dict.fromkeys(COUNTED, 0))
    for k in keys:
        if k.created_at < since:
            continue
        row = per[k.scope]
        row["keys"] += 1
        row["first_attempt"] += k.attempts == 1
        row["retried"] += k.attempts > 1
        row["total_attempts"] += k.attempts
        row["extra_attempts"] += k.attempts - 1
        row["max_attempts"] = max(row["max_attempts"], k.attempts)
        row[k.status] += 1
    totals = {f: sum(r[f] for r in per.values()) for f in COUNTED}
    totals["max_attempts"] = max((r["max_attempts"] for r in per.values()), default=None)
    totals["scopes"] = len(per)
    return dict(per), totals


def pct(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


def strip_pct(row: dict) -> float | None:
    return row.pop("retried_pct")


@pytest.mark.system
@pytest.mark.parametrize("window", ["1h", "24h", "7d", None])
def test_api_matches_ground_truth(make_app, conn, window):
    keys = make_world(conn, 1)
    want, want_totals = expected(_now(conn), keys, window or "24h")
    assert want_totals["retried"] and want_totals["first_attempt"]  # the data exercises both

    response = make_app().test_client().get("/api/v1/suppression" + (f"?window={window}" if window else ""))
    assert response.status_code == 200
    body = response.get_json()

    assert body["window"] == (window or "24h")
    since = datetime.fromisoformat(body["since"])
    assert since.tzinfo is not None
    assert abs((datetime.now(timezone.utc) - WINDOWS[window or "24h"] - since).total_seconds()) < 30
    got = {}
    for row in body["scopes"]:
        got_pct = strip_pct(row)
        assert got_pct == pytest.approx(pct(row["retried"], row["keys"]))
        got[row.pop("scope")] = row
    assert got == want
    assert [r["retried"] for r in body["scopes"]] == sorted((r["retried"] for r in body["scopes"]), reverse=True)
    totals = dict(body["totals"])
    assert strip_pct(totals) == pytest.approx(pct(want_totals["retried"], want_totals["keys"]))
    assert totals == want_totals
    assert body["truncated"] is False
    sentence = body["counts"]
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    for words in (
        "created_at",
        "attempt_count = 1",
        "attempt_count > 1",
        "re-claim",
        "not a duplicate effect",
        "replays of succeeded keys",
        "not counted",
    ):
        assert words in sentence


def test_windows_count_different_keys(client, conn):
    keys = make_world(conn, 2)
    now = _now(conn)
    sizes = [client.get(f"/api/v1/suppression?window={w}").get_json()["totals"]["keys"] for w in WINDOWS]
    assert sizes == [expected(now, keys, w)[1]["keys"] for w in WINDOWS]
    assert sizes[0] < sizes[1] < sizes[2] < len(keys)


def cells(tr) -> dict:
    return {td["data-col"]: td.get_text(strip=True) for td in tr.select("td[data-col]")}


def shown_as(row: dict, retried_pct: float | None) -> dict:
    """How the page should print a row: thousands separators, one decimal for the share, '-' for nothing."""
    out = {f: "-" if row[f] is None else f"{row[f]:,}" for f in COUNTED}
    out["retried_pct"] = "-" if retried_pct is None else f"{retried_pct:.1f}%"
    return out


@pytest.mark.parametrize("window", ["1h", "7d"])
def test_page_shows_the_same_numbers_and_says_what_they_count(make_app, conn, window):
    keys = make_world(conn, 3)
    want, want_totals = expected(_now(conn), keys, window)
    response = make_app().test_client().get(f"/suppression?window={window}")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    rows = soup.select("#suppression-table tbody tr")
    assert {tr["data-scope"]: cells(tr) for tr in rows} == {
        scope: shown_as(r, pct(r["retried"], r["keys"])) for scope, r in want.items()
    }
    assert cells(soup.select_one("#totals")) == shown_as(want_totals, pct(want_totals["retried"], want_totals["keys"]))
    assert f"All {want_totals['scopes']} scopes" in soup.select_one("#totals th").get_text()
    assert soup.select_one("select[name=window] option[selected]")["value"] == window
    text = " ".join(soup.get_text().split())
    for words in (
        "created_at",
        "attempt_count = 1",
        "attempt_count > 1",
        "needed a re-claim",
        "lease ran out",
        "retryable failure",
        "duplicate execution the key let through safely",
        "not a duplicate effect",
        "answered from the stored response and does not change the row",
    ):
        assert words in text, words
    label = {"1h": "hour", "7d": "7 days"}[window]
    assert f"in the last {label}" in soup.select_one("#window-note").get_text(" ", strip=True)


def test_numbers_have_thousands_separators(client, conn):
    conn.execute("""INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        attempt_count, expires_at)
                    SELECT 'bulk', 'k' || i, 'h', 'succeeded', CASE WHEN i <= 1100 THEN 3 ELSE 1 END,
                           now() + interval '1 day'
                    FROM generate_series(1, 2345) AS i""")
    row = cells(
        BeautifulSoup(client.get("/suppression?window=1h").data, "html.parser").find("tr", attrs={"data-scope": "bulk"})
    )
    assert row["keys"] == "2,345" and row["first_attempt"] == "1,245" and row["retried"] == "1,100"
    assert row["total_attempts"] == "4,545" and row["extra_attempts"] == "2,200" and row["retried_pct"] == "46.9%"


def test_scope_list_is_bounded_and_totals_count_every_scope(make_app, conn):
    keys = make_world(conn, 4, count=1500, scopes=tuple(f"scope-{i:03}" for i in range(230)))
    want, want_totals = expected(_now(conn), keys, "7d")
    assert len(want) > 200
    body = make_app().test_client().get("/api/v1/suppression?window=7d").get_json()
    assert len(body["scopes"]) == 200 and body["truncated"] is True
    assert body["totals"]["scopes"] == len(want) and body["totals"]["keys"] == want_totals["keys"]
    # the ones listed are those with the most retried keys
    cut = sorted((r["retried"] for r in want.values()), reverse=True)[199]
    assert min(r["retried"] for r in body["scopes"]) == cut


def test_html_in_scopes_renders_as_inert_text(client, conn):
    insert(conn, [Key(PAYLOAD, "k", "succeeded", 3, _now(conn) - timedelta(minutes=5))])
    html = client.get("/suppression?window=1h").get_data(as_text=True)
    soup = BeautifulSoup(html, "html.parser")
    assert [s for s in soup.find_all("script") if not s.get("src")] == [] and not soup.find("img")
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;sup&#39;)" in html
    row = soup.select_one("#suppression-table tbody tr")
    assert row["data-scope"] == PAYLOAD and row.select_one("th").get_text() == PAYLOAD
    assert client.get("/api/v1/suppression?window=1h").get_json()["scopes"][0]["scope"] == PAYLOAD


@pytest.mark.parametrize(
    "query", ["window=2h", "window=24H", "window=1d", "window=7d%20", "window=%3Cscript%3E", "window=" + "x" * 3000]
)
def test_bad_window_is_a_clear_400_and_changes_nothing(client, conn, query):
    make_world(conn, 5, count=40)
    before = conn.execute(
        "SELECT count(*), sum(attempt_count), max(updated_at) FROM app.idempotency_request"
    ).fetchone()
    good = client.get("/api/v1/suppression?window=7d").get_json()

    api = client.get("/api/v1/suppression?" + query)
    assert api.status_code == 400
    assert "window must be one of '1h', '24h' or '7d'" in api.get_json()["error"]
    page = client.get("/suppression?" + query)
    assert page.status_code == 400
    soup = BeautifulSoup(page.data, "html.parser")
    assert "window must be one of '1h', '24h' or '7d'" in soup.select_one("main").get_text()
    assert soup.select_one("#suppression-panel") is None
    assert [s for s in soup.find_all("script") if not s.get("src")] == []

    after = conn.execute("SELECT count(*), sum(attempt_count), max(updated_at) FROM app.idempotency_request").fetchone()
    assert after == before
    again = client.get("/api/v1/suppression?window=7d").get_json()
    assert (again["scopes"], again["totals"]) == (good["scopes"], good["totals"])


def test_text_status_column(make_app, text_status_database_url):
    with psycopg.connect(text_status_database_url, autocommit=True) as c:
        keys = make_world(c, 6)
        want, want_totals = expected(_now(c), keys, "7d")
    body = make_app(text_status_database_url).test_client().get("/api/v1/suppression?window=7d").get_json()
    got = {}
    for row in body["scopes"]:
        strip_pct(row)
        got[row.pop("scope")] = row
    assert got == want
    strip_pct(body["totals"])
    assert body["totals"] == want_totals


def test_empty_tables_render_an_empty_state(client):
    body = client.get("/api/v1/suppression").get_json()
    assert body["scopes"] == [] and body["truncated"] is False
    assert body["totals"] == {**dict.fromkeys(COUNTED, 0), "max_attempts": None, "retried_pct": None, "scopes": 0}
    response = client.get("/suppression")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    assert (
        soup.select_one("p.empty").get_text(" ", strip=True)
        == "No key was created in the last 24 hours. Try a longer window."
    )
    assert soup.select_one("#suppression-table") is None
    assert "Not counted here" in soup.get_text()  # the definitions stay, data or not


def test_old_keys_only_is_an_empty_window(client, conn):
    insert(conn, [Key("create_order", "old", "succeeded", 4, _now(conn) - timedelta(days=3))])
    assert client.get("/api/v1/suppression?window=24h").get_json()["scopes"] == []
    assert [r["scope"] for r in client.get("/api/v1/suppression?window=7d").get_json()["scopes"]] == ["create_order"]
    soup = BeautifulSoup(client.get("/suppression?window=1h").data, "html.parser")
    assert "No key was created in the last hour." in soup.select_one("p.empty").get_text()


def test_htmx_request_returns_only_the_fragment(client, conn):
    make_world(conn, 7, count=60)
    response = client.get("/suppression?window=7d", headers={"HX-Request": "true"})
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    soup = BeautifulSoup(text, "html.parser")
    assert "<html" not in text and soup.select_one("header.topbar") is None and soup.select_one("form") is None
    panel = soup.select_one("#suppression-panel")
    assert panel is not None and panel.has_attr("data-poll")
    assert panel["hx-get"] == "/suppression?window=7d"
    assert "every 30s" in panel["hx-trigger"] and panel["hx-swap"] == "outerHTML"
    assert soup.select_one("#totals") is not None
    assert "HX-Request" in response.headers["Vary"]
    assert "HX-Request" in client.get("/suppression").headers["Vary"]


def test_filter_form_works_without_javascript(client):
    soup = BeautifulSoup(client.get("/suppression?window=1h").data, "html.parser")
    form = soup.select_one("form#filters")
    assert form["method"] == "get" and form["action"] == "/suppression"
    assert form["hx-get"] == "/suppression" and form["hx-target"] == "#suppression-panel"
    assert form["hx-push-url"] == "true"
    assert [o["value"] for o in form.select("select[name=window] option")] == ["1h", "24h", "7d"]
    assert form.select_one("button[type=submit]") is not None
    assert soup.select_one(".updated time") is not None


def test_missing_tables_degrade_the_panel(make_app, empty_database_url):
    client = make_app(empty_database_url).test_client()
    page = client.get("/suppression")
    assert page.status_code == 200
    soup = BeautifulSoup(page.data, "html.parser")
    assert soup.select_one(".panel-problem.schema") is not None and soup.select_one("header.topbar") is not None
    api = client.get("/api/v1/suppression")
    assert api.status_code == 503 and "init-app-schema" in api.get_json()["error"]
