"""The overview's trend section, kept while what it is drawn from is unchanged.

The section is most of `/`'s work: the range's snapshots read and merged into points, the operators' actions and
purge runs read and laid out as markers, and each chart's line, hover bands, values table and words written (at a
day of snapshots, 240 points a chart). It changes when a snapshot is recorded (every minute while the scheduler
runs), an operator acts or a purge runs; the page asks for it every 10 s in every open tab. So the drawn section is
kept in the worker under what it depends on, and a view that finds the same reads one statement instead
(``get_trend_version``: the range's snapshot count and the newest, the newest audit entry, the purge runs' newest,
newest finish and the running ones' progress; a few index reads). The points and markers it is drawn from are kept
under the same version, for the JSON API's trends (``read``) and for a view whose links differ.

What else the section depends on is in the key too: the database, where the app is mounted and which database the
URL names (the links), the query string (the range links keep it), and the minute, because the range slides with the
clock (a point leaves it, and the "N newest of M" of the list can change with no new row). The times in it are
written as ISO times the browser renders, so a kept section's "2 min ago" is redrawn on the page, not served stale.
A section whose data could not be read whole (a panel that timed out, markers that failed) is not kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from flask import current_app, render_template, request
from markupsafe import Markup

from idemdash.dashboard import page_reads, panels, trend_marks, trends
from idemdash.dashboard.targets import current_database, get_target
from idemdash.queries import snapshots
from idemdash.queries.trend_marks import get_trend_version

# sections kept per app at most (one per database, range and query string alike, per minute; a day's section of
# 240 points a chart is about 200 kB, mostly its hover bands), and as many sets of points and markers
KEPT_MAX = 64


@dataclass
class Section:
    """The trend section of one view: the kept one, or what was read to draw it (``draw`` after the page's reads)."""

    kept: Markup | None
    key: tuple | None
    trend: panels.Panel | None = None
    marks: trend_marks.Found | None = None
    hours: int = 0
    trend_range: str = ""

    def draw(self) -> Markup:
        """The section's HTML: the kept one, or drawn now (and kept when its data was read whole)."""
        if self.kept is not None:
            return self.kept
        assert self.trend is not None and self.marks is not None
        page_reads.finish()  # the section's reads are done: no transaction stays open while it is drawn
        html = Markup(
            render_template(
                "_overview_trends.html",
                trend=self.trend,
                marks=self.marks,
                charts=trends.charts(self.trend.value or [], self.marks.events),
                trend_hours=self.hours,
                trend_range=self.trend_range,
                trend_ranges=trends.RANGES,
                max_marks=trend_marks.MAX_EACH,
            )
        )
        if self.key is not None and self.trend.ok and self.marks.problem is None:
            kept = _kept()
            if len(kept) >= KEPT_MAX:
                kept.clear()  # ranges and query strings typed by hand: start over now and then
            kept[self.key] = html
        return html


def load(hours: int, trend_range: str) -> Section:
    """The section kept for this view, or the trend and markers to draw it with (kept ones, or read now)."""
    version = _version(hours)
    key = None
    if version is not None:
        key = (*version, request.script_root, current_database(), request.query_string)
        kept = _kept().get(key)
        if kept is not None:
            return Section(kept, key)
    trend, marks = _data(hours, version)
    return Section(None, key, trend, marks, hours, trend_range)


def read(hours: int) -> tuple[panels.Panel, trend_marks.Found]:
    """The trend points and the markers of the range, for the JSON API: kept ones while unchanged, else read now."""
    return _data(hours, _version(hours))


def _version(hours: int) -> tuple | None:
    """What the section's data is in brief: the database, the range, the minute and the version statement's answer;
    None when that could not be read (nothing is kept then)."""
    version = panels.load(get_trend_version, hours=hours)
    if not version.ok or version.value is None:
        return None
    return (get_target().name, hours, int(time.time() // 60), version.value)


def _data(hours: int, version: tuple | None) -> tuple[panels.Panel, trend_marks.Found]:
    kept = _kept_data().get(version) if version is not None else None
    if kept is not None:
        return kept
    trend = panels.load(snapshots.list_snapshot_trend, hours=hours, max_points=trends.MAX_POINTS)
    marks = trend_marks.load(hours)
    if version is not None and trend.ok and marks.problem is None:
        data = _kept_data()
        if len(data) >= KEPT_MAX:
            data.clear()
        data[version] = (trend, marks)
    return trend, marks


def _kept() -> dict[tuple, Markup]:
    """This app's kept sections (per app, as its databases are)."""
    return current_app.extensions.setdefault("idemdash_trend_sections", {})


def _kept_data() -> dict[tuple, tuple[panels.Panel, trend_marks.Found]]:
    """This app's kept trend points and markers, which the section and the JSON API are written from."""
    return current_app.extensions.setdefault("idemdash_trend_data", {})
