"""The overview's trend charts: the metric snapshots of a time range laid out as small SVG line charts with axes,
a value on hover for every point, and the same values as a table for screen readers and the curious."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from idemdash.queries import snapshots

# the ranges a person can pick, in hours; the overview shows 24 h unless asked
RANGES = {"1h": 1, "6h": 6, "24h": 24, "7d": 168}
DEFAULT_RANGE = "24h"
MAX_POINTS = 240            # more snapshots than this are merged into buckets (peaks kept)
TABLE_ROWS = 24             # rows of the values table under each chart (buckets merged further)

# the SVG's coordinate system: the plot area, with room on the left for the value axis
WIDTH, HEIGHT = 300, 60
LEFT, RIGHT, TOP, BOTTOM = 34, 296, 4, 56


@dataclass(frozen=True)
class Point:
    start: datetime
    end: datetime
    value: float
    x: float
    y: float
    band_x: float           # the hover band of this point: from band_x, band_w wide
    band_w: float


@dataclass(frozen=True)
class Chart:
    """One trend line, laid out for an SVG of viewBox 0 0 WIDTH HEIGHT, zero at the bottom of the plot area."""

    key: str
    title: str
    unit: str                  # 'count', 'seconds' or 'rows'
    means: str
    points: list[Point]
    polyline: str              # the polyline's "x,y x,y ..." attribute
    latest: float
    peak: float
    low: float
    total: float
    table: list[Point]         # at most TABLE_ROWS rows: the peak (or, for rows, the sum) of consecutive points

    @property
    def count(self) -> int:
        return len(self.points)

    @property
    def start(self) -> datetime:
        return self.points[0].start

    @property
    def end(self) -> datetime:
        return self.points[-1].end


def _layout(trend: list[snapshots.TrendPoint], values: list[float]) -> list[Point]:
    start, end = trend[0].taken_at, trend[-1].until
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
        points.append(Point(p.taken_at, p.until, v, round(xs[i], 1), round(y, 1), round(left, 2),
                            round(max(right - left, 0.5), 2)))
    return points


def _table(points: list[Point], summed: bool) -> list[Point]:
    size = -(-len(points) // TABLE_ROWS)
    rows = []
    for i in range(0, len(points), size):
        group = points[i:i + size]
        value = sum(p.value for p in group) if summed else max(p.value for p in group)
        rows.append(Point(group[0].start, group[-1].end, value, 0, 0, 0, 0))
    return rows


def chart(key: str, title: str, unit: str, means: str, trend: list[snapshots.TrendPoint],
          value: Callable[[snapshots.TrendPoint], float | None]) -> Chart:
    values = [float(value(p) or 0) for p in trend]
    points = _layout(trend, values)
    return Chart(key, title, unit, means, points, " ".join(f"{p.x:g},{p.y:g}" for p in points), values[-1],
                 max(values), min(values), sum(values), _table(points, summed=unit == "rows"))


def charts(trend: list[snapshots.TrendPoint]) -> list[Chart]:
    if len(trend) < 2:
        return []
    return [
        chart("stuck_keys", "Stuck keys", "count", "Peak stuck keys per point.", trend, lambda p: p.stuck_keys),
        chart("outbox_pending", "Outbox backlog", "count", "Pending outbox rows (peak per point).", trend,
              lambda p: p.outbox_pending),
        chart("outbox_lag_seconds", "Outbox lag", "seconds", "Age of the oldest pending row (peak per point).",
              trend, lambda p: p.outbox_lag_seconds),
        chart("rows_purged", "Rows purged", "rows", "Rows deleted by purges between snapshots.", trend,
              lambda p: p.rows_purged),
    ]
