"""Cancel a running purge (`POST /api/v1/purges/<run_id>/cancel`, and the button beside its progress on /purges).

The request is recorded on the run's row (who, when) and in the audit log, in one statement; the run reads it
between batches on its own connection, stops after the batch in flight and ends ``cancelled``. What it had not
reached yet goes at the next run. Ctrl-C on `idemdash purge` cancels the same way.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, jsonify, redirect, request, url_for

from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.targets import get_target
from idemdash.queries import purge_history
from idemdash.queries import purges as purge_queries

bp = Blueprint("purge_cancel", __name__)

MAX_REASON = 2000


class CancelError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def cancel(run_id: int, reason: str) -> dict[str, Any]:
    target = get_target()
    with target.write() as conn:
        asked = purge_queries.request_purge_cancel(conn, run_id, actor=current_user().name, reason=reason)
    if asked is not None:
        return {"run_id": asked.run_id, "table": asked.table_name, "cancel_requested_by": asked.cancel_requested_by,
                "cancel_requested_at": asked.cancel_requested_at, "audit_id": asked.audit_id,
                "status_url": url_for("purges.api", run_id=run_id)}
    with target.read(primary=True) as conn:
        runs = purge_history.list_purge_runs(conn, purge_history.PurgeRunFilter(run_id=run_id), limit=1).items
    if not runs:
        raise CancelError(404, f"no purge run {run_id}")
    raise CancelError(409, f"run {run_id} is not running: it ended {runs[0].outcome}. Nothing to cancel.")


def _reason(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_REASON or "\x00" in value:
        raise CancelError(400, f"reason must be text of at most {MAX_REASON} characters")
    return value.strip()


@bp.post("/api/v1/purges/<int:run_id>/cancel")
@json_action
def api(run_id: int):
    data = request.get_json(silent=True)
    try:
        if not isinstance(data, dict):
            raise CancelError(400, 'send a JSON object: {} or {"reason": "…"}')
        unknown = set(data) - {"reason"}
        if unknown:
            raise CancelError(400, f"unknown fields: {', '.join(sorted(unknown))} (reason is the only one)")
        answer = cancel(run_id, _reason(data.get("reason")))
    except CancelError as exc:
        return jsonify({"error": exc.message}), exc.status
    return jsonify(answer), 202


@bp.post("/purges/<int:run_id>/cancel")
@operator_required
def form(run_id: int):
    try:
        cancel(run_id, _reason(request.form.get("reason")))
    except CancelError as exc:
        abort(exc.status, exc.message)
    return redirect(url_for("purges.page", cancelled=run_id), code=303)
