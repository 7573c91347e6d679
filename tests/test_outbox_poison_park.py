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
    them still pending, in its own short transaction, on its own connection and thread."""

    def __init__(self, url: str, event_type: str = POISON_TYPE) -> None:
        self.url, self.event_type = url, event_type
        self.passes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                conn.execute("UPDATE app.outbox_event SET attempt_count = attempt_count + 1 "
                             "WHERE status = 'pending' AND event_type = %s", (self.event_type,))
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
    events = [Event(POISON_TYPE, "pending", now - timedelta(days=2), attempt_count=2160),
              Event("order.created", "pending", now - timedelta(seconds=5))]
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
