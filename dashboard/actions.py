"""Operator actions on keys: reclassify one stuck key, or many with a preview (docs/concepts.md, Reclassification).

Views validate input (400), ask the database to make the change, and turn
"the database said no" into 404 / 409 with the current row. They never
decide eligibility themselves: that is the UPDATE's WHERE clause.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, abort, redirect, request
from htmx_flask import make_response as htmx_response
from psycopg import errors

from idemdash.core.triage import suggest
from idemdash.dashboard import bulk, contract, refusals
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.keys import DETAIL_FIELDS, detail_context, key_json
from idemdash.dashboard.links import key_url
from idemdash.dashboard.schemas import actions as schema
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import audit as audit_queries
from idemdash.queries import keys
from idemdash.queries import reclassify as reclassify_queries

bp = Blueprint("actions", __name__)
bp.add_app_template_filter(bulk.filter_in_words, "bulk_filter_text")


# htmx event the bulk result sends so the key list on the page refreshes (keys.html listens for it)
KEYS_CHANGED = "keys-changed"


# -- input -------------------------------------------------------------------

# the form fields each outcome takes besides the common ones (the key page's form carries them all)
OUTCOME_FIELDS = {
    "safe_to_retry": (),
    "abandoned": ("override_evidence",),
    "already_succeeded": ("response_body", "result_ref_type", "result_ref_id"),
    "needs_review": ("hold_for",),
}
COMMON_FIELDS = ("scope", "key", "to", "reason", "expected_attempt_count", "expected_locked_until")


def form_reclassification(form: Mapping[str, str]) -> schema.ReclassifyBody:
    """The key page's form as the API's body: its empty fields absent but the lease it displayed (empty: there was
    none, which is checked too), only the chosen outcome's fields, response_body parsed as JSON."""
    to = form.get("to", "")
    data: dict[str, Any] = {
        name: form[name] for name in COMMON_FIELDS + OUTCOME_FIELDS.get(to, ()) if form.get(name, "") != ""
    }
    data["expected_locked_until"] = form.get("expected_locked_until") or None
    if to == "already_succeeded":
        if not form.get("response_body", "").strip():
            raise ActionError(400, "already_succeeded needs the response_body retries should get replayed")
        try:
            data["response_body"] = json.loads(form["response_body"])
        except ValueError as exc:
            raise ActionError(400, f"response_body is not valid JSON: {exc}") from None
    if "override_evidence" in data:
        data["override_evidence"] = data["override_evidence"] in ("1", "true", "on")
    return contract.form(schema.ReclassifyBody, data)


def change_of(body: schema.ReclassifyBody) -> tuple[str, str, dict[str, Any]]:
    """The request as the fields of a Reclassification (queries/reclassify.py)."""
    request = body.root
    change: dict[str, Any] = {
        "to": request.to,
        "reason": request.reason,
        "expected_attempt_count": request.expected_attempt_count,
    }
    # checked only when given: JSON null means "there was no lease" (the form always gives it)
    if "expected_locked_until" in request.model_fields_set:
        change["check_locked_until"] = True
        change["expected_locked_until"] = request.expected_locked_until
    if isinstance(request, schema.AlreadySucceeded):
        change |= {
            "result_ref_type": request.result_ref_type,
            "response_body": request.response_body,
            "result_ref_id": None if request.result_ref_id is None else str(request.result_ref_id),
        }
    elif isinstance(request, schema.NeedsReview):
        change["hold_seconds"] = request.hold_for
    elif isinstance(request, schema.Abandoned) and request.override_evidence:
        change["override_evidence"] = True
    return request.scope, request.key, change


# -- the actions ---------------------------------------------------------------


def _current_key(scope: str, key: str):
    # actions read the primary: what they answer with must be what their compare-and-set saw, not a standby's past
    db = get_target()
    with db.read(primary=True) as conn:
        return keys.get_key(conn, db.tables, scope, key, lease_seconds=get_target().settings.default_lease_seconds)


def _key_json(row) -> dict | None:
    return None if row is None else key_json(row, DETAIL_FIELDS) | {"stuck": row.stuck}


