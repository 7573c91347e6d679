"""`/` and `GET /api/v1/overview`: the headline numbers an on-call engineer sees first."""

from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint

from idemdash.dashboard import (
    contract,
    key_breakdown,
    one_model,
    panels,
    profile_overview,
    rollups,
    trend_section,
    trends,
)
from idemdash.dashboard.schemas import overview as schema
from idemdash.dashboard.schemas.profile_overview import ProfileOverview
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import keys, overview

bp = Blueprint("overview", __name__)


def _key_counts(live: panels.Panel, window: panels.Panel) -> panels.Panel:
    """The processing counts and the counts by status and window, each precomputed at scale (dashboard/rollups.py):
    as of the older of the two when either was, with the time both took to compute."""
    if not live.ok:
        return live
    if not window.ok:
        return window
    stored = [p for p in (live, window) if p.computed_at is not None]
    return panels.Panel(
        value=overview.KeyCounts.combine(panels.require(live), panels.require(window)),
        computed_at=min((p.computed_at for p in stored if p.computed_at is not None), default=None),
        computed_ms=sum(p.computed_ms or 0.0 for p in stored) if stored else None,
    )


def _overview(*, with_trends: bool = True) -> dict:
    """The overview's numbers; ``with_trends``: the trend points and markers too (the page reads them through its
    trend section, dashboard/trend_section.py)."""
    trend_range = contract.query(schema.OverviewQuery).range
    hours = trends.RANGES[trend_range]
    lease = get_target().settings.default_lease_seconds
    # every count precomputed by the scheduler where counting it per request was measured slow (1M processing keys)
    processing, window, outbox, inbox = rollups.load(
        ("key_processing", ""), ("key_windows", ""), ("outbox_backlog", ""), ("inbox_volume", "")
    )
    trend, marks = trend_section.read(hours) if with_trends else (None, None)
    return {
        "as_of": datetime.now(timezone.utc),
        "keys": _key_counts(processing, window),
        "outbox": outbox,
        "inbox": inbox,
        "last_purges": panels.load(overview.list_recent_purge_runs),
        "trend": trend,
        "marks": marks,
        "trend_hours": hours,
        "trend_range": trend_range,
        "trend_ranges": trends.RANGES,
        "lease_seconds": lease,
    }


def _where_stuck(counts: panels.Panel) -> panels.Panel | None:
    """Where the stuck keys are (their top scope and worker), when there are any."""
    if not counts.ok or counts.value is None or not counts.value.stuck:
        return None
    return key_breakdown.load(keys.KeyFilter("stuck"), known_count=counts.value.stuck)


@bp.get("/")
def page():
    if not one_model.rich(get_target().settings, "keys"):  # another library's tables: read through its profile
        return profile_overview.page()
    data = _overview(with_trends=False)
    section = trend_section.load(data["trend_hours"], data["trend_range"])
    stuck_where = _where_stuck(data["keys"])
    return render(
        "overview.html",
        "overview_panel",
        **data,
        trends_section=section.draw(),
        stuck_where=stuck_where,
        breakdown_top=3,
    )


@bp.get("/api/v1/overview")
@contract.operation(
    "The overview's headline numbers: stuck and processing keys, failures and successes of the last "
    "24 h, the outbox backlog and lag, inbox volume, the last purges and the trends",
    query=schema.OverviewQuery,
    ok=schema.Overview,
    also=(ProfileOverview,),
)
def api() -> schema.Overview | ProfileOverview:
    if not one_model.rich(get_target().settings, "keys"):
        return profile_overview.api()
    data = _overview()
    trend = data["trend"]
    return schema.Overview.model_validate(
        {
            "as_of": data["as_of"],
            "keys": panels.require(data["keys"]),
            "outbox": panels.require(data["outbox"]),
            "inbox": panels.require(data["inbox"]),
            "last_purges": panels.require(data["last_purges"]),
            # sections the scheduler precomputed (large tables): when, and how long counting them took
            "precomputed": rollups.precomputed(keys=data["keys"], outbox=data["outbox"], inbox=data["inbox"]),
            "trends": {
                "window_hours": data["trend_hours"],
                "range": data["trend_range"],
                "snapshot_interval_seconds": get_target().settings.snapshot_interval_seconds,
                # more snapshots than max_points come merged: 'snapshots' says how many a point stands for
                "max_points": trends.MAX_POINTS,
                "points": trend.value or [],
                "problem": trend.to_json() if not trend.ok else None,
                "markers": [
                    {"kind": e.kind, "at": e.at, "by": e.by, "what": e.what, "audit_id": e.audit_id, "run_id": e.run_id}
                    for e in data["marks"].events
                ],
                "markers_cut": data["marks"].cut,
            },
            "definitions": schema.definitions(data["lease_seconds"]),
        }
    )
