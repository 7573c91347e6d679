"""/audit and its JSON twin: every operator action, newest first."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, abort, jsonify, request

from idemdash.dashboard import panels, params
from idemdash.dashboard.web import render
from idemdash.queries import audit as q

bp = Blueprint("audit", __name__)

ACTION_LABELS = {"reclassify": "Reclassify one key", "reclassify-bulk": "Bulk reclassify", "note": "Note",
                 "purge": "Purge", "purge-dry-run": "Purge dry run", "outbox-park": "Park an outbox row",
                 "outbox-release": "Release an outbox row"}
assert set(ACTION_LABELS) == set(q.ACTION_KINDS)

FIELDS = ("audit_id", "at", "actor", "action", "scope", "key", "from_status", "to_status", "reason",
          "evidence", "detail", "parent_id", "children")


def _filter() -> q.AuditFilter:
    action = request.args.get("action", "")
    if action and action not in q.ACTION_KINDS:
        abort(400, f"action must be one of {', '.join(q.ACTION_KINDS)} (got {action!r})")
    since, until = params.moment("since"), params.moment("until")
    if since is not None and until is not None and since > until:
        abort(400, "since is after until: the time range is empty")
    return q.AuditFilter(scope=params.text("scope"), key=params.text("key", max_length=10_000),
                         actor=params.text("actor", max_length=500),
                         parent=params.integer("parent", minimum=1, maximum=2**62),
                         action=action or None, since=since, until=until)


def _list_panel():
    flt = _filter()
    limit = params.integer("limit", minimum=1, maximum=500, default=50)
    after = params.cursor()
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        panel = panels.load(q.list_audit, flt, after=after, limit=limit)
    except ValueError as exc:
        abort(400, str(exc))
    return flt, limit, after, panel


@bp.get("/audit")
def page():
    flt, limit, after, panel = _list_panel()
    return render("audit.html", "audit_panel", flt=flt, limit=limit, after=after, panel=panel,
                  as_of=datetime.now(timezone.utc), action_kinds=ACTION_LABELS)


@bp.get("/api/v1/audit")
def api():
    flt, limit, after, panel = _list_panel()
    result = panels.require(panel)
    return jsonify({"items": [{f: getattr(row, f) for f in FIELDS} for row in result.items],
                    "next_cursor": result.next_cursor})
