"""One outbox lag everywhere: the age of the oldest pending row that is not likely poison (pending with 3 or more
delivery attempts, the definition /outbox uses), the likely poison rows counted apart with their own oldest age.
The overview, /outbox, /databases, their JSON and /metrics say the same, against the database's own ground truth."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bs4 import BeautifulSoup

from idemdash.core.formatting import duration
from idemdash.queries import Tables
from idemdash.queries.snapshots import take_snapshot
from tests.test_fleet_views import write_toml
from tests.test_metrics import scrape
from tests.test_outbox import Event, insert_events, now_of

T = Tables()
POISON_TYPE = "legacy.unroutable"


@pytest.fixture
def mixed_outbox(conn):
    """120 likely poison rows of one event type, 2 to 3 days old, among healthy pending rows up to 40 s old (some
    with 1 or 2 failed attempts), published rows and one old row of a healthy type that failed twice."""
    now = now_of(conn)
    events = [
        Event(POISON_TYPE, "pending", now - timedelta(days=3) + timedelta(minutes=i), attempt_count=3 + i % 50)
        for i in range(120)
    ]
    events += [
        Event("order.created", "pending", now - timedelta(seconds=40 - i), attempt_count=i % 3) for i in range(30)
    ]
    events += [
        Event("order.created", "published", now - timedelta(days=4), published_at=now - timedelta(days=4))
        for _ in range(5)
    ]
    insert_events(conn, events)
    return now


def truth(conn) -> tuple[float, int, float]:
    """The lag, the likely poison count and the oldest poison row's age, straight from the table."""
    return conn.execute(
        """SELECT extract(epoch FROM now() - min(created_at) FILTER (WHERE attempt_count < 3))::float8,
                  count(*) FILTER (WHERE attempt_count >= 3),
                  extract(epoch FROM now() - min(created_at) FILTER (WHERE attempt_count >= 3))::float8
           FROM app.outbox_event WHERE status = 'pending'"""
    ).fetchone()


@pytest.mark.system
def test_the_lag_leaves_poison_out_and_is_the_same_on_every_page(make_app, conn, database_url, tmp_path, mixed_outbox):
    lag, poison, poison_age = truth(conn)
    assert 40 <= lag < 60 and poison == 120 and poison_age > 2.9 * 86400
    config = write_toml(tmp_path / "one.toml", f'[databases.orders]\nurl = "{database_url}"\n')
    app = make_app(CONFIG=config, FLEET_REFRESH_SECONDS=3600)
    app.extensions["idemdash_overview"].ask_all_now()
    client = app.test_client()
    close = pytest.approx(lag, abs=30)  # the seconds the requests take; the poison rows are 3 days older

    overview = client.get("/api/v1/db/orders/overview").get_json()["outbox"]
    assert overview["lag_seconds"] == close
    assert overview["poison"] == 120 and overview["poison_oldest_seconds"] == pytest.approx(poison_age, abs=30)
    assert overview["pending"] == 150

    backlog = client.get("/api/v1/db/orders/outbox").get_json()["backlog"]
    assert backlog["lag_seconds"] == close and backlog["healthy_lag_seconds"] == close
    assert backlog["pending_many_attempts"] == 120
    assert backlog["poison_oldest_seconds"] == pytest.approx(poison_age, abs=30)

    [item] = client.get("/api/v1/databases").get_json()["items"]
    assert item["outbox_lag_seconds"] == close and "outbox_lag" not in item["attention"]
    assert item["outbox_poison"] == 120
    assert item["outbox_poison_oldest_seconds"] == pytest.approx(poison_age, abs=30)

    samples = scrape(client, "orders")
    assert samples[("idemdash_outbox_lag_seconds", (("profile", "reference"),))] == close
    assert samples[("idemdash_outbox_poison", (("profile", "reference"),))] == 120
    assert samples[("idemdash_outbox_poison_oldest_seconds", (("profile", "reference"),))] == pytest.approx(
        poison_age, abs=30
    )

    # the pages: the lag reads the same on each (a duration of some 40 s, never days), the poison beside it
    shown = {duration(lag), duration(lag + 1), duration(lag + 2)}
    page = BeautifulSoup(client.get("/db/orders/").data, "html.parser")
    assert page.select_one('[data-metric="outbox_lag"]').get_text(strip=True) in shown
    assert page.select_one('[data-metric="outbox_poison"]').get_text(strip=True) == "120"
    page = BeautifulSoup(client.get("/db/orders/outbox").data, "html.parser")
    assert page.select_one('[data-metric="lag"]').get_text(strip=True) in shown
    page = BeautifulSoup(client.get("/databases").data, "html.parser")
    cell = page.select_one('[data-database="orders"] [data-col="outbox_lag"]')
    assert cell.contents[0].strip() in shown
    assert cell.select_one('[data-col="outbox_poison"]')["data-value"] == "120"


def test_the_snapshot_trend_records_the_lag_without_poison(conn, mixed_outbox):
    from idemdash.core import settings

    lag, _, _ = truth(conn)
    snapshot = take_snapshot(conn, T, settings.load({}), interval_seconds=60)
    assert snapshot is not None and snapshot.outbox_lag_seconds == pytest.approx(lag, abs=30)
    assert snapshot.outbox_pending == 150
