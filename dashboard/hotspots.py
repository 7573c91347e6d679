"""/hotspots and its JSON twin: keys attempted at least N times, by scope and worker, top keys, histogram, over
the keys last changed within a window (1h, 24h, 7d) or all of them."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from flask import Blueprint

from idemdash.dashboard import contract, panels, profile_hotspots, profile_reads, rollups
from idemdash.dashboard.schemas import hotspots as schema
from idemdash.dashboard.schemas.profile_dimensions import HotspotsAnswer
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import hotspots

bp = Blueprint("hotspots", __name__)

TOP_KEYS = 20
# the window in words: after "in the last" for a time window (the headline, the tabs' titles); the tabs' labels
WINDOW_WORDS = {"1h": "hour", "24h": "24 hours", "7d": "7 days", "all": "all time"}
WINDOW_TABS = {"1h": "1 hour", "24h": "24 hours", "7d": "7 days", "all": "All time"}
DEFAULT_WINDOW = "24h"


def window_phrase(window: str) -> str:
    return "of all time" if hotspots.WINDOWS[window] is None else f"in the last {WINDOW_WORDS[window]}"


def window_definition(window: str) -> str:
    if hotspots.WINDOWS[window] is None:
        return "window=all: every key in the table, whatever its age"
    return (
        f"window={window}: only keys whose updated_at is within the last {WINDOW_WORDS[window]} (since = as_of "
        "minus the window). The claim function sets updated_at (and claimed_at) on every attempt and complete/"
        "fail set it again, so a key is in the window when its last attempt or its outcome is. A precomputed "
        "section's window ends at its computed_at."
    )


def _hotspots() -> dict:
    config = get_target().settings
    default = config.hotspot_min_attempts
    args = contract.query(schema.HotspotsQuery)
    window = args.window
    n: int = args.min_attempts or default
    tables = get_target().tables
    lease = config.default_lease_seconds
    span = hotspots.WINDOWS[window]
    as_of = datetime.now(timezone.utc)
    # groups and histogram read every hotspot (or every key) in the window: precomputed at scale, see
    # dashboard/rollups.py; the rollups are per window
    groups, histogram = rollups.load(
        ("hotspot_groups", hotspots.hotspot_variant(window, n)), ("attempt_histogram", window)
    )
    by_scope = replace(groups, value=panels.require(groups).by_scope) if groups.ok else groups
    by_worker = replace(groups, value=panels.require(groups).by_worker) if groups.ok else groups
    return {
        "as_of": as_of,
        "window": window,
        "since": None if span is None else as_of - span,
        "window_phrase": window_phrase(window),
        "windows": WINDOW_TABS,
        "window_words": WINDOW_WORDS,
        "default_window": DEFAULT_WINDOW,
        "min_attempts": n,
        "default_min_attempts": default,
        "by_scope": by_scope,
        "by_worker": by_worker,
        "top_keys": panels.load(
            hotspots.list_top_hotspot_keys,
            tables,
            n,
            lease_seconds=lease,
            window=span,
            limit=TOP_KEYS,
            index="index_keys_hotspots",
        ),
        "histogram": histogram,
        "top_limit": TOP_KEYS,
        "group_limit": hotspots.GROUP_LIMIT,
    }


def _profile_args() -> tuple[str, int]:
    args = contract.query(schema.HotspotsQuery)
    return args.window, args.min_attempts or get_target().settings.hotspot_min_attempts


@bp.get("/hotspots")
def page():
    if not profile_reads.rich("keys"):
        window, n = _profile_args()
        return render(
            "hotspots_profile.html",
            "hotspots_panel",
            panel=profile_hotspots.load(window, n),
            window=window,
            min_attempts=n,
            window_phrase=window_phrase(window),
            windows=WINDOW_TABS,
            default_window=DEFAULT_WINDOW,
            window_words=WINDOW_WORDS,
            default_min_attempts=get_target().settings.hotspot_min_attempts,
        )
    return render("hotspots.html", "hotspots_panel", **_hotspots())


@bp.get("/api/v1/hotspots")
@contract.operation(
    "Retry hotspots in a window: by scope and worker, the top keys, the attempt histogram; on a "
    "library's database, per role table the rows with the most attempts, by group and owner where "
    "recorded",
    query=schema.HotspotsQuery,
    ok=HotspotsAnswer,
)
def api() -> HotspotsAnswer:
    if not profile_reads.rich("keys"):
        return HotspotsAnswer(panels.require(profile_hotspots.load(*_profile_args())))
    return HotspotsAnswer(_reference_api())


def _reference_api() -> schema.Hotspots:
    data = _hotspots()
    by_scope = panels.require(data["by_scope"])
    by_worker = panels.require(data["by_worker"])
    window = data["window"]
    return schema.Hotspots.model_validate(
        {
            "window": window,
            "since": data["since"],
            "min_attempts": data["min_attempts"],
            "as_of": data["as_of"],
            "by_scope": by_scope.items,
            "by_worker": by_worker.items,
            "top_keys": panels.require(data["top_keys"]),
            "histogram": panels.require(data["histogram"]),
            "truncated": {"by_scope": by_scope.more, "by_worker": by_worker.more},
            "precomputed": rollups.precomputed(
                by_scope=data["by_scope"], by_worker=data["by_worker"], histogram=data["histogram"]
            ),
            "definitions": {
                "window": window_definition(window),
                "hotspot": f"a key with attempt_count >= {data['min_attempts']}"
                + ("" if data["since"] is None else " and updated_at >= since"),
                "by_scope": f"hotspot keys grouped by idempotency_scope, the {hotspots.GROUP_LIMIT} with the most "
                "first",
                "by_worker": f"hotspot keys grouped by claimed_by (the worker that claimed the key last; null is "
                f"its own group), the {hotspots.GROUP_LIMIT} with the most first",
                "stuck": f"status = 'processing' and locked_until < now(), or locked_until is NULL and claimed_at "
                f"older than {get_target().settings.default_lease_seconds} s",
                "processing": "status = 'processing', the stuck keys included",
                "top_keys": f"the {TOP_KEYS} hotspot keys with the most attempts, then the most recently changed",
                "histogram": (
                    "every key in the table" if data["since"] is None else "every key with updated_at >= since"
                )
                + " (not only hotspots) counted by attempt_count; "
                "max null = no upper bound",
            },
        }
    )
