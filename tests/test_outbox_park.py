"""Parking a poison outbox row and releasing it: the relay publishes only pending rows, so a parked row waits.

Compare-and-set on the row (status, and attempt count when given), never waiting behind the relay, audited in the
same statement; a published row is never changed. /health warns when the table's status would refuse 'parked'."""

from __future__ import annotations

import threading
from datetime import timedelta

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.queries import Tables
from idemdash.queries.workload.simulate import list_pending_outbox_events_for_publish
from tests.test_outbox import Event, insert_events, now_of

T = Tables()
PARK, RELEASE = "/api/v1/outbox/park", "/api/v1/outbox/release"


def status_of(conn, outbox_id) -> str:
    return conn.execute("SELECT status FROM app.outbox_event WHERE outbox_id = %s", (outbox_id,)).fetchone()[0]


def audit(conn) -> list[dict]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM idemdash.audit_log ORDER BY audit_id").fetchall()


def relay_picks(conn) -> set[str]:
    """What the reference relay would publish now (its own query, the one the demo's publisher runs)."""
    with conn.transaction():
        rows = list_pending_outbox_events_for_publish(conn, T, 100, retry_fraction=1.0)
    return {str(r.outbox_id) for r in rows}


@pytest.fixture
def poison(conn):
    now = now_of(conn)
    events = [
        Event("invoice.sent", "pending", now - timedelta(hours=2), attempt_count=9),
        Event("order.created", "pending", now - timedelta(seconds=12)),
        Event("order.created", "published", now - timedelta(hours=1), published_at=now - timedelta(minutes=59)),
    ]
    insert_events(conn, events)
    return [str(e.outbox_id) for e in events]


def test_park_holds_a_row_back_from_the_relay_and_release_gives_it_back(client, conn, poison):
    bad, fresh, _ = poison
    assert relay_picks(conn) == {bad, fresh}
    parked = client.post(
        PARK, json={"outbox_id": bad, "reason": "INC-5: payload fails the schema", "expected_attempt_count": 9}
    )
    assert parked.status_code == 200, parked.get_json()
    assert parked.get_json()["status"] == "parked" and parked.get_json()["audit_id"]
    assert status_of(conn, bad) == "parked"
    assert relay_picks(conn) == {fresh}
    [entry] = audit(conn)
    assert (entry["action"], entry["from_status"], entry["to_status"], entry["reason"]) == (
        "outbox-park",
        "pending",
        "parked",
        "INC-5: payload fails the schema",
    )
    assert entry["detail"]["outbox_id"] == bad and entry["scope"] == "create_order"

    released = client.post(RELEASE, json={"outbox_id": bad.upper(), "reason": "schema fixed"})
    assert released.status_code == 200 and released.get_json()["status"] == "pending"
    assert relay_picks(conn) == {bad, fresh}
    assert [a["action"] for a in audit(conn)] == ["outbox-park", "outbox-release"]
    assert client.get("/api/v1/audit?action=outbox-park").get_json()["items"][0]["reason"] == (
        "INC-5: payload fails the schema"
    )


def test_a_published_row_and_a_row_that_changed_are_refused(client, conn, poison):
    bad, fresh, published = poison
    answer = client.post(PARK, json={"outbox_id": published, "reason": "x"})
    assert answer.status_code == 409 and "published" in answer.get_json()["error"]
    assert answer.get_json()["row"]["status"] == "published"
    conn.execute("UPDATE app.outbox_event SET attempt_count = 0 WHERE outbox_id = %s", (bad,))  # reset: a new try
    stale = client.post(PARK, json={"outbox_id": bad, "reason": "x", "expected_attempt_count": 9})
    assert (
        stale.status_code == 409
        and "no longer likely poison: attempt_count is 0, you saw 9" in (stale.get_json()["error"])
    )
    conn.execute("UPDATE app.outbox_event SET attempt_count = 9 WHERE outbox_id = %s", (bad,))
    assert client.post(RELEASE, json={"outbox_id": fresh, "reason": "x"}).status_code == 409  # not parked
    assert client.post(PARK, json={"outbox_id": bad, "reason": "x"}).status_code == 200
    twice = client.post(PARK, json={"outbox_id": bad, "reason": "x"})
    assert twice.status_code == 409 and "parked now" in twice.get_json()["error"]
    assert status_of(conn, published) == "published" and status_of(conn, fresh) == "pending"
    assert len(audit(conn)) == 1


@pytest.mark.parametrize(
    "body, message",
    [
        ({"reason": "x"}, "outbox_id is required"),
        ({"outbox_id": "not-a-uuid", "reason": "x"}, "must be a UUID"),
        ({"outbox_id": "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55"}, "reason is required"),
        (
            {"outbox_id": "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55", "reason": "x", "force": True},
            "force is not a field of this request",
        ),
        ({"outbox_id": "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55", "reason": "x"}, "no outbox row"),
    ],
)
def test_bad_input_is_a_clear_4xx_and_changes_nothing(client, conn, poison, body, message):
    answer = client.post(PARK, json=body)
    assert 400 <= answer.status_code < 500 and message in answer.get_json()["error"]
    assert audit(conn) == []


