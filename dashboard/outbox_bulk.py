"""Park (or release) many outbox rows at once (`POST /api/v1/outbox/park-bulk`, and the form on /outbox/poison):
the rules of the keys' bulk reclassification (dashboard/bulk.py). A preview counts the rows, shows the oldest and
records their ids; a confirmation names the preview's as_of and count, moves exactly the rows it showed that are
still pending and likely poison (a release: still parked), never more than it counted, in batches that skip a row
the relay holds (and come back for it), and is one audit entry each row's entry points to."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from flask import Blueprint, request

from idemdash.dashboard import contract
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.schemas import outbox_bulk as schema
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import outbox_bulk
from idemdash.queries.health import database_now
from idemdash.queries.outbox_bulk import BulkMove

bp = Blueprint("outbox_bulk", __name__)

PREVIEW_MAX_AGE = timedelta(minutes=15)
BATCH = 200
# a row the relay holds is skipped by a batch and tried again, for at most this long
RETRY_SECONDS = 10.0


def filter_in_words(move: BulkMove) -> str:
    what = "likely poison pending outbox rows" if move.action == "park" else "parked outbox rows"
    return what + (f" of event type {move.event_type!r}" if move.event_type is not None else " of every event type")


def preview(move: BulkMove) -> dict:
    """Count and sample what the action would move, and record the preview (with its rows' ids)."""
    db = get_target()
    cap = db.settings.bulk_max_keys
    with db.write() as conn:
        as_of = database_now(conn)
        by_type = outbox_bulk.count_bulk_rows(conn, db.tables, move)
        rows = outbox_bulk.list_bulk_rows(conn, db.tables, move, cap)
        count = sum(c.rows for c in by_type)
        outbox_bulk.insert_bulk_preview(
            conn,
            move,
            as_of,
            candidates=count,
            by_event_type=by_type,
            ids=[r.outbox_id for r in rows],
            actor=current_user().name,
        )
    return {
        "as_of": as_of,
        "action": move.action,
        "count": count,
        "cap": cap,
        "filter": move.to_json(),
        "filter_text": filter_in_words(move),
        "by_event_type": [c.__dict__ for c in by_type],
        "sample": [r.__dict__ for r in rows[: outbox_bulk.SAMPLE_ROWS]],
    }


def apply(move: BulkMove, as_of: Any, reason: str, previewed: int | None) -> dict:
    """Move what the preview at ``as_of`` showed and still qualifies, if the request names the same filter and
    action, never more rows than the preview counted."""
    db = get_target()
    actor = current_user().name
    bulk_id = uuid.uuid4()
    with db.write() as conn:
        if database_now(conn) - as_of > PREVIEW_MAX_AGE:
            raise ActionError(
                409, "the preview is more than 15 minutes old: preview again and confirm what you see now"
            )
        recorded = outbox_bulk.get_bulk_preview(conn, move, as_of)
        if recorded is None:
            raise ActionError(
                409,
                f"no outbox preview was taken at {as_of.isoformat()}: preview first, then confirm "
                "with the as_of it returns. Nothing was changed.",
            )
        if not recorded.matches:
            shown = BulkMove(recorded.action.removeprefix("outbox-"), recorded.filter.get("event_type"))
            raise ActionError(
                409,
                f"this confirmation is to {move.action} {filter_in_words(move)}, but the preview at "
                f"{as_of.isoformat()} showed: {shown.action} {filter_in_words(shown)}. Nothing "
                "was changed: preview again and confirm what it shows.",
            )
        if previewed is not None and previewed != recorded.candidates:
            raise ActionError(
                409,
                f"this confirmation says its preview showed {previewed} rows, but the preview at "
                f"{as_of.isoformat()} counted {recorded.candidates}. Nothing was changed: preview "
                "again and confirm what it shows.",
            )
        ids = recorded.ids
        before = outbox_bulk.count_bulk_left(conn, db.tables, move, ids)
        parent_id = outbox_bulk.insert_bulk_audit(
            conn, move, as_of, reason=reason, actor=actor, bulk_id=bulk_id, previewed=recorded.candidates
        )
        most = min(recorded.candidates, len(ids))
        changed = _batch(conn, move, ids, reason, parent_id, min(BATCH, most)) if most else 0
    deadline = time.monotonic() + RETRY_SECONDS
    while changed < most and time.monotonic() < deadline:
        with db.write() as conn:
            n = _batch(conn, move, ids, reason, parent_id, min(BATCH, most - changed))
            left = outbox_bulk.count_bulk_left(conn, db.tables, move, ids) if not n else 1
        changed += n
        if not left:
            break
        if not n:
            time.sleep(0.05)  # every row still to move is held by the relay right now
    with db.read(primary=True) as conn:
        remaining = outbox_bulk.count_bulk_left(conn, db.tables, move, ids)
    return {
        "bulk_id": str(bulk_id),
        "audit_id": parent_id,
        "as_of": as_of,
        "action": move.action,
        "filter": move.to_json(),
        "filter_text": filter_in_words(move),
        "previewed": recorded.candidates,
        "changed": changed,
        "skipped": max(before - changed, 0) + (len(ids) - before),
        "still_eligible": remaining,
    }


def _batch(conn, move: BulkMove, ids: list[str], reason: str, parent_id: int, size: int) -> int:
    return outbox_bulk.move_bulk_batch(
        conn,
        get_target().tables,
        move,
        ids,
        reason=reason,
        actor=current_user().name,
        parent_id=parent_id,
        batch_size=size,
    )


def _run(body: schema.OutboxBulkBody) -> dict:
    move = BulkMove(body.action, body.filter.event_type)
    if body.preview:
        return preview(move)
    assert body.as_of is not None and body.reason is not None  # the body's model requires them to confirm
    return apply(move, body.as_of, body.reason, body.previewed)


@bp.post("/api/v1/outbox/park-bulk")
@contract.operation(
    "Preview, then park (or release) many outbox rows: every likely poison row of an event type; "
    "a confirmation names the preview's as_of and acts only on what it showed",
    body=schema.OutboxBulkBody,
    ok=schema.OutboxBulkAnswer,
)
@json_action
def park_bulk_api():
    try:
        return schema.OutboxBulkAnswer.model_validate(_run(contract.body(schema.OutboxBulkBody)))
    except ActionError as exc:
        return exc.json()


def _form_body(form: Mapping[str, str], *, confirm: bool) -> schema.OutboxBulkBody:
    data: dict[str, Any] = {"action": form.get("action", "park"), "preview": not confirm}
    if form.get("event_type", "").strip():
        data["filter"] = {"event_type": form["event_type"]}
    for name in ("reason",) + (("as_of", "previewed") if confirm else ()):
        if form.get(name, "").strip():
            data[name] = form[name]
    return contract.form(schema.OutboxBulkBody, data)


@bp.post("/outbox/park-bulk")
@operator_required
def park_bulk_form():
    """The poison list's bulk box: preview, then the confirmation it renders."""
    form = request.form
    confirm = form.get("step") == "confirm"
    try:
        body = _form_body(form, confirm=confirm)
        result = _run(body)
    except ActionError as exc:
        return render("outbox_bulk.html", None, step="error", error=exc.message, form=form, result=None), exc.status
    return render("outbox_bulk.html", None, step="done" if confirm else "preview", form=form, body=body, result=result)
