"""Operator actions on keys: reclassify one stuck key, or many with a preview (docs/concepts.md, Reclassification).

Views validate input (400), ask the database to make the change, and turn
"the database said no" into 404 / 409 with the current row. They never
decide eligibility themselves: that is the UPDATE's WHERE clause.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, abort, jsonify, redirect, request
from htmx_flask import make_response as htmx_response
from psycopg import errors

from idemdash.core.triage import suggest
from idemdash.dashboard import bulk, refusals, request_body
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.keys import DETAIL_FIELDS, detail_context, key_json, key_url
from idemdash.dashboard.request_body import ActionError
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

def parse_reclassification(data: object, *, from_form: bool) -> tuple[str, str, dict]:
    if not isinstance(data, Mapping):
        raise ActionError(400, "send a JSON object")
    scope = request_body.text(data, "scope", required=True)
    key = request_body.text(data, "key", required=True, max_length=100_000)
    to = data.get("to")
    if to not in reclassify_queries.OUTCOMES:
        raise ActionError(400, f"to must be one of {', '.join(reclassify_queries.OUTCOMES)}")
    change: dict[str, Any] = {"to": to, "reason": request_body.reason(data),
                              "expected_attempt_count": request_body.whole_number(data, "expected_attempt_count")}
    # The form always carries what it displayed (an empty value means "there was no lease");
    # in JSON the field is optional and checked only when present.
    if from_form or "expected_locked_until" in data:
        change["check_locked_until"] = True
        change["expected_locked_until"] = request_body.moment(data, "expected_locked_until")
    if to == "already_succeeded":
        change["result_ref_type"] = request_body.text(data, "result_ref_type", max_length=200)
        ref_id = request_body.text(data, "result_ref_id", max_length=100)
        if ref_id is not None:
            try:
                ref_id = str(uuid.UUID(ref_id))
            except ValueError:
                raise ActionError(400, "result_ref_id must be a UUID (the column is uuid)") from None
        change["result_ref_id"] = ref_id
        if "response_body" not in data or (from_form and not str(data.get("response_body", "")).strip()):
            raise ActionError(400, "already_succeeded needs the response_body retries should get replayed")
        body = data["response_body"]
        if from_form:
            try:
                body = json.loads(body)
            except ValueError as exc:
                raise ActionError(400, f"response_body is not valid JSON: {exc}") from None
        change["response_body"] = body
    if to == "needs_review":
        change["hold_seconds"] = request_body.hold_seconds(data)
    override = data.get("override_evidence")
    if override not in (None, False, "", "0", "false"):
        if override not in (True, "1", "true", "on"):
            raise ActionError(400, "override_evidence must be true or false")
        if to != "abandoned":
            raise ActionError(400, "override_evidence applies to abandoned only: safe_to_retry with an outbox row "
                                   "would run a committed effect a second time")
        change["override_evidence"] = True
    return scope, key, change  # type: ignore[return-value]


# -- the actions ---------------------------------------------------------------

def _current_key(scope: str, key: str):
    # actions read the primary: what they answer with must be what their compare-and-set saw, not a standby's past
    db = get_target()
    with db.read(primary=True) as conn:
        return keys.get_key(conn, db.tables, scope, key, lease_seconds=get_target().settings["DEFAULT_LEASE_SECONDS"])


def _key_json(row) -> dict | None:
    return None if row is None else key_json(row, DETAIL_FIELDS) | {"stuck": row.stuck}


def reclassify(scope: str, key: str, fields: dict) -> dict:
    """Reclassify one key; returns the key's new row. Raises ActionError (404, 409)."""
    db = get_target()
    config = get_target().settings
    lease = config["DEFAULT_LEASE_SECONDS"]
    before = _current_key(scope, key)
    if before is None:
        raise ActionError(404, f"no key {key!r} in scope {scope!r}")
    with db.read(primary=True) as conn:
        outbox = keys.list_outbox_for_key(conn, db.tables, scope, key)
    evidence = suggest(before, outbox, hotspot_min_attempts=config["HOTSPOT_MIN_ATTEMPTS"], now=before.as_of).evidence
    change = reclassify_queries.Reclassification(actor=current_user().name, evidence=evidence, **fields)
    try:
        with db.write() as conn:
            locked = reclassify_queries.lock_key_for_action(conn, db.tables, scope, key)
            if locked is None:
                raise ActionError(404, f"no key {key!r} in scope {scope!r}: it was deleted meanwhile")
            result = reclassify_queries.reclassify_key(conn, db.tables, locked, change, lease_seconds=lease,
                                                       replay_horizon_seconds=config["REPLAY_HORIZON"])
    except errors.LockNotAvailable as exc:  # 55P03: FOR UPDATE NOWAIT, or the lock timeout
        raise ActionError(409, "an application transaction holds this key right now (its worker may be finishing "
                               "it), so nothing was changed: try again in a moment",
                          _key_json(_current_key(scope, key))) from exc
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
@json_action
def reclassify_api():
    try:
        scope, key, fields = parse_reclassification(request.get_json(silent=True), from_form=False)
        return jsonify(reclassify(scope, key, fields))
    except ActionError as exc:
        return exc.json()


@bp.post("/keys/reclassify")
@operator_required
def reclassify_form():
    form = request.form
    scope, key = form.get("scope", ""), form.get("key", "")
    try:
        scope, key, fields = parse_reclassification(form, from_form=True)
        result = reclassify(scope, key, fields)
    except ActionError as exc:
        if not scope or not key or exc.status == 404:
            abort(exc.status, exc.message)
        context = detail_context(scope, key)
        return render("key.html", None, **context, action_error=exc.message, form=form), exc.status
    return redirect(key_url(scope, key, done=result["audit_id"]), code=303)


@bp.post("/api/v1/keys/reclassify-bulk")
@json_action
def bulk_api():
    data = request.get_json(silent=True)
    try:
        preview = isinstance(data, Mapping) and data.get("preview") is True
        req = bulk.bulk_request(data, preview=preview)
        return jsonify(bulk.bulk_preview(req) if preview else bulk.bulk_apply(req))
    except ActionError as exc:
        return exc.json()


@bp.post("/keys/reclassify-bulk")
@operator_required
def bulk_form():
    """The stuck list's bulk box. Its filter fields come from the list's own filter form (hx-include="#filters"),
    so preview and confirmation take the filters on screen, whatever was changed in place."""
    form = request.form
    # The filters on screen come from the list's filter form (htmx sends it along); without JavaScript, the form
    # carries the ones it was rendered with as default_<name>.
    data = {"filter": {k: form[k] if k in form else form.get(f"default_{k}", "") for k in bulk.BULK_FILTER_FIELDS},
            "to": form.get("to"), "reason": form.get("reason", ""), "as_of": form.get("as_of", ""),
            "all_scopes": form.get("all_scopes", "")}
    preview = form.get("step") != "confirm"
    try:
        if form.get("status", "stuck") != "stuck":
            raise ActionError(400, "bulk reclassification acts on stuck keys: switch the list back to stuck first")
        req = bulk.bulk_request(data, preview=preview)
        if preview:
            return render("bulk.html", "bulk_panel", step="preview", req=req, result=bulk.bulk_preview(req),
                          filters=data["filter"])
        result = bulk.bulk_apply(req)
        body = render("bulk.html", "bulk_panel", step="done", req=req, result=result, filters=data["filter"])
        return htmx_response(body, trigger=KEYS_CHANGED)
    except ActionError as exc:
        return render("bulk.html", "bulk_panel", step="error", error=exc.message, req=None, result=None,
                      filters=data["filter"]), exc.status
