"""The overview's trend section is kept while what it is drawn from is unchanged (dashboard/trend_section.py): a view
that finds it unchanged reads no trend and no markers, and each change it is drawn from shows on the next view."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard import trend_marks
from idemdash.queries import snapshots
from tests.test_snapshots import add_finished_run, add_snapshot


def section(client, path: str = "/?range=6h") -> BeautifulSoup:
    page = client.get(path)
    assert page.status_code == 200
    found = BeautifulSoup(page.data, "html.parser").select_one("section.trends")
    assert found is not None
    return found


def stuck_points(trends: BeautifulSoup) -> int:
    return int(trends.select_one("#trend-stuck_keys polyline")["data-points"])


def listed(trends: BeautifulSoup) -> list[str]:
    return [li.get_text(" ", strip=True) for li in trends.select("#trend-events li")]


def audit(conn, key: str, ago: str = "10 minutes") -> None:
    conn.execute(
        """INSERT INTO idemdash.audit_log (at, actor, action, scope, key, from_status, to_status, reason)
           VALUES (now() - %s::interval, 'alice', 'reclassify:abandoned', 'refund', %s, 'processing', 'failed_final',
                   'INC-7')""",
        (ago, key),
    )


@pytest.fixture
def unread(monkeypatch):
    """Makes reading the trend or the markers fail the test (call it once the section is kept)."""

    def refuse():
        def read(*args, **kwargs):
            raise AssertionError("read again although nothing it is drawn from changed")

        monkeypatch.setattr(snapshots, "list_snapshot_trend", read)
        monkeypatch.setattr(trend_marks, "list_trend_marks", read)

    return refuse


def test_an_unchanged_section_is_served_without_reading_it_again(client, conn, unread):
    for ago in ("3 hours", "2 hours", "1 hour"):
        add_snapshot(conn, ago, stuck=2)
    audit(conn, "r1")
    first = section(client)
    unread()
    again = section(client)
    assert str(again) == str(first) and stuck_points(again) == 3 and len(listed(again)) == 1
    # the JSON API's trends are written from the same kept points and markers
    trends = client.get("/api/v1/overview?range=6h").get_json()["trends"]
    assert len(trends["points"]) == 3 and [m["what"] for m in trends["markers"]] == [
        "alice reclassified refund r1 as abandoned"
    ]
    # and a view whose links differ (another mount) draws its own section from them
    page = client.get("/?range=6h", base_url="http://localhost/mounted")
    mounted = BeautifulSoup(page.data, "html.parser").select_one("section.trends")
    assert stuck_points(mounted) == 3 and mounted.select_one("nav.range a")["href"].startswith("/mounted/")


def test_each_change_it_is_drawn_from_shows_on_the_next_view(client, conn, monkeypatch):
    for ago in ("3 hours", "1 hour"):
        add_snapshot(conn, ago, stuck=2)
    assert stuck_points(section(client)) == 2
    add_snapshot(conn, "1 minute", stuck=5)  # the scheduler's next snapshot
    assert stuck_points(section(client)) == 3
    add_snapshot(conn, "2 hours", stuck=9)  # one back-dated into the range: not the newest, but counted
    trends = section(client)
    assert stuck_points(trends) == 4 and trends.select_one("#trend-stuck_keys .spark-now").text == "5"
    audit(conn, "r1")  # an operator acts
    assert any("refund r1" in line for line in listed(section(client)))
    add_finished_run(conn, 300, ago="5 minutes")  # a purge finishes
    assert any("300 rows deleted" in line for line in listed(section(client)))
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, rows_deleted, dry_run, outcome, started_by)
                    VALUES ('keys', now() - interval '1 minute', 1000, false, 'running', 'scheduler')""")
    assert any("1,000 rows deleted" in line for line in listed(section(client)))
    conn.execute("UPDATE idemdash.purge_run SET rows_deleted = 2000 WHERE outcome = 'running'")  # it goes on
    assert any("2,000 rows deleted" in line for line in listed(section(client)))
    markers = client.get("/api/v1/overview?range=6h").get_json()["trends"]["markers"]
    assert any("2,000 rows deleted" in m["what"] for m in markers)  # the API's markers too
    # the range is in the key: another range is drawn for itself
    assert section(client, "/?range=1h").select_one("nav.range a[aria-current]").text == "1h"


def test_one_databases_section_is_not_another_databases(make_app, database_url, shared_database_url, conn, tmp_path):
    add_snapshot(conn, "2 hours", stuck=4242)
    add_snapshot(conn, "1 hour", stuck=4242)
    config = tmp_path / "databases.toml"
    config.write_text(f'[databases.alpha]\nurl = "{database_url}"\n[databases.beta]\nurl = "{shared_database_url}"\n')
    client = make_app(database_url, CONFIG=str(config)).test_client()
    for prefix in ("/db/alpha", "/db/beta", "/db/alpha", "", "/db/beta"):
        trends = section(client, f"{prefix}/?range=6h")
        ranges = [a["href"] for a in trends.select("nav.range a")]
        assert ranges and all(href.startswith(f"{prefix}/?") for href in ranges), (prefix, ranges)
        shows_alpha = trends.select_one("#trend-stuck_keys") is not None and "4,242" in trends.get_text()
        assert shows_alpha == (prefix in ("/db/alpha", "")), prefix


def test_the_version_is_read_from_indexes(conn):
    """Asked on every view: each of its reads has an index (sequential scans priced out, none is left)."""
    from idemdash.queries import statement

    conn.execute("SET enable_seqscan = off")
    with conn.cursor() as cur:
        cur.execute(b"EXPLAIN " + statement("get_trend_version").as_bytes(conn), {"hours": 24})
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert "Seq Scan" not in plan, plan
    for index in ("metric_snapshot_pkey", "audit_log_pkey", "purge_run_finished_idx", "purge_run_running_idx"):
        assert index in plan, (index, plan)
