"""Rates on the overview's trends: keys claimed, completed and failed between snapshots, per minute, counted from
what the keys table records (claimed_at, updated_at and status, an operator's decision left out); and the markers
for operators' actions and purge runs, with a hover and a list under the charts that say which."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard.targets import app_settings
from idemdash.jobs import snapshots
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key, fail_key
from idemdash.queries.target import Target
from tests.test_keys import insert_key
from tests.test_snapshots import add_finished_run, add_snapshot

T = Tables()


@pytest.fixture
def app(make_app):
    return make_app()


def snap(app):
    taken = snapshots.run_snapshot(Target.from_settings(app_settings(app)), min_gap_seconds=0)
    assert taken is not None
    return taken


def test_the_snapshot_counts_claims_completions_and_failures_since_the_previous_one(app, conn):
    client = app.test_client()
    insert_key(conn, "capture_payment", "stuck-before", claimed_by="api-3")  # claimed an hour ago: not a claim
    insert_key(conn, "refund", "done-before", status="succeeded", locked_until=None, updated_ago=timedelta(hours=2))
    first = snap(app)
    assert (first.claims, first.completions, first.failures) == (0, 0, 0)

    for i in range(10):
        claim_key(conn, T, "capture_payment", f"k{i}", "h", "api-3")
    for i in range(6):
        complete_key(conn, T, "capture_payment", f"k{i}", None, None, {"ok": i})
    fail_key(conn, T, "capture_payment", "k6", True, "timeout", "upstream timed out")
    fail_key(conn, T, "capture_payment", "k7", False, "declined", "card declined")
    # an operator's decision is not a failure the workers recorded
    decided = client.post(
        "/api/v1/keys/reclassify",
        json={"scope": "capture_payment", "key": "stuck-before", "to": "abandoned", "reason": "INC-1: bad deploy"},
    )
    assert decided.status_code == 200, decided.get_json()
    second = snap(app)
    assert (second.claims, second.completions, second.failures) == (10, 6, 2)
    assert second.interval_seconds == pytest.approx((second.taken_at - first.taken_at).total_seconds())

    # k8 claimed before, completed after the second snapshot: its completion counts once, in the third; a retry of
    # the retryable failure re-claims k6 (a claim), nothing else moved
    complete_key(conn, T, "capture_payment", "k8", None, None, {"ok": 8})
    claim_key(conn, T, "capture_payment", "k6", "h", "api-4")
    third = snap(app)
    assert (third.claims, third.completions, third.failures) == (1, 1, 0)

    points = client.get("/api/v1/overview").get_json()["trends"]["points"]
    assert [(p["claims"], p["completions"], p["failures"]) for p in points] == [(0, 0, 0), (10, 6, 2), (1, 1, 0)]
    for point, taken in zip(points, (first, second, third), strict=True):
        assert point["interval_seconds"] == pytest.approx(taken.interval_seconds)
        assert point["claims_per_minute"] == pytest.approx(taken.claims * 60 / taken.interval_seconds)
        assert point["failures_per_minute"] == pytest.approx(taken.failures * 60 / taken.interval_seconds)

    soup = BeautifulSoup(client.get("/?range=1h").data, "html.parser")
    figure = soup.select_one("#trend-claims_per_minute")
    hover = [t.get_text().rsplit(": ", 1)[1] for t in figure.select(".spark-hover rect title")]
    rate = 10 * 60 / second.interval_seconds
    assert hover[1] == (f"{rate:,.1f}/min" if rate < 10 else f"{round(rate):,}/min")
    assert "per minute" in figure.select_one("svg title").get_text()
    assert "Peak" in figure.select_one("table.values thead").get_text()


def test_a_merged_point_is_its_snapshots_counts_over_their_seconds_and_old_snapshots_are_left_out(client, conn):
    add_snapshot(conn, "50 minutes", stuck=1)  # taken before rates were recorded: no rate, never a zero
    conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h, rows_purged,
                        interval_seconds, claims, completions, failures)
                    VALUES (now() - interval '20 minutes', 0, 0, 0, 0, 0, NULL, 0, 0, 60, 120, 100, 3),
                           (now() - interval '10 minutes', 0, 0, 0, 0, 0, NULL, 0, 0, 30, 30, 30, 0)""")
    points = client.get("/api/v1/overview?range=1h").get_json()["trends"]["points"]
    assert [p["claims_per_minute"] for p in points] == [None, 120.0, 60.0]
    soup = BeautifulSoup(client.get("/?range=1h").data, "html.parser")
    line = soup.select_one("#trend-claims_per_minute polyline")
    assert int(line["data-points"]) == 2  # the uncounted snapshot is not drawn
    assert int(soup.select_one("#trend-stuck_keys polyline")["data-points"]) == 3
    # a chart's merged point: the counts of its snapshots over their seconds, not an average of rates
    from idemdash.queries.snapshots import list_snapshot_trend

    [merged] = list_snapshot_trend(conn, hours=1, max_points=1)
    assert merged.claims == 150 and merged.interval_seconds == 90
    assert merged.claims_per_minute == pytest.approx(100.0) and merged.failures_per_minute == pytest.approx(2.0)


def test_no_rate_recorded_in_the_range_says_so(client, conn):
    add_snapshot(conn, "20 minutes", stuck=1)
    add_snapshot(conn, "10 minutes", stuck=2)
    soup = BeautifulSoup(client.get("/?range=1h").data, "html.parser")
    figure = soup.select_one("#trend-failures_per_minute")
    assert figure.select_one("svg") is None and "Not counted in this range" in figure.get_text()


