"""`/` and `GET /api/v1/overview`: the headline numbers an on-call engineer sees first."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Callable

from flask import Blueprint, jsonify

from dashboard import panels, rollups
from dashboard.db import get_target
from dashboard.web import render
from queries import overview as q
from queries import snapshots as qs

bp = Blueprint("overview", __name__)

TREND_HOURS = 24
TREND_MAX_POINTS = 240     # more snapshots than this are merged into buckets (peaks kept)
SPARK_WIDTH, SPARK_HEIGHT, SPARK_PAD = 300, 60, 4


@dataclass(frozen=True)
class Sparkline:
    """One trend line, laid out for a small inline SVG (viewBox 0 0 SPARK_WIDTH SPARK_HEIGHT, zero at the bottom)."""

    key: str
    title: str
    unit: str                  # 'count', 'seconds' or 'rows'
    means: str
    points: str                # the polyline's "x,y x,y ..." attribute
    count: int
    latest: float
    peak: float
    total: float
    last_x: float
    last_y: float


def sparkline(key: str, title: str, unit: str, means: str, trend: list[qs.TrendPoint],
              value: Callable[[qs.TrendPoint], float | None]) -> Sparkline:
    values = [float(value(p) or 0) for p in trend]
    start, end = trend[0].taken_at, trend[-1].taken_at
    span = (end - start).total_seconds()
    peak = max(values)
    inner_w, inner_h = SPARK_WIDTH - 2 * SPARK_PAD, SPARK_HEIGHT - 2 * SPARK_PAD
    coords = []
    for point, v in zip(trend, values):
        x = SPARK_PAD + (inner_w * (point.taken_at - start).total_seconds() / span if span > 0 else inner_w)
        y = SPARK_PAD + inner_h - (inner_h * v / peak if peak > 0 else 0)
        coords.append((round(x, 1), round(y, 1)))
    return Sparkline(key, title, unit, means, " ".join(f"{x:g},{y:g}" for x, y in coords), len(coords), values[-1],
                     peak, sum(values), coords[-1][0], coords[-1][1])


def trend_lines(trend: list[qs.TrendPoint]) -> list[Sparkline]:
    if len(trend) < 2:
        return []
    return [
        sparkline("stuck_keys", "Stuck keys", "count", "Peak stuck keys per point.", trend, lambda p: p.stuck_keys),
        sparkline("outbox_pending", "Outbox backlog", "count", "Pending outbox rows (peak per point).", trend,
                  lambda p: p.outbox_pending),
        sparkline("outbox_lag_seconds", "Outbox lag", "seconds", "Age of the oldest pending row (peak per point).",
                  trend, lambda p: p.outbox_lag_seconds),
        sparkline("rows_purged", "Rows purged", "rows", "Rows deleted by purges between snapshots.", trend,
                  lambda p: p.rows_purged),
    ]


def _key_counts(live: panels.Panel, window: panels.Panel) -> panels.Panel:
    """Stuck and processing read now; the counts by status and window possibly precomputed (dashboard/rollups.py)."""
    if not live.ok:
        return live
    if not window.ok:
        return window
    return panels.Panel(value=q.KeyCounts.combine(live.value, window.value), computed_at=window.computed_at,
                        computed_ms=window.computed_ms)


def _overview() -> dict:
    tables = get_target().tables
    lease = get_target().settings["DEFAULT_LEASE_SECONDS"]
    window, inbox = rollups.load(("key_windows", ""), ("inbox_volume", ""))
    return {
        "as_of": datetime.now(timezone.utc),
        "keys": _key_counts(panels.load(q.count_processing_keys, tables, lease, index="index_keys_processing"),
                            window),
        "outbox": panels.load(q.get_outbox_backlog, tables, index="index_outbox_pending"),
        "inbox": inbox,
        "last_purges": panels.load(q.list_recent_purge_runs),
        "trend": panels.load(qs.list_snapshot_trend, hours=TREND_HOURS, max_points=TREND_MAX_POINTS),
        "trend_hours": TREND_HOURS,
        "lease_seconds": lease,
    }


@bp.get("/")
def page():
    data = _overview()
    return render("overview.html", "overview_panel", **data, trends=trend_lines(data["trend"].value or []))


@bp.get("/api/v1/overview")
def api():
    data = _overview()
    return jsonify({
        "as_of": data["as_of"],
        "keys": asdict(panels.require(data["keys"])),
        "outbox": asdict(panels.require(data["outbox"])),
        "inbox": asdict(panels.require(data["inbox"])),
        "last_purges": [asdict(run) for run in panels.require(data["last_purges"])],
        # sections the scheduler precomputed (large tables): when, and how long counting them took
        "precomputed": rollups.precomputed(keys=data["keys"], inbox=data["inbox"]),
        "trends": {
            "window_hours": TREND_HOURS,
            "snapshot_interval_seconds": get_target().settings["SNAPSHOT_INTERVAL_SECONDS"],
            # more snapshots than max_points come merged: 'snapshots' says how many a point stands for
            "max_points": TREND_MAX_POINTS,
            "points": [asdict(p) for p in data["trend"].value or []],
            "problem": data["trend"].to_json() if not data["trend"].ok else None,
        },
        "definitions": {
            "stuck": f"status = 'processing' and locked_until < now(), or locked_until is NULL and "
                     f"claimed_at older than {data['lease_seconds']} s",
            "needs_review": "status = 'processing' and claimed_by = 'idemdash:needs_review': held for review by an "
                            "operator (a hold that ended is counted in stuck too)",
            "failed_final_24h": "status = 'failed_final' and updated_at within the last 24 hours",
            "succeeded_24h": "status = 'succeeded' and updated_at within the last 24 hours",
            "outbox.pending": "outbox rows with status = 'pending'; lag is the age of the oldest",
            "inbox.rows_24h": "inbox rows with processed_at within the last 24 hours",
            "trends.points": "metric snapshots of the last 24 hours, oldest first, recorded by the scheduler's "
                             "snapshot job; when there are more than max_points, consecutive snapshots are merged "
                             "(stuck_keys, outbox_pending and outbox_lag_seconds: the peak; rows_purged: the sum)",
            "trends.points.rows_purged": "rows deleted by real purge runs that finished since the previous snapshot",
        },
    })
