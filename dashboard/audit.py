"""/audit and its JSON twin: every operator action, newest first."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, abort, jsonify, request

from idemdash.dashboard import panels, query_args
from idemdash.dashboard.web import render
from idemdash.queries import audit

bp = Blueprint("audit", __name__)

ACTION_LABELS = {"reclassify": "Reclassify one key", "reclassify-bulk": "Bulk reclassify", "note": "Note",
                 "purge": "Purge", "purge-dry-run": "Purge dry run", "purge-cancel": "Cancel a purge",
                 "outbox-park": "Park an outbox row",
                 "outbox-release": "Release an outbox row"}
assert set(ACTION_LABELS) == set(audit.ACTION_KINDS)

FIELDS = ("audit_id", "at", "actor", "action", "scope", "key", "from_status", "to_status", "reason",
          "evidence", "detail", "parent_id", "children")


def _filter() -> audit.AuditFilter:
    action = request.args.get("action", "")
    if action and action not in audit.ACTION_KINDS:
        abort(400, f"action must be one of {', '.join(audit.ACTION_KINDS)} (got {action!r})")
    since, until = query_args.moment("since"), query_args.moment("until")
    if since is not None and until is not None and since > until:
        abort(400, "since is after until: the time range is empty")
    return audit.AuditFilter(scope=query_args.text("scope"), key=query_args.text("key", max_length=10_000),
                             actor=query_args.text("actor", max_length=500),
                             parent=query_args.integer("parent", minimum=1, maximum=2**62),
                             action=action or None, since=since, until=until)


def _list_panel():
    flt = _filter()
    limit = query_args.integer("limit", minimum=1, maximum=500, default=50)
    after = query_args.cursor()
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        panel = panels.load(audit.list_audit, flt, after=after, limit=limit)
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
