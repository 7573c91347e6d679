"""The overview's numbers against ground truth computed here, from the rows the test writes."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

LEASE = 300  # the default lease (IDEMDASH_DEFAULT_LEASE_SECONDS)


@dataclass
class Key:
    scope: str
    key: str
    status: str
    claimed_at: datetime
    locked_until: datetime | None
    updated_at: datetime


@dataclass
class Outbox:
    status: str
    created_at: datetime


def _now(conn) -> datetime:
    return conn.execute("SELECT now()").fetchone()[0]


def make_world(conn: psycopg.Connection, seed: int) -> tuple[list[Key], list[Outbox], list[tuple[str, datetime]]]:
    """Write a random but known mix of rows and return them for independent counting."""
    rng = random.Random(seed)
    now = _now(conn)
    keys: list[Key] = []
    for i in range(300):
        status = rng.choice(["processing", "processing", "succeeded", "failed_retryable", "failed_final"])
        claimed_at = now - timedelta(seconds=rng.randint(1, 3 * 86400))
        locked_until = None
        if status == "processing":
            # leases ending in the past (stuck), in the future (live), or NULL (judged by claimed_at)
            locked_until = rng.choice(
                [now - timedelta(seconds=rng.randint(1, 7200)), now + timedelta(seconds=rng.randint(60, 7200)), None]
            )
            if locked_until is None and rng.random() < 0.5:
                claimed_at = now - timedelta(seconds=rng.randint(1, LEASE - 30))  # still inside the lease
        updated_at = claimed_at + timedelta(seconds=rng.randint(0, 600))
        if updated_at > now:
            updated_at = now
        keys.append(
            Key(
                rng.choice(["create_order", "refund", "x/y scope"]),
                f"k-{i}-{uuid.uuid4()}",
                status,
                claimed_at,
                locked_until,
                updated_at,
            )
        )
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                   claimed_by, claimed_at, locked_until, created_at, updated_at, expires_at, response_body)
               VALUES (%s, %s, 'h', %s, 'w', %s, %s, %s, %s, %s + interval '10 days', %s)""",
            [
                (
                    k.scope,
                    k.key,
                    k.status,
                    k.claimed_at,
                    k.locked_until,
                    k.claimed_at,
                    k.updated_at,
                    k.claimed_at,
                    Jsonb({"ok": True}),
                )
                for k in keys
            ],
        )
    outbox = [
        Outbox(rng.choice(["pending", "published", "published"]), now - timedelta(seconds=rng.randint(5, 86400)))
        for _ in range(120)
    ]
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                   idempotency_key, payload, status, created_at, published_at)
               VALUES ('e', 'a', gen_random_uuid(), 's', gen_random_uuid()::text, '{}', %s, %s,
                       CASE WHEN %s = 'published' THEN now() END)""",
            [(o.status, o.created_at, o.status) for o in outbox],
        )
    inbox = [
        (rng.choice(["billing", "shipping", "analytics"]), now - timedelta(hours=rng.uniform(0, 60)))
        for _ in range(150)
    ]
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)
               VALUES (%s, gen_random_uuid()::text, 'h', %s)""",
            inbox,
        )
    return keys, outbox, inbox


