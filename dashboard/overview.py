"""`/` and `GET /api/v1/overview`: the headline numbers an on-call engineer sees first."""
from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone

from flask import Blueprint, current_app, jsonify

from dashboard import panels
from dashboard.db import get_db
from dashboard.web import render
from queries import overview as q

bp = Blueprint("overview", __name__)


def _overview() -> dict:
    tables = get_db().tables
    lease = current_app.config["DEFAULT_LEASE_SECONDS"]
    return {
        "as_of": datetime.now(timezone.utc),
        "keys": panels.load(q.count_keys_by_state, tables, lease, index="index_keys_processing"),
        "outbox": panels.load(q.get_outbox_backlog, tables, index="index_outbox_pending"),
        "inbox": panels.load(q.get_inbox_volume, tables, index="index_inbox_processed"),
        "last_purges": panels.load(q.list_recent_purge_runs),
        "lease_seconds": lease,
    }


@bp.get("/")
def page():
    return render("overview.html", "overview_panel", **_overview())


@bp.get("/api/v1/overview")
def api():
    data = _overview()
    return jsonify({
        "as_of": data["as_of"],
        "keys": asdict(panels.require(data["keys"])),
        "outbox": asdict(panels.require(data["outbox"])),
        "inbox": asdict(panels.require(data["inbox"])),
        "last_purges": [asdict(run) for run in panels.require(data["last_purges"])],
        "definitions": {
            "stuck": f"status = 'processing' and locked_until < now(), or locked_until is NULL and "
                     f"claimed_at older than {data['lease_seconds']} s",
            "failed_final_24h": "status = 'failed_final' and updated_at within the last 24 hours",
            "succeeded_24h": "status = 'succeeded' and updated_at within the last 24 hours",
            "outbox.pending": "outbox rows with status = 'pending'; lag is the age of the oldest",
            "inbox.rows_24h": "inbox rows with processed_at within the last 24 hours",
        },
    })
