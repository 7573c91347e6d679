"""/suppression and its JSON twin: per scope, keys created in a window that ran once vs needed a re-claim."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, jsonify

from idemdash.dashboard import panels, query_args, rollups
from idemdash.dashboard.web import render
from idemdash.queries import suppression

bp = Blueprint("suppression", __name__)

WINDOW_LABELS = {"1h": "hour", "24h": "24 hours", "7d": "7 days"}
ROW_FIELDS = ("scope", "keys", "first_attempt", "retried", "retried_pct", "total_attempts", "extra_attempts",
              "max_attempts", "succeeded", "failed_final", "processing", "failed_retryable")


def counts_sentence(window: str) -> str:
    return (f"Keys whose created_at is within the last {WINDOW_LABELS[window]}, per idempotency_scope: "
            "first_attempt keys ran once (attempt_count = 1); retried keys needed a re-claim after a stale lease "
            "or a retryable failure (attempt_count > 1); extra_attempts = sum(attempt_count) - keys, each a "
            "duplicate execution the key let through safely, not a duplicate effect; status columns are the "
            "status now; replays of succeeded keys (client retries answered from the stored response) do not "
            "change the row and are not counted.")


def _suppression() -> dict:
    window = query_args.choice("window", tuple(suppression.WINDOWS), "24h")
    return {
        "as_of": datetime.now(timezone.utc),
        "window": window,
        "window_label": WINDOW_LABELS[window],
        "windows": WINDOW_LABELS,
        "counts": counts_sentence(window),
        # every key created in the window: precomputed at scale, see dashboard/rollups.py
        "panel": rollups.load_one("suppression", window),
    }


@bp.get("/suppression")
def page():
    return render("suppression.html", "suppression_panel", **_suppression())


@bp.get("/api/v1/suppression")
def api():
    data = _suppression()
    result = panels.require(data["panel"])
    totals = {f: getattr(result.totals, f) for f in ROW_FIELDS if f != "scope"} | {"scopes": result.totals.scopes}
    return jsonify({
        "window": data["window"],
        "since": result.since,
        "as_of": data["as_of"],
        "scopes": [{f: getattr(row, f) for f in ROW_FIELDS} for row in result.scopes],
        "truncated": result.more,
        "totals": totals,
        "counts": data["counts"],
        "precomputed": rollups.precomputed(scopes=data["panel"]),
    })
