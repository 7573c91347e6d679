"""Parking likely poison outbox rows while the relay keeps retrying them: the park is compare-and-set on what
matters (still pending, still likely poison), not on the attempt count the relay moves on every retry."""

from __future__ import annotations

import threading
from datetime import timedelta

import psycopg
import pytest
from bs4 import BeautifulSoup

from tests.test_outbox import Event, insert_events, now_of
from tests.test_outbox_park import PARK, audit, status_of

POISON_TYPE = "legacy.unroutable"


class Relay:
    """A relay that keeps failing the poison rows of one event type: each pass adds an attempt to every one of
    them still pending (3 or more attempts), in its own short transaction, on its own connection and thread."""

    def __init__(self, url: str, event_type: str = POISON_TYPE) -> None:
        self.url, self.event_type = url, event_type
        self.passes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                conn.execute(
                    "UPDATE app.outbox_event SET attempt_count = attempt_count + 1 "
                    "WHERE status = 'pending' AND event_type = %s AND attempt_count >= 3",
                    (self.event_type,),
                )
                self.passes += 1
                self._stop.wait(0.005)

    def __enter__(self) -> Relay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def wait_passes(self, n: int) -> None:
        start = self.passes
        for _ in range(2000):
            if self.passes >= start + n:
                return
            self._stop.wait(0.005)
        raise AssertionError(f"the relay made {self.passes - start} passes, not {n}")


def attempts_of(conn, outbox_id) -> int:
    return conn.execute("SELECT attempt_count FROM app.outbox_event WHERE outbox_id = %s", (outbox_id,)).fetchone()[0]


@pytest.fixture
def one_poison(conn):
    now = now_of(conn)
    events = [
        Event(POISON_TYPE, "pending", now - timedelta(days=2), attempt_count=2160),
        Event("order.created", "pending", now - timedelta(seconds=5)),
    ]
    insert_events(conn, events)
    return [str(e.outbox_id) for e in events]


def test_a_single_park_succeeds_after_the_relay_moved_the_attempt_count_on(client, conn, database_url, one_poison):
    bad, healthy = one_poison
    seen = attempts_of(conn, bad)  # what the operator's page showed
    with Relay(database_url) as relay:
        relay.wait_passes(2)
    assert attempts_of(conn, bad) >= seen + 2  # "attempt_count is 2162, you saw 2160"
    answer = client.post(PARK, json={"outbox_id": bad, "reason": "INC-7: unroutable", "expected_attempt_count": seen})
    assert answer.status_code == 200, answer.get_json()
    assert status_of(conn, bad) == "parked" and status_of(conn, healthy) == "pending"
    [entry] = audit(conn)
    assert entry["action"] == "outbox-park" and entry["detail"]["outbox_id"] == bad
    # the row page's form sends the count it showed; the relay retries the row before the operator submits
    conn.execute("UPDATE app.outbox_event SET status = 'pending' WHERE outbox_id = %s", (bad,))
    form = BeautifulSoup(client.get(f"/outbox/{bad}").data, "html.parser").select_one("form.move")
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    with Relay(database_url) as relay:
        relay.wait_passes(2)
    done = client.post(form["action"], data=fields | {"reason": "INC-7: again"})
    assert done.status_code == 303 and status_of(conn, bad) == "parked"
    assert int(fields["expected_attempt_count"]) < attempts_of(conn, bad)


BULK = "/api/v1/outbox/park-bulk"


@pytest.fixture
def poison_among_healthy(conn):
    """120 likely poison rows of one event type; healthy pending rows of it (fewer than 3 attempts) and of another
    type; likely poison rows of another type; a published row of the poison type."""
    now = now_of(conn)
    poison = [
        Event(POISON_TYPE, "pending", now - timedelta(days=3) + timedelta(minutes=i), attempt_count=3 + i % 40)
        for i in range(120)
    ]
    healthy = [Event(POISON_TYPE, "pending", now - timedelta(seconds=30), attempt_count=i % 3) for i in range(6)]
    healthy += [Event("order.created", "pending", now - timedelta(seconds=20)) for _ in range(10)]
    other_poison = [Event("invoice.sent", "pending", now - timedelta(days=1), attempt_count=7) for _ in range(4)]
    published = [
        Event(POISON_TYPE, "published", now - timedelta(days=4), attempt_count=5, published_at=now - timedelta(days=4))
    ]
    insert_events(conn, poison + healthy + other_poison + published)
    return {
        name: {str(e.outbox_id) for e in events}
        for name, events in (
            ("poison", poison),
            ("healthy", healthy),
            ("other_poison", other_poison),
            ("published", published),
        )
    }


def statuses(conn, ids) -> dict[str, str]:
    rows = conn.execute(
        "SELECT outbox_id::text, status FROM app.outbox_event WHERE outbox_id = ANY(%s::uuid[])", (list(ids),)
    ).fetchall()
    return dict(rows)