def test_operators_actions_and_purges_are_marked_with_a_hover_and_listed(client, conn):
    insert_key(conn, "capture_payment", "k1", claimed_by="api-3")
    add_snapshot(conn, "30 minutes", stuck=1)
    decided = client.post(
        "/api/v1/keys/reclassify",
        json={"scope": "capture_payment", "key": "k1", "to": "safe_to_retry", "reason": "INC-2"},
    )
    assert decided.status_code == 200
    assert client.post(
        "/api/v1/keys/notes", json={"scope": "capture_payment", "key": "k1", "text": "a note changes nothing"}
    ).status_code in (200, 201)
    add_finished_run(conn, 4000, ago="15 minutes")  # marked
    add_finished_run(conn, 50, dry_run=True, ago="14 minutes")  # a dry run deleted nothing: not marked
    add_finished_run(conn, 0, ago="13 minutes")  # found nothing due: not marked
    add_finished_run(conn, 0, ago="12 minutes", outcome="failed")  # a failure is marked
    add_snapshot(conn, "0 minutes", stuck=0)

    trends = client.get("/api/v1/overview?range=1h").get_json()["trends"]
    markers = trends["markers"]
    assert [m["kind"] for m in markers] == ["purge", "purge", "action"]
    assert markers[0]["what"] == "purge of inbox: 4,000 rows deleted, started by test" and markers[0]["run_id"]
    assert "(failed)" in markers[1]["what"]
    assert markers[2]["what"] == f"{markers[2]['by']} reclassified capture_payment k1 as safe_to_retry"
    assert markers[2]["audit_id"] and trends["markers_cut"] is False

    soup = BeautifulSoup(client.get("/?range=1h").data, "html.parser")
    for key in ("stuck_keys", "outbox_pending", "rows_purged"):
        figure = soup.select_one(f"#trend-{key}")
        titles = [g.select_one("title").get_text() for g in figure.select("g.mark")]
        # 3 minutes apart on a chart of 30 minutes (262 units): a marker each
        assert len(titles) == 3, titles
        assert any("purge: purge of inbox: 4,000 rows deleted" in t for t in titles)
        assert any("operator action:" in t and "safe_to_retry" in t for t in titles)
        assert [g["data-mark"] for g in figure.select("g.mark")] == ["purge", "purge", "action"]
        assert "Marked: 3 operator actions and purges" in figure.select_one("svg desc").get_text()
    events = soup.select_one("#trend-events")
    assert "1 operator action and 2 purges" in events.select_one("summary").get_text()
    listed = [li.get_text(" ", strip=True) for li in events.select("li")]
    assert len(listed) == 3 and "safe_to_retry" in listed[0] and "4,000 rows" in listed[2]


def test_events_close_together_share_one_marker_that_lists_each(client, conn):
    add_snapshot(conn, "5 hours", stuck=1)
    add_snapshot(conn, "0 minutes", stuck=0)
    for ago in ("61 minutes", "60 minutes"):
        add_finished_run(conn, 10, ago=ago)
    insert_key(conn, "refund", "r1")
    conn.execute("""INSERT INTO idemdash.audit_log (at, actor, action, scope, key, from_status, to_status, reason)
                    VALUES (now() - interval '60 minutes 30 seconds', 'alice', 'reclassify:abandoned', 'refund',
                            'r1', 'processing', 'failed_final', 'INC-3')""")
    soup = BeautifulSoup(client.get("/?range=6h").data, "html.parser")
    [mark] = soup.select("#trend-stuck_keys g.mark")
    assert mark["data-mark"] == "both" and mark["data-events"] == "3"
    lines = mark.select_one("title").get_text().split("\n")
    assert len(lines) == 3 and "alice reclassified refund r1 as abandoned" in lines[1]


def test_an_action_just_after_the_newest_snapshot_is_at_the_right_edge_and_a_later_one_only_listed(client, conn):
    add_snapshot(conn, "30 minutes", stuck=1)
    add_snapshot(conn, "20 minutes", stuck=0)  # the scheduler stopped 20 minutes ago
    for ago, key in (("19 minutes", "soon"), ("5 minutes", "later")):
        conn.execute(
            """INSERT INTO idemdash.audit_log (at, actor, action, scope, key, to_status, reason)
                        VALUES (now() - %s::interval, 'bob', 'reclassify:safe_to_retry', 'refund', %s,
                                'failed_retryable', 'INC-4')""",
            (ago, key),
        )
    soup = BeautifulSoup(client.get("/?range=1h").data, "html.parser")
    [mark] = soup.select("#trend-stuck_keys g.mark")
    assert "refund soon" in mark.select_one("title").get_text()
    assert float(mark.select_one("rect.hit")["x"]) + 5 == 296  # the right edge of the plot
    assert len(soup.select("#trend-events li")) == 2  # both listed under the charts


def test_a_count_that_cannot_finish_leaves_the_rates_out_and_records_the_rest(conn, database_url):
    import psycopg

    from idemdash.core import settings
    from idemdash.queries.snapshots import take_snapshot

    claim_key(conn, T, "refund", "r1", "h", "api-1", lock_seconds=0)
    with psycopg.connect(database_url) as other:
        other.execute("LOCK TABLE idemdash.audit_log IN ACCESS EXCLUSIVE MODE")  # the count's NOT EXISTS waits
        with conn.transaction():
            conn.execute("SET LOCAL lock_timeout = '200ms'")
            taken = take_snapshot(conn, T, settings.load({}), interval_seconds=60)
    assert taken is not None and taken.stuck_keys == 1
    assert (taken.claims, taken.completions, taken.failures, taken.interval_seconds) == (None, None, None, None)
    [(claims, stuck)] = conn.execute("SELECT claims, stuck_keys FROM idemdash.metric_snapshot").fetchall()
    assert (claims, stuck) == (None, 1)