def test_a_row_the_relay_holds_is_refused_at_once(client, conn, database_url, poison):
    bad = poison[0]
    holding, release = threading.Event(), threading.Event()

    def relay():
        with psycopg.connect(database_url) as other, other.transaction():
            other.execute("SELECT 1 FROM app.outbox_event WHERE outbox_id = %s FOR UPDATE", (bad,))
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=relay)
    thread.start()
    try:
        assert holding.wait(10)
        answer = client.post(PARK, json={"outbox_id": bad, "reason": "x"})
        assert answer.status_code == 409 and "relay holds this row" in answer.get_json()["error"]
    finally:
        release.set()
        thread.join(10)
    assert status_of(conn, bad) == "pending" and audit(conn) == []


def test_the_outbox_page_lists_parked_rows_and_its_lag_leaves_poison_out(client, conn, poison):
    bad, fresh, _ = poison
    body = client.get("/api/v1/outbox").get_json()
    backlog = body["backlog"]
    assert backlog["pending"] == 2 and backlog["pending_many_attempts"] == 1
    assert 10 <= backlog["healthy_lag_seconds"] < 120 and backlog["lag_seconds"] == backlog["healthy_lag_seconds"]
    assert backlog["poison_oldest_seconds"] >= 7200
    assert body["parked"] == []
    client.post(PARK, json={"outbox_id": bad, "reason": "INC-5: bad payload"})
    body = client.get("/api/v1/outbox").get_json()
    assert [(p["outbox_id"], p["reason"]) for p in body["parked"]] == [(bad, "INC-5: bad payload")]
    assert body["backlog"]["pending"] == 1 and body["backlog"]["pending_many_attempts"] == 0
    soup = BeautifulSoup(client.get("/outbox").data, "html.parser")
    assert soup.select_one("[data-metric=parked]").get_text(strip=True) == "1"
    assert [tr["data-outbox-id"] for tr in soup.select("#parked tbody tr")] == [bad]
    assert "INC-5: bad payload" in soup.select_one("#parked").get_text()


def test_the_row_page_parks_and_releases_through_its_form(client, conn, poison):
    bad = poison[0]
    page = BeautifulSoup(client.get(f"/outbox/{bad}").data, "html.parser")
    form = page.select_one("form.move")
    assert form["action"] == f"/outbox/{bad}/park"
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    done = client.post(form["action"], data=fields | {"reason": "INC-6: poison"})
    assert done.status_code == 303
    after = BeautifulSoup(client.get(done.headers["Location"]).data, "html.parser")
    assert after.select_one("[data-done]") is not None and after.select_one("[data-parked]") is not None
    assert after.select_one("form.move")["action"] == f"/outbox/{bad}/release"
    # a refusal keeps what was typed: the stale form (it still says park) posted again
    refused = client.post(form["action"], data=fields | {"reason": "typed again"})
    assert refused.status_code == 409
    again = BeautifulSoup(refused.data, "html.parser")
    assert "parked now" in again.select_one("[data-action-error]").get_text()
    assert again.select_one("form.move textarea[name=reason]").get_text() == "typed again"


def test_health_warns_when_a_check_constraint_refuses_parked_and_its_fix_allows_it(client, conn, poison):
    def finding():
        checks = client.get("/api/v1/health/schema").get_json()["items"]
        return next(c for c in checks if c["id"] == "outbox.parked")

    assert finding()["status"] == "ok"
    conn.execute(
        "ALTER TABLE app.outbox_event ADD CONSTRAINT outbox_status_known CHECK (status IN ('pending', 'published'))"
    )
    found = finding()
    assert found["status"] == "warn" and "outbox_status_known" in found["detail"]
    refused = client.post(PARK, json={"outbox_id": poison[0], "reason": "x"})
    assert refused.status_code == 409 and "outbox.parked" in refused.get_json()["error"]
    conn.execute(found["fix_sql"])
    assert finding()["status"] == "ok"
    assert client.post(PARK, json={"outbox_id": poison[0], "reason": "x"}).status_code == 200


def test_an_enum_status_without_parked_is_named_and_the_page_still_reads(client, conn, poison):
    conn.execute("CREATE TYPE app.outbox_status AS ENUM ('pending', 'published')")
    conn.execute(
        "ALTER TABLE app.outbox_event ALTER COLUMN status DROP DEFAULT, "
        "ALTER COLUMN status TYPE app.outbox_status USING status::app.outbox_status, "
        "ALTER COLUMN status SET DEFAULT 'pending'"
    )
    found = next(c for c in client.get("/api/v1/health/schema").get_json()["items"] if c["id"] == "outbox.parked")
    assert found["status"] == "warn" and "app.outbox_status" in found["fix_sql"]
    assert client.get("/outbox").status_code == 200
    assert client.get("/api/v1/outbox").get_json()["parked"] == []
    assert client.post(PARK, json={"outbox_id": poison[0], "reason": "x"}).status_code == 409
    conn.execute(found["fix_sql"])
    assert client.post(PARK, json={"outbox_id": poison[0], "reason": "x"}).status_code == 200
    assert client.get("/api/v1/outbox").get_json()["parked"][0]["outbox_id"] == poison[0]
