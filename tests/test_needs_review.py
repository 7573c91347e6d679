"""Keys held for review (needs_review) are a state of their own: listed, counted, and said who and why."""

from __future__ import annotations

from bs4 import BeautifulSoup

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key

T = Tables()


def hold(client, conn, key, reason="INC-7: looks like a double charge", scope="payments", hold_for="4h"):
    claim_key(conn, T, scope, key, "h", "api-1", lock_seconds=0)
    response = client.post(
        "/api/v1/keys/reclassify",
        json={"scope": scope, "key": key, "to": "needs_review", "reason": reason, "hold_for": hold_for},
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_held_keys_have_their_own_list_count_and_say_who_and_why(client, conn):
    hold(client, conn, "p1")
    hold(client, conn, "p2", reason="checking with the bank")
    claim_key(conn, T, "payments", "stuck-one", "h", "api-1", lock_seconds=0)  # stuck, not held
    claim_key(conn, T, "payments", "live-one", "h", "api-1", lock_seconds=600)  # processing, not held

    body = client.get("/api/v1/keys?status=needs_review").get_json()
    assert [i["key"] for i in body["items"]] == ["p1", "p2"]
    holds = {i["key"]: i["hold"] for i in body["items"]}
    assert holds["p2"]["reason"] == "checking with the bank" and holds["p1"]["by"].startswith("anonymous@")
    assert holds["p1"]["until"] == body["items"][0]["locked_until"]
    # held keys are not stuck while the hold lasts; the processing list shows them, marked
    assert [i["key"] for i in client.get("/api/v1/keys?status=stuck").get_json()["items"]] == ["stuck-one"]
    processing = client.get("/api/v1/keys?status=processing").get_json()["items"]
    assert {i["key"]: i["hold"] is not None for i in processing} == {
        "stuck-one": False,
        "live-one": False,
        "p1": True,
        "p2": True,
    }

    overview = client.get("/api/v1/overview").get_json()["keys"]
    assert (overview["needs_review"], overview["stuck"], overview["processing"]) == (2, 1, 4)

    page = BeautifulSoup(client.get("/keys?status=needs_review").data, "html.parser")
    rows = page.select("#keys-panel table.keys tbody tr")
    assert [r.select_one("a.key").get_text() for r in rows] == ["p1", "p2"]
    assert "checking with the bank" in rows[1].get_text()
    assert page.select_one('nav.tabs a[aria-current="page"]')["data-tab"] == "needs_review"
    assert page.select_one('[data-count="needs_review"]').get_text(strip=True) == "2"
    card = BeautifulSoup(client.get("/").data, "html.parser").select_one("#card-needs-review")
    assert card.select_one("[data-metric=needs_review]").get_text() == "2"
    assert card["href"] == "/keys?status=needs_review"


def test_a_hold_that_ended_is_stuck_again_and_still_shows_who_held_it(client, conn):
    hold(client, conn, "p1")
    conn.execute("UPDATE app.idempotency_request SET locked_until = now() - interval '1 minute'")
    assert [i["key"] for i in client.get("/api/v1/keys?status=stuck").get_json()["items"]] == ["p1"]
    [item] = client.get("/api/v1/keys?status=needs_review").get_json()["items"]
    assert item["hold"]["reason"].startswith("INC-7") and item["overdue_seconds"] > 0


def test_the_key_page_says_who_holds_a_key_and_when_a_finished_key_may_be_purged(make_app, conn):
    client = make_app(REPLAY_HORIZON=48 * 3600).test_client()
    hold(client, conn, "p1")
    page = BeautifulSoup(client.get("/keys/payments/p1").data, "html.parser")
    held = page.select_one("[data-hold]").get_text(" ", strip=True)
    assert "Held for review by anonymous@" in held and "INC-7: looks like a double charge" in held
    assert "never deletes a processing key" in page.select_one("[data-purgeable]").get_text()

    response = client.post(
        "/api/v1/keys/reclassify",
        json={"scope": "payments", "key": "p1", "to": "abandoned", "reason": "bank says no charge"},
    )
    assert response.status_code == 200
    detail = client.get("/api/v1/keys/payments/p1").get_json()["key"]
    assert detail["hold"] is None and detail["purgeable_from"] >= detail["expires_at"]
    page = BeautifulSoup(client.get("/keys/payments/p1").data, "html.parser")
    assert page.select_one("[data-hold]") is None
    purgeable = page.select_one("[data-purgeable]").get_text(" ", strip=True)
    assert "may delete this key once" in purgeable and "has passed" in purgeable and "from in" not in purgeable
    stamp = page.select_one("[data-purgeable] time[data-abs]")["datetime"]
    assert stamp[:16] == detail["purgeable_from"][:16]


def test_a_held_key_is_not_called_a_live_lease_and_its_outbox_evidence_still_counts(client, conn):
    hold(client, conn, "p1")
    body = client.get("/api/v1/keys/payments/p1").get_json()
    assert body["suggestion"]["to"] is None
    assert body["suggestion"]["evidence"][0].startswith("Held for review for 3 h 59 min more")  # hold_for 4h
    page = BeautifulSoup(client.get("/keys/payments/p1").data, "html.parser")
    assert page.select_one("main p .badge.held").get_text() == "held for review"
    assert "may still finish" not in page.get_text()
    conn.execute("""INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload) VALUES ('payment.taken', 'payment', gen_random_uuid(), 'payments',
                        'p1', '{}')""")
    assert client.get("/api/v1/keys/payments/p1").get_json()["suggestion"]["to"] == "already_succeeded"
