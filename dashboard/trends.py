"""The overview's trend charts: the metric snapshots of a time range laid out as small SVG line charts with axes,
a value on hover for every point, markers where an operator acted or a purge ran, and the same values as a table
for screen readers and the curious. Rates (claims, completions and failures per minute) come first: after a deploy
they move before the levels do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from idemdash.core.formatting import duration, utc
from idemdash.dashboard import partials, trend_marks
from idemdash.queries import snapshots

# the ranges a person can pick, in hours; the overview shows 24 h unless asked
RANGES = {"1h": 1, "6h": 6, "24h": 24, "7d": 168}
DEFAULT_RANGE = "24h"
MAX_POINTS = 240  # more snapshots than this are merged into buckets (peaks kept)
TABLE_ROWS = 24  # rows of the values table under each chart (buckets merged further)

# the SVG's coordinate system: the plot area, with room on the left for the value axis and a strip at the top for
# the markers (templates/overview.html draws the axes at these numbers)
WIDTH, HEIGHT = 300, 70
LEFT, RIGHT, TOP, BOTTOM = 34, 296, 14, 66


@dataclass(frozen=True)
class Point:
    start: datetime
    end: datetime
    value: float
    x: float
    y: float
    band_x: float  # the hover band of this point: from band_x, band_w wide
    band_w: float


@dataclass(frozen=True)
class Chart:
    """One trend line, laid out for an SVG of viewBox 0 0 WIDTH HEIGHT, zero at the bottom of the plot area."""

    key: str
    title: str
    unit: str  # 'count', 'seconds', 'rows' or 'per_minute'
    means: str
    points: list[Point]  # a rate's points leave out the snapshots that did not count it
    polyline: str  # the polyline's "x,y x,y ..." attribute
    latest: float
    peak: float
    low: float
    total: float
    table: list[Point]  # at most TABLE_ROWS rows: the peak (or, for rows, the sum) of consecutive points
    marks: list[trend_marks.Mark]

    def say(self, value: float) -> str:
        """A value of this chart as the page writes it."""
        if self.unit == "seconds":
            return duration(value)
        if self.unit == "per_minute":
            return per_minute(value)
        return f"{int(value):,}"

    # A chart's points, one element each, written here rather than by a loop in templates/overview.html: each point's
    # few values went through a filter, a call and an escape apiece, and the two loops were a fifth of `/`'s work at
    # four snapshots (240 points a chart at a day of them). The markup is the loops' own, character for character.

    @property
    def hover_bands(self) -> Markup:
        """The hover band of each point: when, and the value then."""
        return Markup(
            "".join(
                f'<rect x="{p.band_x}" y="12" width="{p.band_w}" height="58"><title>{utc(p.start, "%m-%d %H:%M")}'
                f"{'–' + utc(p.end, '%H:%M') if p.end != p.start else ''}: {escape(self.say(p.value))}</title></rect>"
                for p in self.points
            )
        )

    @property
    def value_rows(self) -> Markup:
        """The values table's rows: from when, and the peak (or the sum) of the points merged into the row."""
        return Markup(
            "".join(
                f'<tr><td>{partials.short(p.start)}</td><td class="num">{escape(self.say(p.value))}</td></tr>'
                for p in self.table
            )
        )

    @property
    def description(self) -> str:
        """The chart in words (its SVG's desc, what a screen reader says): 6 % of `/` as template filters."""
        text = (
            f"{self.count} points from {utc(self.start, '%Y-%m-%d %H:%M')} to {utc(self.end, '%Y-%m-%d %H:%M')}: "
            f"latest {self.say(self.latest)}, lowest {self.say(self.low)}, peak {self.say(self.peak)}."
        )
        if self.marks:
            marked = sum(len(m.events) for m in self.marks)
            text += f" Marked: {marked} operator actions and purges, listed under the charts."
        return text

    @property
    def count(self) -> int:
        return len(self.points)

    @property
    def start(self) -> datetime:
        return self.points[0].start

    @property
    def end(self) -> datetime:
        return self.points[-1].end


def per_minute(value: float) -> str:
    """A rate per minute: one decimal under 10 (0.4/min), whole numbers above (1,240/min)."""
    if value == 0:
        return "0/min"
    return f"{value:,.1f}/min" if value < 10 else f"{round(value):,}/min"