def expected(now: datetime, keys: list[Key], outbox: list[Outbox], inbox: list[tuple[str, datetime]]) -> dict:
    day_ago = now - timedelta(hours=24)

    def is_stuck(k: Key) -> bool:
        if k.status != "processing":
            return False
        if k.locked_until is not None:
            return k.locked_until < now
        return k.claimed_at < now - timedelta(seconds=LEASE)

    pending = [o for o in outbox if o.status == "pending"]
    recent_inbox = [c for c, at in inbox if at >= day_ago]
    return {
        "stuck": sum(is_stuck(k) for k in keys),
        "processing": sum(k.status == "processing" for k in keys),
        "failed_retryable": sum(k.status == "failed_retryable" for k in keys),
        "failed_final_24h": sum(k.status == "failed_final" and k.updated_at >= day_ago for k in keys),
        "succeeded_24h": sum(k.status == "succeeded" and k.updated_at >= day_ago for k in keys),
        "outbox_pending": len(pending),
        "oldest_pending": min(o.created_at for o in pending) if pending else None,
        "inbox_rows_24h": len(recent_inbox),
        "consumers_24h": len(set(recent_inbox)),
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_overview_api_matches_ground_truth(make_app, conn, seed):
    keys, outbox, inbox = make_world(conn, seed)
    want = expected(_now(conn), keys, outbox, inbox)
    assert want["stuck"] > 0 and want["processing"] > want["stuck"]  # the data exercises every branch

    body = make_app().test_client().get("/api/v1/overview").get_json()

    assert body["keys"]["stuck"] == want["stuck"]
    assert body["keys"]["processing"] == want["processing"]
    assert body["keys"]["failed_retryable"] == want["failed_retryable"]
    assert body["keys"]["failed_final_24h"] == want["failed_final_24h"]
    assert body["keys"]["succeeded_24h"] == want["succeeded_24h"]
    assert body["outbox"]["pending"] == want["outbox_pending"]
    assert datetime.fromisoformat(body["outbox"]["oldest_pending_at"]) == want["oldest_pending"]
    assert body["outbox"]["lag_seconds"] >= (datetime.now(timezone.utc) - want["oldest_pending"]).total_seconds() - 5
    assert body["inbox"]["rows_24h"] == want["inbox_rows_24h"]
    assert body["inbox"]["consumers_24h"] == want["consumers_24h"]
    assert datetime.fromisoformat(body["as_of"]).tzinfo is not None
    assert "locked_until" in body["definitions"]["stuck"]


def test_overview_page_shows_the_same_numbers(make_app, conn):
    keys, outbox, inbox = make_world(conn, 3)
    want = expected(_now(conn), keys, outbox, inbox)
    response = make_app().test_client().get("/")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    shown = {el["data-metric"]: el.get_text(strip=True).replace(",", "") for el in soup.select("[data-metric]")}
    assert shown["stuck"] == str(want["stuck"])
    assert shown["processing"] == str(want["processing"])
    assert shown["failed_retryable"] == str(want["failed_retryable"])
    assert shown["failed_final_24h"] == str(want["failed_final_24h"])
    assert shown["outbox_pending"] == str(want["outbox_pending"])
    assert shown["inbox_rows_24h"] == str(want["inbox_rows_24h"])
    # the stuck card is marked as an alert, and says what it counts
    card = soup.select_one("#card-stuck")
    assert "alert" in card["class"]
    assert "locked_until" in card.get_text()


def test_overview_htmx_request_gets_only_the_fragment(client):
    response = client.get("/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert "<html" not in text and 'data-metric="stuck"' in text
    assert "HX-Request" in response.headers["Vary"]


def test_overview_on_empty_tables_renders_zeros_and_empty_states(client):
    body = client.get("/api/v1/overview").get_json()
    assert body["keys"]["stuck"] == 0 and body["outbox"]["pending"] == 0
    assert body["outbox"]["lag_seconds"] is None and body["last_purges"] == []
    page = BeautifulSoup(client.get("/").data, "html.parser")
    assert page.select_one('[data-metric="stuck"]').get_text(strip=True) == "0"
    assert "No purge has run yet" in page.get_text()


def test_overview_with_text_status_column(make_app, text_status_database_url):
    with psycopg.connect(text_status_database_url, autocommit=True) as c:
        keys, outbox, inbox = make_world(c, 4)
        want = expected(_now(c), keys, outbox, inbox)
    body = make_app(text_status_database_url).test_client().get("/api/v1/overview").get_json()
    assert body["keys"]["stuck"] == want["stuck"]
    assert body["keys"]["processing"] == want["processing"]


def test_last_purges_listed_newest_first(client, conn):
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted,
                        dry_run, outcome, started_by, method, partitions_dropped)
                    VALUES ('idempotency_request', now() - interval '2 hours', now() - interval '2 hours', 3, 12000,
                            false, 'succeeded', 'scheduler', 'due_index', 2),
                           ('outbox_event', now() - interval '1 hour', now() - interval '1 hour', 0, 0,
                            true, 'failed', 'alice', NULL, 0)""")
    runs = client.get("/api/v1/overview").get_json()["last_purges"]
    assert [r["table_name"] for r in runs] == ["outbox_event", "idempotency_request"]
    assert runs[1]["rows_deleted"] == 12000
    # the same fields as /api/v1/purges: how its batches went, and the partitions it dropped
    assert (runs[1]["method"], runs[1]["partitions_dropped"]) == ("due_index", 2)
    page = BeautifulSoup(client.get("/").data, "html.parser").get_text()
    assert "12,000" in page and "alice" in page


def test_probes(client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/readyz").get_json() == {"status": "ok"}


@pytest.mark.system
def test_readyz_fails_when_the_database_is_unreachable(make_app):
    app = make_app("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1", POOL_MIN_SIZE=1)
    client = app.test_client()
    assert client.get("/healthz").status_code == 200
    response = client.get("/readyz")
    assert response.status_code == 503
    answer = response.get_json()
    assert answer["cause"] == "refused"
    assert answer["error"].startswith("database unreachable: connection refused by 127.0.0.1 port 1")


def test_security_headers_and_no_password_in_page(make_app, database_url):
    # the embedded server trusts local connections, so the password is accepted and ignored
    response = make_app(database_url + " password=hunter2-secret").test_client().get("/")
    assert response.status_code == 200
    assert b"hunter2-secret" not in response.data
    # the header names host, port and database instead; the port and database always in full (what tells two
    # databases apart), a socket directory by its last part (in full on hover)
    dbname = conninfo_to_dict(database_url)["dbname"]
    header = BeautifulSoup(response.data, "html.parser").select_one(".topbar .dbname")
    assert header.get_text().endswith(f":5432/{dbname}")
    assert conninfo_to_dict(database_url)["host"] in header["title"]
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    soup = BeautifulSoup(response.data, "html.parser")
    assert not [s for s in soup.find_all("script") if s.string and s.string.strip()], "no inline script"


def test_unknown_api_path_is_json_404(client):
    response = client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert "error" in response.get_json()
