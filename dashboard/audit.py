"""/audit and its JSON twin: every operator action, newest first."""

from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, abort

from idemdash.core.statuses import ACTION_KINDS, ActionKind
from idemdash.dashboard import contract, panels
from idemdash.dashboard.schemas.audit import AuditPage, AuditQuery
from idemdash.dashboard.web import render
from idemdash.queries import audit

bp = Blueprint("audit", __name__)

ACTION_LABELS: dict[ActionKind, str] = {
    "reclassify": "Reclassify one key",
    "reclassify-bulk": "Bulk reclassify",
    "note": "Note",
    "purge": "Purge",
    "purge-dry-run": "Purge dry run",
    "purge-cancel": "Cancel a purge",
    "outbox-park": "Park an outbox row",
    "outbox-release": "Release an outbox row",
    "outbox-park-bulk": "Bulk park outbox rows",
    "outbox-release-bulk": "Bulk release outbox rows",
    "library": "A library's own action",
}
assert set(ACTION_LABELS) == set(ACTION_KINDS)


def _list_panel():
    args = contract.query(AuditQuery)
    flt = audit.AuditFilter(
        scope=args.scope,
        key=args.key,
        actor=args.actor,
        parent=args.parent,
        action=args.action,
        since=args.since,
        until=args.until,
    )
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        panel = panels.load(audit.list_audit, flt, after=args.cursor, limit=args.limit)
    except ValueError as exc:
        abort(400, str(exc))
    return flt, args.limit, args.cursor, panel


@bp.get("/audit")
def page():
    flt, limit, after, panel = _list_panel()
    return render(
        "audit.html",
        "audit_panel",
        flt=flt,
        limit=limit,
        after=after,
        panel=panel,
        as_of=datetime.now(timezone.utc),
        action_kinds=ACTION_LABELS,
    )


@bp.get("/api/v1/audit")
@contract.operation(
    "The audit log: every operator decision, newest first, one item per decision (a bulk action "
    "expands to its keys with parent=)",
    query=AuditQuery,
    ok=AuditPage,
)
def api() -> AuditPage:
    _, _, _, panel = _list_panel()
    result = panels.require(panel)
    return AuditPage(items=result.items, next_cursor=result.next_cursor)
