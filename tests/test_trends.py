"""The overview's trends: a range of 1 h, 6 h, 24 h or 7 d, axes with the peak and the start and end times, a value
on hover for every point, and the values as a table."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from types import SimpleNamespace

import jinja2
import pytest
from bs4 import BeautifulSoup

from idemdash.core.formatting import utc
from idemdash.dashboard import partials, trends
from tests.test_snapshots import add_snapshot


@pytest.fixture
def history(conn):
    # one snapshot 3 days ago, one 5 hours ago, four in the last hour
    add_snapshot(conn, "3 days", stuck=70)
    add_snapshot(conn, "5 hours", stuck=50, purged=100)
    for minutes, stuck in ((50, 4), (30, 9), (20, 2), (5, 6)):
        add_snapshot(conn, f"{minutes} minutes", stuck=stuck, purged=10)


@pytest.mark.system
@pytest.mark.parametrize("range_, points", [("1h", 4), ("6h", 5), ("24h", 5), ("7d", 6)])
def test_the_range_picks_the_snapshots(client, history, range_, points):
    body = client.get(f"/api/v1/overview?range={range_}").get_json()["trends"]
    assert (body["range"], body["window_hours"], len(body["points"])) == (range_, trends.RANGES[range_], points)
    soup = BeautifulSoup(client.get(f"/?range={range_}").data, "html.parser")
    line = soup.select_one("#trend-stuck_keys polyline")
    assert int(line["data-points"]) == points
    assert soup.select_one("nav.range a[aria-current]").get_text() == range_
    assert [a["href"] for a in soup.select("nav.range a")] == [f"/?range={r}" for r in trends.RANGES]
    # the refresh keeps the range
    assert soup.select_one("#overview")["hx-get"] == f"/?range={range_}"


def test_a_chart_has_axes_hover_values_and_a_table(client, history):
    soup = BeautifulSoup(client.get("/?range=1h").data, "html.parser")
    figure = soup.select_one("#trend-stuck_keys")
    labels = [t.get_text() for t in figure.select("svg text.axis-label")]
    assert labels == ["9", "0"]  # peak at the top, zero at the bottom
    hover = [t.get_text() for t in figure.select("svg .spark-hover rect title")]
    assert len(hover) == 4 and [h.rsplit(": ", 1)[1] for h in hover] == ["4", "9", "2", "6"]
    start, end = [t["datetime"] for t in figure.select(".spark-times time")]
    assert datetime.fromisoformat(start) < datetime.fromisoformat(end)
    desc = figure.select_one("svg desc").get_text()
    assert "4 points" in desc and "latest 6" in desc and "lowest 2" in desc and "peak 9" in desc
    svg = figure.select_one("svg")
    assert svg["role"] == "img" and set(svg["aria-labelledby"].split()) == {
        "trend-stuck_keys-title",
        "trend-stuck_keys-desc",
    }
    values = [td.get_text() for td in figure.select("table.values tbody td.num")]
    assert values == ["4", "9", "2", "6"]
    purged = soup.select_one("#trend-rows_purged table.values")
    assert "Sum" in purged.select_one("thead").get_text()


def test_many_points_make_a_table_of_at_most_24_rows_with_peaks_and_sums(client, conn):
    conn.execute("""INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h, rows_purged)
                    SELECT now() - g * interval '1 minute', CASE WHEN g = 100 THEN 500 ELSE g % 3 END, 0, 0, 0, 0,
                           NULL, 0, 1
                    FROM generate_series(1, 300) g""")
    soup = BeautifulSoup(client.get("/?range=6h").data, "html.parser")
    stuck = [int(td.get_text()) for td in soup.select("#trend-stuck_keys table.values td.num")]
    assert len(stuck) <= trends.TABLE_ROWS and max(stuck) == 500
    purged = [int(td.get_text()) for td in soup.select("#trend-rows_purged table.values td.num")]
    assert sum(purged) == 300


def test_a_range_that_is_not_offered_is_a_400(client):
    for path in ("/?range=2h", "/api/v1/overview?range=forever"):
        response = client.get(path)
        text = response.get_data(as_text=True)
        assert response.status_code == 400 and "range must be one of" in text, text
        assert all(choice in text for choice in trends.RANGES), text


# what templates/overview.html wrote a chart's points and description with, before Chart.hover_bands, value_rows and
# description did
POINT_LOOPS = (
    '{% for p in t.points %}<rect x="{{ p.band_x }}" y="12" width="{{ p.band_w }}" height="58"><title>'
    "{{ p.start | utc('%m-%d %H:%M') }}{% if p.end != p.start %}–{{ p.end | utc('%H:%M') }}{% endif %}: "
    "{{ t.say(p.value) }}</title></rect>{% endfor %}|"
    '{% for p in t.table %}<tr><td>{{ short(p.start) }}</td><td class="num">{{ t.say(p.value) }}</td></tr>'
    "{% endfor %}|"
    "{{ t.count }} points from {{ t.start | utc('%Y-%m-%d %H:%M') }} to {{ t.end | utc('%Y-%m-%d %H:%M') }}: latest "
    "{{ t.say(t.latest) }}, lowest {{ t.say(t.low) }}, peak {{ t.say(t.peak) }}.{% if t.marks %} Marked: "
    "{{ t.marks | map(attribute='events') | map('length') | sum }} operator actions and purges, listed under the "
    "charts.{% endif %}"
)


@pytest.mark.parametrize("unit", ["count", "seconds", "per_minute", "rows"])
def test_a_charts_points_and_words_are_written_as_the_template_wrote_them(unit):
    env = jinja2.Environment(autoescape=True)
    env.filters["utc"] = utc
    env.globals["short"] = partials.short
    start = datetime.fromisoformat("2026-11-27T10:00:00+00:00")
    # 60 points, merged into fewer table rows; the last ten merged snapshots of their own (their end after their start)
    trend = [
        SimpleNamespace(taken_at=start.replace(minute=i), until=start.replace(minute=i, second=40 if i >= 50 else 0))
        for i in range(60)
    ]
    values = {id(p): float(i * 37 % 1000) + 0.25 for i, p in enumerate(trend)}
    chart = trends.chart("k", "K", unit, "", trend, lambda p: values[id(p)], [])  # type: ignore[arg-type]
    assert len(chart.table) < len(chart.points) and any(p.end != p.start for p in chart.points)
    bands, rows, description = env.from_string(POINT_LOOPS).render(t=chart).split("|")
    assert str(chart.hover_bands) == bands
    assert str(chart.value_rows) == rows
    assert chart.description == description
    marked = dataclasses.replace(chart, marks=[SimpleNamespace(events=[1, 2]), SimpleNamespace(events=[3])])
    assert marked.description == env.from_string(POINT_LOOPS).render(t=marked).split("|")[2]
    assert marked.description.endswith("Marked: 3 operator actions and purges, listed under the charts.")
