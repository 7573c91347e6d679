"""Cancel a running purge (`POST /api/v1/purges/<run_id>/cancel`, and the button beside its progress on /purges).

The request is recorded on the run's row (who, when) and in the audit log, in one statement; the run reads it
right before each batch on its own connection, stops after the batch in flight (no batch starts once it is seen) and
ends ``cancelled`` with the rows deleted so far. A cancel that came while the last batch ran ends the run
``succeeded``, its error saying the cancel came after the last batch (queries/purges.sql, ``finish_purge_run``).
What it had not reached yet goes at the next run. Ctrl-C on `idemdash purge` cancels the same way.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, redirect, request, url_for

from idemdash.dashboard import contract
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.schemas import purges as schema
from idemdash.dashboard.targets import get_target
from idemdash.queries import purge_history
from idemdash.queries import purges as purge_queries

bp = Blueprint("purge_cancel", __name__)


def cancel(run_id: int, reason: str) -> schema.CancelRequested:
    """Ask the run to stop; raises ActionError 404 (no such run) or 409 (it is not running)."""
    target = get_target()
    with target.write() as conn:
        asked = purge_queries.request_purge_cancel(conn, run_id, actor=current_user().name, reason=reason)
    if asked is not None:
        return schema.CancelRequested(
            run_id=asked.run_id,
            table=asked.table_name,
            cancel_requested_by=asked.cancel_requested_by,
            cancel_requested_at=asked.cancel_requested_at,
            audit_id=asked.audit_id,
            status_url=url_for("purges.api", run_id=run_id),
        )
    with target.read(primary=True) as conn:
        runs = purge_history.list_purge_runs(conn, purge_history.PurgeRunFilter(run_id=run_id), limit=1).items
    if not runs:
        raise ActionError(404, f"no purge run {run_id}")
    raise ActionError(409, f"run {run_id} is not running: it ended {runs[0].outcome}. Nothing to cancel.")


@bp.post("/api/v1/purges/<int:run_id>/cancel")
@json_action
@contract.operation(
    "Ask a running purge to stop after its current batch (409 when it is not running)",
    body=schema.CancelBody,
    ok=schema.CancelRequested,
    status=202,
)
def api(run_id: int) -> Any:
    try:
        body = contract.body(schema.CancelBody)
        return cancel(run_id, body.reason or "")
    except ActionError as exc:
        return exc.json()


@bp.post("/purges/<int:run_id>/cancel")
@operator_required
def form(run_id: int):
    try:
        reason = request.form.get("reason", "")
        body = contract.form(schema.CancelBody, {"reason": reason} if reason.strip() else {})
        cancel(run_id, body.reason or "")
    except ActionError as exc:
        abort(exc.status, exc.message)
    return redirect(url_for("purges.page", cancelled=run_id), code=303)
