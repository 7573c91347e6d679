"""/workers and its JSON twin: each owner of keys (claimed_by) seen lately, who is alive and who is not: its last
claim, in flight, stuck, failed and succeeded in a window (1h, 24h, 7d), worst first. idemdash's own holder of the
keys held for review is not a worker: it is counted apart."""

from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, url_for

from idemdash.core.statuses import REVIEW_HOLDER
from idemdash.dashboard import contract, panels, profile_reads, profile_workers, rollups
from idemdash.dashboard.schemas import workers as schema
from idemdash.dashboard.schemas.profile_dimensions import WorkersAnswer
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import workers

bp = Blueprint("workers", __name__)

WINDOW_WORDS = {"1h": "hour", "24h": "24 hours", "7d": "7 days"}
WINDOW_TABS = {"1h": "1 hour", "24h": "24 hours", "7d": "7 days"}
# each number of a row -> the key list it stands for
LINK_STATUS = {
    "stuck": "stuck",
    "in_flight": "processing",
    "failed_retryable": "failed_retryable",
    "failed_final": "failed_final",
    "succeeded": "succeeded",
}


def links(name: str) -> dict[str, str]:
    """The key lists behind an owner's numbers (the key list is not limited to the window)."""
    return {"keys": url_for("keys.list_page", claimed_by=name)} | {
        column: url_for("keys.list_page", status=status, claimed_by=name) for column, status in LINK_STATUS.items()
    }


def _workers() -> dict:
    window = contract.query(schema.WorkersQuery).window
    target = get_target()
    as_of = datetime.now(timezone.utc)
    # every processing key and the window's finished keys, grouped: precomputed at scale (dashboard/rollups.py)
    owners = rollups.load_one("workers", window)
    held = panels.load(workers.count_held_keys, target.tables, index="index_keys_held")
    return {
        "as_of": as_of,
        "window": window,
        "since": as_of - workers.WINDOWS[window],
        "windows": WINDOW_TABS,
        "window_words": WINDOW_WORDS,
        "default_window": workers.DEFAULT_WINDOW,
        "owners": owners,
        "held": held,
        "holder": REVIEW_HOLDER,
        "limit": workers.OWNER_LIMIT,
        "lease_seconds": target.settings.default_lease_seconds,
        "links": links,
    }


@bp.get("/workers")
def page():
    if not profile_reads.rich("keys"):
        window = contract.query(schema.WorkersQuery).window
        return render(
            "workers_profile.html",
            "workers_panel",
            panel=profile_workers.load(window),
            window=window,
            windows=WINDOW_TABS,
            window_words=WINDOW_WORDS,
            default_window=workers.DEFAULT_WINDOW,
        )
    return render("workers.html", "workers_panel", **_workers())


@bp.get("/api/v1/workers")
@contract.operation(
    "The workers that claim keys: each owner seen lately with its last claim, in flight, stuck, "
    "failed and succeeded in a window, worst first; on a library's database, each owner its tables "
    "record (a node, an executor), or that none is recorded",
    query=schema.WorkersQuery,
    ok=WorkersAnswer,
)
def api() -> WorkersAnswer:
    if not profile_reads.rich("keys"):
        return WorkersAnswer(panels.require(profile_workers.load(contract.query(schema.WorkersQuery).window)))
    return WorkersAnswer(_reference_api())


def _reference_api() -> schema.Workers:
    data = _workers()
    owners = panels.require(data["owners"])
    window = data["window"]
    lease = data["lease_seconds"]
    return schema.Workers.model_validate(
        {
            "items": [
                {
                    "name": o.name,
                    "last_claim": o.last_claim,
                    "in_flight": o.in_flight,
                    "stuck": o.stuck,
                    "failed": o.failed,
                    "failed_retryable": o.failed_retryable,
                    "failed_final": o.failed_final,
                    "succeeded": o.succeeded,
                    "links": links(o.name),
                }
                for o in owners.items
            ],
            "next_cursor": None,
            "as_of": data["as_of"],
            "window": window,
            "since": data["since"],
            "limit": data["limit"],
            "truncated": owners.more,
            "held_for_review": {
                "keys": panels.require(data["held"]),
                "holder": REVIEW_HOLDER,
                "url": url_for("keys.list_page", status="needs_review"),
            },
            "precomputed": rollups.precomputed(items=data["owners"]),
            "definitions": {
                "window": f"window={window}: failed and succeeded count the keys whose updated_at is within the last "
                f"{WINDOW_WORDS[window]} (since = as_of minus the window; a precomputed list's window ends at "
                "its computed_at); stuck and in flight are the processing keys now",
                "owners": "every claimed_by holding a processing key now or owning a key that failed or succeeded in "
                f"the window; idemdash's own holder {REVIEW_HOLDER} is not a worker (held_for_review)",
                "order": f"most stuck first, then most failed, then by name; at most {data['limit']} (truncated: more "
                "exist)",
                "in_flight": "status = 'processing' and the lease is live",
                "stuck": "status = 'processing' and locked_until < now(), or locked_until is NULL and claimed_at "
                "older "
                f"than {lease} s",
                "failed": "failed_retryable + failed_final with updated_at >= since",
                "succeeded": "succeeded with updated_at >= since",
                "last_claim": "the latest claimed_at among the keys counted for the owner (a key re-claimed by another "
                "worker counts for that one)",
            },
        }
    )
