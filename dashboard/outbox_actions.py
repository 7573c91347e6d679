"""Park a poison outbox row so the relay leaves it alone, and release it again (`POST /api/v1/outbox/park`,
`POST /api/v1/outbox/release`, and the buttons on the row's page).

The relay publishes only ``pending`` rows (docs/interface.md, The outbox contract). The database statement is the
judge: it changes the row only while its status is the one the action needs and, when the operator's attempt
count is given, a park's row is still likely poison (the relay retrying it meanwhile refuses nothing) and a
release's count unchanged; it never waits behind the relay, and writes the audit row in the same statement.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

from flask import Blueprint, abort, redirect, request, url_for
from psycopg import errors

from idemdash.dashboard import contract, outbox_rows
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.schemas import outbox as schema
from idemdash.dashboard.targets import get_target
from idemdash.queries import outbox as outbox_queries
from idemdash.queries import outbox_actions

bp = Blueprint("outbox_actions", __name__)


def move(outbox_id: uuid.UUID, action: str, reason: str, expected_attempt_count: int | None) -> schema.Moved:
    """Park or release the row; returns it as it is now. Raises ActionError (404, 409)."""
    target = get_target()
    try:
        with target.write() as conn:
            result = outbox_actions.move_outbox_row(
                conn,
                target.tables,
                outbox_id,
                action,
                actor=current_user().name,
                reason=reason,
                expected_attempt_count=expected_attempt_count,
            )
    except errors.LockNotAvailable as exc:
        raise ActionError(
            409,
            "the relay holds this row right now (it may be publishing it), so nothing was "
            "changed: look at the row again in a moment",
        ) from exc
    except (errors.CheckViolation, errors.InvalidTextRepresentation) as exc:
        raise ActionError(
            409,
            "the outbox table refuses status 'parked' (a CHECK constraint or an enum without "
            "that value), so nothing was changed: /health (outbox.parked) gives the SQL that "
            "allows it",
        ) from exc
    with target.read(primary=True) as conn:
        row = outbox_queries.get_outbox_row(conn, target.tables, outbox_id)
    if row is None:
        raise ActionError(404, f"no outbox row {outbox_id}")
    if not result.changed:
        raise ActionError(409, _why_not(action, row, expected_attempt_count), asdict(row))
    return schema.Moved.model_validate(asdict(row) | {"audit_id": result.audit_id})


def _why_not(action: str, row: Any, expected_attempt_count: int | None) -> str:
    needed, _ = outbox_actions.MOVES[action]
    if row.status != needed:
        if row.status == "published":
            return "the row is published: the relay delivered it, and a published row is never changed"
        return (
            f"the row is {row.status} now, not {needed}: someone or the relay changed it since you looked. "
            "Nothing was changed."
        )
    if action == outbox_actions.PARK:
        return (
            f"the row is no longer likely poison: attempt_count is {row.attempt_count}, you saw "
            f"{expected_attempt_count} (someone reset it for another try). Nothing was changed."
        )
    return (
        f"changed since you looked: attempt_count is {row.attempt_count}, you saw {expected_attempt_count}. "
        "Nothing was changed."
    )


def _api(action: str) -> Any:
    try:
        body = contract.body(schema.MoveBody)
        return move(body.outbox_id, action, body.reason, body.expected_attempt_count)
    except ActionError as exc:
        return exc.json(current="row")


@bp.post("/api/v1/outbox/park")
@json_action
@contract.operation(
    "Park a pending outbox row: the relay leaves it alone until it is released",
    body=schema.MoveBody,
    ok=schema.Moved,
    conflict=schema.OutboxConflict,
)
def park_api() -> Any:
    return _api(outbox_actions.PARK)


@bp.post("/api/v1/outbox/release")
@json_action
@contract.operation(
    "Release a parked outbox row: pending again, for the relay to publish",
    body=schema.MoveBody,
    ok=schema.Moved,
    conflict=schema.OutboxConflict,
)
def release_api() -> Any:
    return _api(outbox_actions.RELEASE)


@bp.post("/outbox/<uuid:outbox_id>/park")
@operator_required
def park_form(outbox_id: uuid.UUID):
    return _form(outbox_id, outbox_actions.PARK)


@bp.post("/outbox/<uuid:outbox_id>/release")
@operator_required
def release_form(outbox_id: uuid.UUID):
    return _form(outbox_id, outbox_actions.RELEASE)


def _form(outbox_id: uuid.UUID, action: str):
    # the form's fields as the API's body: the token is the form's own, an empty field is one left out
    fields = {name: value for name, value in request.form.items() if name != "csrf_token" and value != ""}
    try:
        body = contract.form(schema.MoveBody, fields | {"outbox_id": str(outbox_id)})
        result = move(outbox_id, action, body.reason, body.expected_attempt_count)
    except ActionError as exc:
        if exc.status == 404:
            abort(404, exc.message)
        # the row's page again, with the refusal and what was typed
        return outbox_rows.detail_page(outbox_id, action_error=exc.message, form=request.form), exc.status
    return redirect(url_for("outbox_rows.detail_page", outbox_id=outbox_id, done=result.audit_id), code=303)