def _layout(trend: list[snapshots.TrendPoint], values: list[float], start: datetime, end: datetime) -> list[Point]:
    span = (end - start).total_seconds()
    peak = max(values)
    width, height = RIGHT - LEFT, BOTTOM - TOP
    xs = [LEFT + (width * (p.taken_at - start).total_seconds() / span if span > 0 else width) for p in trend]
    points = []
    for i, (p, v) in enumerate(zip(trend, values, strict=True)):
        # each point's hover band reaches halfway to its neighbours
        left = LEFT if i == 0 else (xs[i - 1] + xs[i]) / 2
        right = RIGHT if i == len(xs) - 1 else (xs[i] + xs[i + 1]) / 2
        y = TOP + height - (height * v / peak if peak > 0 else 0)
        points.append(
            Point(
                p.taken_at, p.until, v, round(xs[i], 1), round(y, 1), round(left, 2), round(max(right - left, 0.5), 2)
            )
        )
    return points


def _table(points: list[Point], summed: bool) -> list[Point]:
    size = -(-len(points) // TABLE_ROWS)
    rows = []
    for i in range(0, len(points), size):
        group = points[i : i + size]
        value = sum(p.value for p in group) if summed else max(p.value for p in group)
        rows.append(Point(group[0].start, group[-1].end, value, 0, 0, 0, 0))
    return rows


def chart(
    key: str,
    title: str,
    unit: str,
    means: str,
    trend: list[snapshots.TrendPoint],
    value: Callable[[snapshots.TrendPoint], float | None],
    marks: list[trend_marks.Mark],
) -> Chart:
    """One chart of ``trend``; ``marks`` are the events laid out over the whole trend's time axis (every chart
    shares it, so they are laid out once per page)."""
    start, end = trend[0].taken_at, trend[-1].until
    if unit == "per_minute":
        # a rate not counted (snapshots from before it was recorded) is left out, never drawn as zero
        trend = [p for p in trend if value(p) is not None]
        if not trend:
            return Chart(key, title, unit, means, [], "", 0, 0, 0, 0, [], marks)
    values = [float(value(p) or 0) for p in trend]
    points = _layout(trend, values, start, end)
    return Chart(
        key,
        title,
        unit,
        means,
        points,
        " ".join(f"{p.x:g},{p.y:g}" for p in points),
        values[-1],
        max(values),
        min(values),
        sum(values),
        _table(points, summed=unit == "rows"),
        marks,
    )


def charts(trend: list[snapshots.TrendPoint], found: list[trend_marks.Event] | None = None) -> list[Chart]:
    if len(trend) < 2:
        return []
    marks = trend_marks.layout(found or [], trend[0].taken_at, trend[-1].until, LEFT, RIGHT)
    return [
        chart(
            "claims_per_minute",
            "Claims",
            "per_minute",
            "Keys claimed per minute: each key whose claimed_at falls between two snapshots (a key claimed twice "
            "between them counts once).",
            trend,
            lambda p: p.claims_per_minute,
            marks,
        ),
        chart(
            "completions_per_minute",
            "Completions",
            "per_minute",
            "Keys that became succeeded per minute, by updated_at; an operator's already_succeeded left out.",
            trend,
            lambda p: p.completions_per_minute,
            marks,
        ),
        chart(
            "failures_per_minute",
            "Failures",
            "per_minute",
            "Keys that became failed_retryable or failed_final per minute, by updated_at; an operator's "
            "reclassification left out.",
            trend,
            lambda p: p.failures_per_minute,
            marks,
        ),
        chart("stuck_keys", "Stuck keys", "count", "Peak stuck keys per point.", trend, lambda p: p.stuck_keys, marks),
        chart(
            "outbox_pending",
            "Outbox backlog",
            "count",
            "Pending outbox rows (peak per point).",
            trend,
            lambda p: p.outbox_pending,
            marks,
        ),
        chart(
            "outbox_lag_seconds",
            "Outbox lag",
            "seconds",
            "Age of the oldest pending row that is not likely poison (peak per point).",
            trend,
            lambda p: p.outbox_lag_seconds,
            marks,
        ),
        chart(
            "rows_purged",
            "Rows purged",
            "rows",
            "Rows deleted by purges between snapshots.",
            trend,
            lambda p: p.rows_purged,
            marks,
        ),
    ]
