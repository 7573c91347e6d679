"""/suppression and its JSON twin: per scope, keys created in a window that ran once vs needed a re-claim."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import get_args

from flask import Blueprint

from idemdash.core.profiles.dimensions import not_recorded, records, role_table
from idemdash.dashboard import contract, panels, profile_reads, rollups
from idemdash.dashboard.schemas import suppression as schema
from idemdash.dashboard.schemas.common import Window
from idemdash.dashboard.schemas.profile_dimensions import ProfileSuppression, SuppressionAnswer
from idemdash.dashboard.web import render
from idemdash.queries import suppression

bp = Blueprint("suppression", __name__)

WINDOW_LABELS = {"1h": "hour", "24h": "24 hours", "7d": "7 days"}
assert set(WINDOW_LABELS) == set(suppression.WINDOWS) == set(get_args(Window))


def counts_sentence(window: str) -> str:
    return (
        f"Keys whose created_at is within the last {WINDOW_LABELS[window]}, per idempotency_scope: "
        "first_attempt keys ran once (attempt_count = 1); retried keys needed a re-claim after a stale lease "
        "or a retryable failure (attempt_count > 1); extra_attempts = sum(attempt_count) - keys, each a "
        "duplicate execution the key let through safely, not a duplicate effect; status columns are the "
        "status now; replays of succeeded keys (client retries answered from the stored response) do not "
        "change the row and are not counted."
    )


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


def _recorded() -> bool:
    """Whether the keys table records the duplicates it refused (the reference tables' attempt_count per key)."""
    return records(role_table(profile_reads.chosen(), "keys"), "suppression")


def _not_recorded() -> ProfileSuppression:
    chosen = profile_reads.chosen()
    return ProfileSuppression(
        profile=chosen.name,
        library=chosen.library,
        problem=None,
        as_of=datetime.now(timezone.utc),
        window=contract.query(schema.SuppressionQuery).window,
        recorded=False,
        note=not_recorded(chosen, "suppression"),
    )


@bp.get("/suppression")
def page():
    if not _recorded():
        return render(
            "suppression.html",
            "suppression_panel",
            unrecorded=_not_recorded(),
            windows=WINDOW_LABELS,
            window=contract.query(schema.SuppressionQuery).window,
        )
    return render("suppression.html", "suppression_panel", **_suppression())


@bp.get("/api/v1/suppression")
@contract.operation(
    "Per scope, keys created in the window that ran once vs needed a re-claim, and the extra "
    "attempts the keys let through safely; on a library's database that records none, says so",
    query=schema.SuppressionQuery,
    ok=SuppressionAnswer,
)
def api() -> SuppressionAnswer:
    if not _recorded():
        return SuppressionAnswer(_not_recorded())
    data = _suppression()
    result = panels.require(data["panel"])
    return SuppressionAnswer(
        schema.Suppression.model_validate(
            {
                "window": data["window"],
                "since": result.since,
                "as_of": data["as_of"],
                "scopes": result.scopes,
                "truncated": result.more,
                "totals": result.totals,
                "counts": data["counts"],
                "precomputed": rollups.precomputed(scopes=data["panel"]),
            }
        )
    )
