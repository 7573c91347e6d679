"""/outbox and its JSON twin: backlog and lag, per event type, likely poison events, the row list."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone

from flask import Blueprint, abort

from idemdash.dashboard import contract, one_model, panels, profile_lists, rollups
from idemdash.dashboard.schemas import outbox as schema
from idemdash.dashboard.schemas.profile_pages import ProfileOutbox
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import htmx_request, render
from idemdash.queries import outbox, outbox_actions
from idemdash.queries.overview import OutboxBacklog, summarize_backlog

bp = Blueprint("outbox", __name__)

# A pending row whose delivery failed this often is probably a poison event: it will never publish on its own.
MANY_ATTEMPTS = outbox.POISON_MIN_ATTEMPTS
MANY_ATTEMPTS_SHOWN = 20

DEFINITIONS = {
    "backlog.pending": "outbox rows with status = 'pending'",
    "backlog.lag_seconds": f"age of the oldest pending row with attempt_count < {MANY_ATTEMPTS} (not likely poison): "
    "the lag every page shows",
    "backlog.poison_oldest_seconds": f"age of the oldest pending row with attempt_count >= {MANY_ATTEMPTS}",
    "backlog.pending_many_attempts": f"pending rows with attempt_count >= {MANY_ATTEMPTS} (likely poison)",
    "backlog.healthy_lag_seconds": f"age of the oldest pending row with attempt_count < {MANY_ATTEMPTS}: how far "
    "behind the relay is, without the poison rows it keeps failing on",
    "backlog.oldest_poison_at": f"created_at of the oldest pending row with attempt_count >= {MANY_ATTEMPTS}",
    "parked": "rows an operator parked (status = 'parked'): the relay publishes only pending rows, so they wait "
    f"until released; oldest first, at most {outbox_actions.PARKED_SHOWN}",
    "by_event_type": "event types that have pending rows or rows published in the last 24 hours, most pending "
    f"first, at most {outbox.EVENT_TYPES_SHOWN}",
    "by_event_type.pending": "pending rows of this event type; oldest_pending_at and max_attempts over those rows",
    "by_event_type.published_24h": "rows of this event type whose published_at is within the last 24 hours",
    "many_attempts": f"pending rows with attempt_count >= {MANY_ATTEMPTS}, most attempts first, at most "
    f"{MANY_ATTEMPTS_SHOWN}",
    "items": "rows with the requested status (pending: oldest first; any other status: newest first)",
}


def _outbox() -> dict:
    args = contract.query(schema.OutboxQuery)
    flt = outbox.OutboxFilter(status=args.status, event_type=args.event_type)
    limit, after = args.limit, args.cursor
    tables = get_target().tables
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        rows = panels.load(
            outbox.list_outbox,
            tables,
            flt,
            after=after,
            limit=limit,
            index="index_outbox_pending" if flt.status == "pending" else "index_outbox_status_created",
        )
    except ValueError as exc:
        abort(400, str(exc))
    return {
        "as_of": datetime.now(timezone.utc),
        "flt": flt,
        "limit": limit,
        "after": after,
        "rows": rows,
        # the overview's backlog numbers: precomputed at scale (every pending row counted), see dashboard/rollups.py
        "summary": _summary(backlog := rollups.load_one("outbox_backlog")),
        "backlog": backlog,
        # pending rows and a day of published ones per type: precomputed at scale, see dashboard/rollups.py
        "event_types": rollups.load_one("outbox_event_types"),
        "many_attempts": panels.load(
            outbox.list_outbox_many_attempts,
            tables,
            min_attempts=MANY_ATTEMPTS,
            limit=MANY_ATTEMPTS_SHOWN,
            index="index_outbox_attempts",
        ),
        "many_attempts_threshold": MANY_ATTEMPTS,
        "many_attempts_shown": MANY_ATTEMPTS_SHOWN,
        "event_types_shown": outbox.EVENT_TYPES_SHOWN,
    }


def _summary(backlog: panels.Panel[OutboxBacklog]) -> panels.Panel[outbox.OutboxSummary]:
    if not backlog.ok or backlog.value is None:
        return panels.failed(backlog)
    computed_at = backlog.computed_at or datetime.now(timezone.utc)
    return panels.Panel(value=summarize_backlog(backlog.value, computed_at))


def _parked(statuses: list[str]) -> panels.Panel:
    """Parked rows, read only when the table holds any (the status list says so): a status type without the
    value 'parked' would refuse the comparison."""
    if "parked" not in statuses:
        return panels.Panel(value=[])
    return panels.load(outbox_actions.list_outbox_parked, get_target().tables, index="index_outbox_status_created")


def _status_choices(current: str) -> list[str]:
    """The statuses present in the table for the filter; pending and published always, and the current one."""
    found = panels.load(outbox.list_outbox_statuses, get_target().tables, index="index_outbox_status_created")
    choices = ["pending", "published"]
    for status in [*(found.value or []), current]:
        if status not in choices:
            choices.append(status)
    return choices


@bp.get("/outbox")
def page():
    if not one_model.rich(get_target().settings, "outbox"):  # another library's outbox: through its profile
        return profile_lists.outbox_page()
    data = _outbox()
    fragment = bool(htmx_request())
    # the filter form is outside the fragment: a fragment render needs no choices for it
    statuses = _status_choices(data["flt"].status)
    return render(
        "outbox.html",
        "outbox_panel",
        **data,
        statuses=[data["flt"].status] if fragment else statuses,
        parked=_parked(statuses),
    )


@bp.get("/api/v1/outbox")
@contract.operation(
    "The outbox: its backlog and lag, per event type, likely poison rows, parked rows, and one page "
    "of rows in a status",
    query=schema.OutboxQuery,
    ok=schema.OutboxPage,
    also=(ProfileOutbox,),
)
def api() -> schema.OutboxPage | ProfileOutbox:
    if not one_model.rich(get_target().settings, "outbox"):
        return profile_lists.outbox_answer()
    data = _outbox()
    rows = panels.require(data["rows"])
    parked = panels.require(_parked(_status_choices(data["flt"].status)))
    summary = panels.require(data["summary"])
    return schema.OutboxPage(
        items=rows.items,
        next_cursor=rows.next_cursor,
        status=data["flt"].status,
        event_type=data["flt"].event_type,
        as_of=data["as_of"],
        backlog=schema.Backlog.model_validate(asdict(summary) | {"many_attempts_threshold": MANY_ATTEMPTS}),
        by_event_type=panels.require(data["event_types"]),
        many_attempts=panels.require(data["many_attempts"]),
        parked=parked,
        definitions=DEFINITIONS,
        precomputed=rollups.precomputed(by_event_type=data["event_types"], backlog=data["backlog"]),
    )