def reclassify(scope: str, key: str, fields: dict) -> dict:
    """Reclassify one key; returns the key's new row. Raises ActionError (404, 409)."""
    db = get_target()
    config = get_target().settings
    lease = config.default_lease_seconds
    before = _current_key(scope, key)
    if before is None:
        raise ActionError(404, f"no key {key!r} in scope {scope!r}")
    with db.read(primary=True) as conn:
        outbox = keys.list_outbox_for_key(conn, db.tables, scope, key)
    evidence = suggest(before, outbox, hotspot_min_attempts=config.hotspot_min_attempts, now=before.as_of).evidence
    change = reclassify_queries.Reclassification(actor=current_user().name, evidence=evidence, **fields)
    try:
        with db.write() as conn:
            locked = reclassify_queries.lock_key_for_action(conn, db.tables, scope, key)
            if locked is None:
                raise ActionError(404, f"no key {key!r} in scope {scope!r}: it was deleted meanwhile")
            result = reclassify_queries.reclassify_key(
                conn, db.tables, locked, change, lease_seconds=lease, replay_horizon_seconds=config.replay_horizon
            )
    except errors.LockNotAvailable as exc:  # 55P03: FOR UPDATE NOWAIT, or the lock timeout
        raise ActionError(
            409,
            "an application transaction holds this key right now (its worker may be finishing "
            "it), so nothing was changed: try again in a moment",
            _key_json(_current_key(scope, key)),
        ) from exc
    after = _current_key(scope, key)
    if not result.changed:
        with db.read(primary=True) as conn:
            guarded = change.to in reclassify_queries.EVIDENCE_GUARDED and not change.override_evidence
            rows = keys.list_outbox_for_key(conn, db.tables, scope, key) if guarded else []
            last = next(iter(audit_queries.list_audit_for_key(conn, scope, key, limit=1)), None)
        raise ActionError(409, refusals.why_not(locked, change, rows, last, now=before.as_of), _key_json(after))
    return {**(_key_json(after) or {}), "audit_id": result.audit_id}


# -- views -----------------------------------------------------------------------


@bp.post("/api/v1/keys/reclassify")
@contract.operation(
    "Reclassify one stuck key: compare-and-set on what you saw, with a reason, audited",
    body=schema.ReclassifyBody,
    ok=schema.Reclassified,
    conflict=schema.KeyConflict,
)
@json_action
def reclassify_api():
    try:
        return schema.Reclassified.model_validate(reclassify(*change_of(contract.body(schema.ReclassifyBody))))
    except ActionError as exc:
        return exc.json()


@bp.post("/keys/reclassify")
@operator_required
def reclassify_form():
    form = request.form
    scope, key = form.get("scope", ""), form.get("key", "")
    try:
        scope, key, fields = change_of(form_reclassification(form))
        result = reclassify(scope, key, fields)
    except ActionError as exc:
        if not scope or not key or exc.status == 404:
            abort(exc.status, exc.message)
        context = detail_context(scope, key)
        return render("key.html", None, **context, action_error=exc.message, form=form), exc.status
    return redirect(key_url(scope, key, done=result["audit_id"]), code=303)


@bp.post("/api/v1/keys/reclassify-bulk")
@contract.operation(
    "Preview, then reclassify many stuck keys: a confirmation names the preview's as_of and acts "
    "only on what it showed",
    body=schema.BulkBody,
    ok=schema.BulkAnswer,
)
@json_action
def bulk_api():
    try:
        req = bulk.bulk_request(contract.body(schema.BulkBody))
        return schema.BulkAnswer.model_validate(bulk.bulk_preview(req) if req.preview else bulk.bulk_apply(req))
    except ActionError as exc:
        return exc.json()


@bp.post("/keys/reclassify-bulk")
@operator_required
def bulk_form():
    """The stuck list's bulk box. Its filter fields come from the list's own filter form (hx-include="#filters"),
    so preview and confirmation take the filters on screen, whatever was changed in place."""
    form = request.form
    # the filters on screen, as the result shows them (bulk.form_request reads them the same way)
    filters = {k: form[k] if k in form else form.get(f"default_{k}", "") for k in bulk.BULK_FILTER_FIELDS}
    preview = form.get("step") != "confirm"
    try:
        if form.get("status", "stuck") != "stuck":
            raise ActionError(400, "bulk reclassification acts on stuck keys: switch the list back to stuck first")
        req = bulk.bulk_request(bulk.form_request(form, preview=preview))
        if preview:
            return render(
                "bulk.html", "bulk_panel", step="preview", req=req, result=bulk.bulk_preview(req), filters=filters
            )
        result = bulk.bulk_apply(req)
        body = render("bulk.html", "bulk_panel", step="done", req=req, result=result, filters=filters)
        return htmx_response(body, trigger=KEYS_CHANGED)
    except ActionError as exc:
        return render(
            "bulk.html", "bulk_panel", step="error", error=exc.message, req=None, result=None, filters=filters
        ), exc.status
