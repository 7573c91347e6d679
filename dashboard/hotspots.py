"""/hotspots and its JSON twin: keys attempted at least N times, by scope and worker, top keys, histogram."""
from __future__ import annotations

from dataclasses import asdict, replace
from datetime import datetime, timezone

from flask import Blueprint, jsonify

from idemdash.dashboard import panels, query_args, rollups
from idemdash.dashboard.keys import LIST_FIELDS
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import hotspots

bp = Blueprint("hotspots", __name__)

TOP_KEYS = 20


def _hotspots() -> dict:
    config = get_target().settings
    default = config["HOTSPOT_MIN_ATTEMPTS"]
    n = query_args.integer("min_attempts", minimum=1, maximum=1_000_000, default=default)
    tables = get_target().tables
    lease = config["DEFAULT_LEASE_SECONDS"]
    # groups and histogram read every hotspot (or every key): precomputed at scale, see dashboard/rollups.py
    groups, histogram = rollups.load(("hotspot_groups", str(n)), ("attempt_histogram", ""))
    by_scope = replace(groups, value=panels.require(groups).by_scope) if groups.ok else groups
    by_worker = replace(groups, value=panels.require(groups).by_worker) if groups.ok else groups
    return {
        "as_of": datetime.now(timezone.utc),
        "min_attempts": n,
        "default_min_attempts": default,
        "by_scope": by_scope,
        "by_worker": by_worker,
        "top_keys": panels.load(hotspots.list_top_hotspot_keys, tables, n, lease_seconds=lease, limit=TOP_KEYS,
                                index="index_keys_attempts"),
        "histogram": histogram,
        "top_limit": TOP_KEYS,
        "group_limit": hotspots.GROUP_LIMIT,
    }


@bp.get("/hotspots")
def page():
    return render("hotspots.html", "hotspots_panel", **_hotspots())


@bp.get("/api/v1/hotspots")
def api():
    data = _hotspots()
    by_scope = panels.require(data["by_scope"])
    by_worker = panels.require(data["by_worker"])
    return jsonify({
        "min_attempts": data["min_attempts"],
        "as_of": data["as_of"],
        "by_scope": [asdict(row) for row in by_scope.items],
        "by_worker": [asdict(row) for row in by_worker.items],
        "top_keys": [{f: getattr(row, f) for f in LIST_FIELDS} | {"stuck": row.stuck}
                     for row in panels.require(data["top_keys"])],
        "histogram": [asdict(b) for b in panels.require(data["histogram"])],
        "truncated": {"by_scope": by_scope.more, "by_worker": by_worker.more},
        "precomputed": rollups.precomputed(by_scope=data["by_scope"], by_worker=data["by_worker"],
                                           histogram=data["histogram"]),
        "definitions": {
            "hotspot": f"a key with attempt_count >= {data['min_attempts']}",
            "by_scope": f"hotspot keys grouped by idempotency_scope, the {hotspots.GROUP_LIMIT} with the most first",
            "by_worker": f"hotspot keys grouped by claimed_by (the worker that claimed the key last; null is "
                         f"its own group), the {hotspots.GROUP_LIMIT} with the most first",
            "stuck": f"status = 'processing' and locked_until < now(), or locked_until is NULL and claimed_at "
                     f"older than {get_target().settings['DEFAULT_LEASE_SECONDS']} s",
            "processing": "status = 'processing', the stuck keys included",
            "top_keys": f"the {TOP_KEYS} hotspot keys with the most attempts, then the most recently changed",
            "histogram": "every key in the table (not only hotspots) counted by attempt_count; max null = no "
                         "upper bound",
        },
    })
