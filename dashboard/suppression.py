"""/suppression and its JSON twin: per scope, keys created in a window that ran once vs needed a re-claim."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import get_args

from flask import Blueprint

from idemdash.dashboard import contract, panels, rollups
from idemdash.dashboard.schemas import suppression as schema
from idemdash.dashboard.schemas.common import Window
from idemdash.dashboard.web import render
from idemdash.queries import suppression

bp = Blueprint("suppression", __name__)

WINDOW_LABELS = {"1h": "hour", "24h": "24 hours", "7d": "7 days"}
assert set(WINDOW_LABELS) == set(suppression.WINDOWS) == set(get_args(Window))


def counts_sentence(window: str) -> str:
    return (f"Keys whose created_at is within the last {WINDOW_LABELS[window]}, per idempotency_scope: "
            "first_attempt keys ran once (attempt_count = 1); retried keys needed a re-claim after a stale lease "
            "or a retryable failure (attempt_count > 1); extra_attempts = sum(attempt_count) - keys, each a "
            "duplicate execution the key let through safely, not a duplicate effect; status columns are the "
            "status now; replays of succeeded keys (client retries answered from the stored response) do not "
            "change the row and are not counted.")


def _suppression() -> dict:
    window = contract.query(schema.SuppressionQuery).window
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
@contract.operation("Per scope, keys created in the window that ran once vs needed a re-claim, and the extra "
                    "attempts the keys let through safely", query=schema.SuppressionQuery, ok=schema.Suppression)
def api() -> schema.Suppression:
    data = _suppression()
    result = panels.require(data["panel"])
    return schema.Suppression.model_validate({
        "window": data["window"], "since": result.since, "as_of": data["as_of"], "scopes": result.scopes,
        "truncated": result.more, "totals": result.totals, "counts": data["counts"],
        "precomputed": rollups.precomputed(scopes=data["panel"])})