@pytest.mark.system
def test_a_bulk_park_of_an_event_types_poison_parks_all_of_it_while_the_relay_retries_them(
    client, conn, database_url, poison_among_healthy
):
    rows = poison_among_healthy
    with Relay(database_url) as relay:
        relay.wait_passes(3)
        preview = client.post(BULK, json={"preview": True, "filter": {"event_type": POISON_TYPE}})
        assert preview.status_code == 200, preview.get_json()
        shown = preview.get_json()
        assert shown["count"] == 120 and shown["by_event_type"] == [{"event_type": POISON_TYPE, "rows": 120}]
        relay.wait_passes(3)  # the attempt counts move on between the preview and its confirmation
        done = client.post(
            BULK,
            json={
                "filter": {"event_type": POISON_TYPE},
                "as_of": shown["as_of"],
                "previewed": shown["count"],
                "reason": "INC-9: legacy.unroutable has no route",
            },
        )
        assert done.status_code == 200, done.get_json()
        result = done.get_json()
        relay.wait_passes(2)
    assert relay.passes >= 8
    assert result["changed"] == 120 and result["still_eligible"] == 0, result
    assert set(statuses(conn, rows["poison"]).values()) == {"parked"}
    assert set(statuses(conn, rows["healthy"] | rows["other_poison"]).values()) == {"pending"}
    assert set(statuses(conn, rows["published"]).values()) == {"published"}
    entries = audit(conn)
    [parent] = [e for e in entries if e["parent_id"] is None]
    assert parent["audit_id"] == result["audit_id"] and parent["action"] == "outbox-park-bulk"
    assert parent["reason"] == "INC-9: legacy.unroutable has no route" and parent["detail"]["previewed"] == 120
    children = [e for e in entries if e["parent_id"] == parent["audit_id"]]
    assert len(children) == 120 and {c["detail"]["outbox_id"] for c in children} == rows["poison"]
    listed = client.get("/api/v1/audit?action=outbox-park-bulk").get_json()["items"]
    assert [e["audit_id"] for e in listed] == [parent["audit_id"]]
    # and the lag's poison count is down to the other type's
    assert client.get("/api/v1/overview").get_json()["outbox"]["poison"] == 4


def test_a_bulk_confirmation_is_held_to_its_preview(client, conn, poison_among_healthy):
    rows = poison_among_healthy
    shown = client.post(BULK, json={"preview": True, "filter": {"event_type": "invoice.sent"}}).get_json()
    assert shown["count"] == 4
    no_reason = client.post(BULK, json={"filter": {"event_type": "invoice.sent"}, "as_of": shown["as_of"]})
    assert no_reason.status_code == 400 and "reason" in no_reason.get_json()["error"]
    other = client.post(BULK, json={"filter": {"event_type": POISON_TYPE}, "as_of": shown["as_of"], "reason": "x"})
    assert other.status_code == 409 and "showed" in other.get_json()["error"]
    miscounted = client.post(
        BULK, json={"filter": {"event_type": "invoice.sent"}, "as_of": shown["as_of"], "previewed": 5, "reason": "x"}
    )
    assert miscounted.status_code == 409 and "counted 4" in miscounted.get_json()["error"]
    # a row that is no longer poison (reset for another try) and one that became poison after the preview stay
    reset, *_ = sorted(rows["other_poison"])
    conn.execute("UPDATE app.outbox_event SET attempt_count = 0 WHERE outbox_id = %s", (reset,))
    late = Event("invoice.sent", "pending", now_of(conn), attempt_count=3)
    insert_events(conn, [late])
    assert audit(conn) == []
    done = client.post(
        BULK,
        json={"filter": {"event_type": "invoice.sent"}, "as_of": shown["as_of"], "previewed": 4, "reason": "INC-10"},
    ).get_json()
    assert (done["changed"], done["skipped"]) == (3, 1)
    assert statuses(conn, [reset, str(late.outbox_id)]) == {reset: "pending", str(late.outbox_id): "pending"}
    assert set(statuses(conn, rows["poison"] | rows["healthy"]).values()) == {"pending"}
    # released again in bulk: parked → pending, one more audit entry
    back = client.post(BULK, json={"preview": True, "action": "release"}).get_json()
    assert back["count"] == 3
    released = client.post(
        BULK, json={"action": "release", "as_of": back["as_of"], "previewed": 3, "reason": "consumer fixed"}
    ).get_json()
    assert released["changed"] == 3 and "parked" not in statuses(conn, rows["other_poison"]).values()
    assert [e["action"] for e in audit(conn) if e["parent_id"] is None] == ["outbox-park-bulk", "outbox-release-bulk"]


def test_the_poison_lists_bulk_form_previews_then_parks(client, conn, poison_among_healthy):
    page = BeautifulSoup(client.get("/outbox/poison").data, "html.parser")
    form = page.select_one("form#outbox-bulk")
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    previewed = client.post(form["action"], data=fields | {"event_type": "invoice.sent", "action": "park"})
    assert previewed.status_code == 200
    soup = BeautifulSoup(previewed.data, "html.parser")
    assert soup.select_one("[data-bulk-count]").get_text(strip=True) == "4"
    confirm = soup.select_one("form.confirm")
    fields = {i["name"]: i.get("value", "") for i in confirm.select("input[type=hidden]")}
    done = client.post(confirm["action"], data=fields | {"reason": "INC-11"})
    assert done.status_code == 200
    assert BeautifulSoup(done.data, "html.parser").select_one("[data-bulk-changed]").get_text(strip=True) == "4"
    assert set(statuses(conn, poison_among_healthy["other_poison"]).values()) == {"parked"}
    refused = client.post(confirm["action"], data=fields | {"reason": ""})
    assert refused.status_code == 400
