"""A small world with something on every page, for the tests that visit them all (phone width, accessibility):
stuck, held, finished and failed keys (long and hostile ones among them), outbox rows (a poison one with a
hostile payload, a parked one), inbox rows, a bulk action, a note and a reclassification over the outbox's evidence in
the audit log, snapshots for the trends, purge runs (finished, cancelled, one running)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, consume_message
from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events, now_of

LONG_KEY = "order/" + "x" * 1200
HOSTILE_KEY = "<script>alert('key')</script>"
HOSTILE_PAYLOAD = {"note": '</pre><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'}


@dataclass(frozen=True)
class World:
    scope: str
    key: str
    poison_id: str
    parked_id: str


def seed(conn, client) -> World:
    """Fill the test database through SQL and, for the operator's actions, through ``client`` (the app's API)."""
    now = now_of(conn)
    for i in range(12):
        insert_key(
            conn,
            ["create_order", "capture_payment", "refund"][i % 3],
            f"cart/{i}/checkout-{i:04d}",
            claimed_by=f"worker-{i % 4}",
            attempts=1 + i % 6,
            locked_until=timedelta(minutes=-5 - i),
        )
    insert_key(conn, "create_order", LONG_KEY, attempts=9)
    insert_key(conn, "refund", HOSTILE_KEY)
    insert_key(conn, "create_order", "live-lease", locked_until=timedelta(minutes=10))
    for i in range(6):
        insert_key(conn, "create_order", f"done-{i}", status="succeeded", locked_until=None, response_body={"ok": i})
        insert_key(
            conn,
            "refund",
            f"retry-{i}",
            status="failed_retryable",
            locked_until=None,
            failure=("timeout", "upstream timed out"),
        )
        insert_key(
            conn,
            "capture_payment",
            f"final-{i}",
            status="failed_final",
            locked_until=None,
            failure=("card_declined", "declined"),
        )
    for i in range(3):
        claim_key(conn, Tables(), "send_invoice", f"bulk-{i}", "h", "api-9", lock_seconds=0)
    poison = Event(
        "invoice.sent",
        "pending",
        now - timedelta(hours=3),
        attempt_count=14,
        scope="create_order",
        key="cart/0/checkout-0000",
        payload=HOSTILE_PAYLOAD,
    )
    insert_events(
        conn,
        [
            poison,
            Event(
                "order.created",
                "pending",
                now - timedelta(minutes=20),
                scope="create_order",
                key="cart/3/checkout-0003",
            ),
            Event(
                "order.created",
                "published",
                now - timedelta(hours=2),
                published_at=now,
                scope="create_order",
                key="done-1",
            ),
        ],
    )
    for i in range(5):
        consume_message(conn, Tables(), f"consumer-{i % 2}", f"message-{i}", "h")
    conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h, rows_purged)
                    SELECT now() - g * interval '10 minutes', g % 5, 20, 6, 6, g % 3, g * 60.0, 5, g * 10
                    FROM generate_series(1, 12) g""")
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted,
                        dry_run, outcome, started_by)
                    VALUES ('keys', now() - interval '1 hour', now() - interval '59 minutes', 3, 12000, false,
                            'succeeded', 'scheduler'),
                           ('inbox', now() - interval '2 hours', now() - interval '119 minutes', 2, 800, false,
                            'cancelled', 'alice')""")
    # running now (as a scheduler's runner writes it): the page offers its Cancel button
    conn.execute(
        "INSERT INTO idemdash.purge_run (table_name, started_by, batches, rows_deleted, dry_run) "
        "VALUES ('outbox', 'scheduler', 4, 4000, false)"
    )

    api = "/api/v1/keys/reclassify-bulk"
    preview = client.post(api, json={"filter": {"scope": "send_invoice"}, "to": "abandoned", "preview": True})
    assert preview.status_code == 200, preview.get_json()
    done = client.post(
        api,
        json={
            "filter": {"scope": "send_invoice"},
            "to": "abandoned",
            "reason": "INC-5: invoices",
            "as_of": preview.get_json()["as_of"],
        },
    )
    assert done.status_code == 200 and done.get_json()["changed"] == 3, done.get_json()
    note = client.post(
        "/api/v1/keys/notes",
        json={"scope": "create_order", "key": "cart/0/checkout-0000", "text": "INC-5: looking at the payment provider"},
    )
    assert note.status_code == 201, note.get_json()
    # abandoned although an outbox row says the effect committed: the override is in the audit line
    insert_events(
        conn,
        [
            Event(
                "order.created",
                "pending",
                now - timedelta(minutes=30),
                scope="create_order",
                key="cart/6/checkout-0006",
            )
        ],
    )
    done = client.post(
        "/api/v1/keys/reclassify",
        json={
            "scope": "create_order",
            "key": "cart/6/checkout-0006",
            "to": "abandoned",
            "override_evidence": True,
            "reason": "INC-7: the outbox row is a test event written by the load test",
        },
    )
    assert done.status_code == 200, done.get_json()
    parked = conn.execute(
        "SELECT outbox_id::text FROM app.outbox_event WHERE idempotency_key = 'cart/3/checkout-0003'"
    ).fetchone()[0]
    done = client.post("/api/v1/outbox/park", json={"outbox_id": parked, "reason": "INC-5: payload fails the schema"})
    assert done.status_code == 200, done.get_json()
    return World("create_order", "cart/0/checkout-0000", str(poison.outbox_id), parked)


def page_urls(app, world: World) -> list[str]:
    """Every HTML page of the app (enumerated from its routes, so a new page is visited too), with the variants
    that show the most: each key state, a search, a filtered audit log."""
    fill = {"scope": quote(world.scope, safe=""), "key": quote(world.key, safe="/"), "outbox_id": world.poison_id}
    urls = []
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        if (
            "GET" not in rule.methods
            or rule.endpoint == "static"
            or rule.rule.startswith("/api/")
            or rule.endpoint.startswith(("probes.", "metrics."))
            or rule.endpoint == "keys.detail_page_by_query"
            or rule.endpoint.startswith("table_rows.")
        ):  # a table's state and row: below, with their query
            continue
        unknown = set(rule.arguments) - set(fill)
        assert not unknown, f"{rule.rule}: no value for {unknown} in tests/world.py"
        urls.append(re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", lambda m: fill[m.group(1)], rule.rule))
    urls += [
        f"/keys?status={s}" for s in ("needs_review", "processing", "succeeded", "failed_retryable", "failed_final")
    ]
    urls += [
        "/search?q=cart",
        "/search?q=nothing-like-it",
        f"/key?scope=create_order&key={quote(LONG_KEY)}",
        f"/key?scope=refund&key={quote(HOSTILE_KEY)}",
        "/audit?action=reclassify-bulk",
        "/?range=7d",
        "/keys?scope=cap",
        f"/outbox/{world.parked_id}",
        "/keys/create_order/cart/6/checkout-0006",
        "/keys/create_order/done-1",
        "/keys?status=stuck&scope=nothing-like-it",
        "/tables/outbox?state=pending",
        "/tables/keys?state=stuck",
        f"/tables/outbox/row?id={quote(json.dumps([world.poison_id]))}",
        f"/journey?q={quote(world.scope + '/' + world.key, safe='')}",
        f"/journey?q={world.poison_id}",
    ]
    return urls
