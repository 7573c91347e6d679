"""Operator actions on keys: reclassify one stuck key, or many with a preview (DESIGN section 4).

Views validate input (400), ask the database to make the change, and turn
"the database said no" into 404 / 409 with the current row. They never
decide eligibility themselves: that is the UPDATE's WHERE clause.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Mapping

from flask import Blueprint, abort, current_app, jsonify, redirect, request
from htmx_flask import make_response as htmx_response
from psycopg import errors

from dashboard import panels
from dashboard.auth import current_user, json_action, operator_required
from dashboard.db import get_target
from dashboard.keys import DETAIL_FIELDS, detail_context, key_json, key_url
from dashboard.params import parse_duration
from core.triage import suggest
from core.formatting import duration
from dashboard.web import render
from queries import keys as qkeys
from queries import reclassify as q
from queries.health import database_now

bp = Blueprint("actions", __name__)

MAX_REASON = 2000
MAX_HOLD = timedelta(days=30)
PREVIEW_MAX_AGE = timedelta(minutes=15)
BULK_BATCH = 200
BULK_FILTER_FIELDS = ("scope", "claimed_by", "min_attempts", "overdue")


class ActionError(Exception):
    def __init__(self, status: int, message: str, key: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.key = key


# htmx event the bulk result sends so the key list on the page refreshes (keys.html listens for it)
KEYS_CHANGED = "keys-changed"


@dataclass(frozen=True)
class BulkRequest:
    flt: q.BulkFilter
    to: str
    reason: str
    as_of: datetime | None
    all_scopes: bool = False


# -- input -------------------------------------------------------------------

def _text(data: Mapping[str, Any], name: str, *, required: bool = False, max_length: int = 2000) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise ActionError(400, f"{name} is required")
        return None
    if not isinstance(value, str):
        raise ActionError(400, f"{name} must be a string")
    if len(value) > max_length or "\x00" in value:
        raise ActionError(400, f"{name} must be at most {max_length} characters, without NUL")
    return value


def _reason(data: Mapping[str, Any]) -> str:
    reason = (_text(data, "reason", max_length=MAX_REASON) or "").strip()
    if not reason:
        raise ActionError(400, "a reason is required: say why, for the audit log and the next person on call")
    return reason


def _int(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ActionError(400, f"{name} must be a whole number")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ActionError(400, f"{name} must be a whole number") from None
    if not 1 <= number <= 2_000_000_000:
        raise ActionError(400, f"{name} must be between 1 and 2000000000")
    return number


def _time(data: Mapping[str, Any], name: str) -> datetime | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ActionError(400, f"{name} must be an ISO 8601 time with a zone")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ActionError(400, f"{name} must be an ISO 8601 time with a zone, e.g. 2026-11-21T04:30:00+00:00") from None
    if moment.tzinfo is None:
        raise ActionError(400, f"{name} must include a time zone")
    return moment


def _hold_seconds(data: Mapping[str, Any]) -> float:
    value = data.get("hold_for")
    if value is None or value == "":
        return 86400.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError:
            raise ActionError(400, "hold_for must be seconds or a duration such as 30m, 4h or 2d") from None
    else:
        raise ActionError(400, "hold_for must be seconds or a duration such as 30m, 4h or 2d")
    if not 60 <= seconds <= MAX_HOLD.total_seconds():
        raise ActionError(400, "hold_for must be between 1 minute and 30 days")
    return seconds


def parse_reclassification(data: Mapping[str, Any], *, from_form: bool) -> tuple[str, str, dict]:
    if not isinstance(data, Mapping):
        raise ActionError(400, "send a JSON object")
    scope = _text(data, "scope", required=True)
    key = _text(data, "key", required=True, max_length=100_000)
    to = data.get("to")
    if to not in q.OUTCOMES:
        raise ActionError(400, f"to must be one of {', '.join(q.OUTCOMES)}")
    reason = _reason(data)
    change: dict[str, Any] = {"to": to, "reason": reason,
                              "expected_attempt_count": _int(data, "expected_attempt_count")}
    # The form always carries what it displayed (an empty value means "there was no lease");
    # in JSON the field is optional and checked only when present.
    if from_form or "expected_locked_until" in data:
        change["check_locked_until"] = True
        change["expected_locked_until"] = _time(data, "expected_locked_until")
    if to == "already_succeeded":
        change["result_ref_type"] = _text(data, "result_ref_type", max_length=200)
        ref_id = _text(data, "result_ref_id", max_length=100)
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
        change["hold_seconds"] = _hold_seconds(data)
    return scope, key, change  # type: ignore[return-value]


# -- the actions ---------------------------------------------------------------

def _current_key(scope: str, key: str):
    db = get_target()
    with db.read() as conn:
        return qkeys.get_key(conn, db.tables, scope, key, lease_seconds=current_app.config["DEFAULT_LEASE_SECONDS"])


def _key_json(row) -> dict | None:
    return None if row is None else key_json(row, DETAIL_FIELDS) | {"stuck": row.stuck}


def reclassify(scope: str, key: str, fields: dict) -> dict:
    """Reclassify one key; returns the key's new row. Raises ActionError (404, 409)."""
    db = get_target()
    config = current_app.config
    lease = config["DEFAULT_LEASE_SECONDS"]
    before = _current_key(scope, key)
    if before is None:
        raise ActionError(404, f"no key {key!r} in scope {scope!r}")
    with db.read() as conn:
        outbox = qkeys.list_outbox_for_key(conn, db.tables, scope, key)
    evidence = suggest(before, outbox, hotspot_min_attempts=config["HOTSPOT_MIN_ATTEMPTS"], now=before.as_of).evidence
    change = q.Reclassification(actor=current_user().name, evidence=evidence, **fields)
    try:
        with db.write() as conn:
            locked = q.lock_key_for_action(conn, db.tables, scope, key)
            if locked is None:
                raise ActionError(404, f"no key {key!r} in scope {scope!r}: it was deleted meanwhile")
            result = q.reclassify_key(conn, db.tables, locked, change, lease_seconds=lease,
                                      replay_horizon_seconds=config["REPLAY_HORIZON"])
    except errors.LockNotAvailable as exc:  # 55P03: FOR UPDATE NOWAIT, or the lock timeout
        raise ActionError(409, "an application transaction holds this key right now (its worker may be finishing "
                               "it), so nothing was changed: try again in a moment",
                          _key_json(_current_key(scope, key))) from exc
    after = _current_key(scope, key)
    if not result.changed:
        with db.read() as conn:  # the effect guard refuses safe_to_retry once an outbox row exists
            committed = change.to == "safe_to_retry" and bool(qkeys.list_outbox_for_key(conn, db.tables, scope, key))
        raise ActionError(409, _why_not(locked, change, committed), _key_json(after))
    return {**(_key_json(after) or {}), "audit_id": result.audit_id}


def _why_not(locked: q.LockedKey, change: q.Reclassification, committed: bool) -> str:
    if locked.status != "processing":
        return (f"the key is {locked.status} now, not stuck: its worker or a retry finished it first. "
                "Nothing was overwritten.")
    if change.expected_attempt_count is not None and locked.attempt_count != change.expected_attempt_count:
        return (f"changed since you looked: attempt_count is {locked.attempt_count}, you saw "
                f"{change.expected_attempt_count} (a retry re-claimed it). Nothing was changed.")
    if change.check_locked_until and locked.locked_until != change.expected_locked_until:
        return ("changed since you looked: locked_until is "
                f"{locked.locked_until.isoformat() if locked.locked_until else 'NULL'}, you saw "
                f"{change.expected_locked_until.isoformat() if change.expected_locked_until else 'NULL'}. "
                "Nothing was changed.")
    if committed:
        return ("an outbox row exists for this key now: its business effect committed, so a retry would run it a "
                "second time. Nothing was changed: look at the key again and choose already_succeeded (or "
                "abandoned).")
    return "the key is not stuck: its lease is live (a worker holds it). Nothing was changed."


def _bulk_request(data: Mapping[str, Any], *, preview: bool) -> BulkRequest:
    if not isinstance(data, Mapping):
        raise ActionError(400, "send a JSON object")
    raw = data.get("filter") or {}
    if not isinstance(raw, Mapping):
        raise ActionError(400, "filter must be an object with scope, claimed_by, min_attempts, overdue")
    unknown = set(raw) - set(BULK_FILTER_FIELDS)
    if unknown:
        raise ActionError(400, f"unknown filter fields: {', '.join(sorted(unknown))}")
    overdue = raw.get("overdue")
    try:
        overdue_seconds = None if overdue in (None, "") else (
            float(overdue) if isinstance(overdue, (int, float)) and not isinstance(overdue, bool)
            else parse_duration(str(overdue)))
    except ValueError:
        raise ActionError(400, "filter.overdue must be seconds or a duration such as 10m, 2h or 1d") from None
    if overdue_seconds is not None and not 0 <= overdue_seconds <= 366 * 86400:
        raise ActionError(400, "filter.overdue must be between 0 and 366 days")
    flt = q.BulkFilter(scope=_text(raw, "scope"), claimed_by=_text(raw, "claimed_by"),
                       min_attempts=_int(raw, "min_attempts"), min_overdue_seconds=overdue_seconds)
    to = data.get("to")
    if to not in q.BULK_OUTCOMES:
        raise ActionError(400, f"bulk to must be {' or '.join(q.BULK_OUTCOMES)} (the other outcomes need one key at a time)")
    all_scopes = data.get("all_scopes") in (True, "1", "true", "on")
    if preview:
        return BulkRequest(flt, to, (_text(data, "reason", max_length=MAX_REASON) or "").strip(), None, all_scopes)
    as_of = _time(data, "as_of")
    if as_of is None:
        raise ActionError(400, "as_of is required: the time of the preview you confirmed (preview first)")
    return BulkRequest(flt, to, _reason(data), as_of, all_scopes)


@bp.app_template_filter("bulk_filter_text")
def filter_in_words(flt: Mapping[str, Any]) -> str:
    """A bulk filter (``BulkFilter.to_json()``) as a sentence: what the operator previews and confirms."""
    parts = [f"in scope {flt['scope']!r}" if flt.get("scope") is not None else "in every scope"]
    if flt.get("claimed_by") is not None:
        parts.append(f"claimed by {flt['claimed_by']!r}")
    if flt.get("min_attempts") is not None:
        parts.append(f"with at least {flt['min_attempts']} attempts")
    if flt.get("overdue_seconds") is not None:
        parts.append(f"whose lease ended at least {duration(flt['overdue_seconds'])} ago")
    return "stuck keys " + ", ".join(parts) + " (exact matches)"


def bulk_preview(req: BulkRequest) -> dict:
    """Count and sample what the action would change, and record the preview for its confirmation."""
    db = get_target()
    lease = current_app.config["DEFAULT_LEASE_SECONDS"]
    with db.write() as conn:
        as_of = database_now(conn)
        count = q.count_bulk_candidates(conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease)
        # safe_to_retry leaves out keys whose effect committed (an outbox row): say how many
        committed = 0 if req.to != "safe_to_retry" else q.count_bulk_candidates(
            conn, db.tables, req.flt, as_of, to="abandoned", lease_seconds=lease) - count
        by_scope = q.count_bulk_candidates_by_scope(conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease)
        sample = q.list_bulk_sample(conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease)
        q.insert_bulk_preview(conn, req.flt, req.to, as_of, candidates=count, by_scope=by_scope,
                              actor=current_user().name)
    return {"as_of": as_of, "to": req.to, "count": count, "left_out_committed": committed,
            "cap": current_app.config["BULK_MAX_KEYS"],
            "filter": req.flt.to_json(), "filter_text": filter_in_words(req.flt.to_json()),
            "all_scopes": req.flt.scope is None,
            "by_scope": [{"scope": s.scope, "keys": s.keys} for s in by_scope],
            "sample": [s.__dict__ for s in sample]}


def bulk_apply(req: BulkRequest) -> dict:
    """Change what the preview at ``req.as_of`` showed, if the request names the same filter and outcome."""
    db = get_target()
    config = current_app.config
    lease, cap, horizon = config["DEFAULT_LEASE_SECONDS"], config["BULK_MAX_KEYS"], config["REPLAY_HORIZON"]
    actor = current_user().name
    assert req.as_of is not None
    bulk_id = uuid.uuid4()
    with db.write() as conn:
        now = database_now(conn)
        if req.as_of > now + timedelta(seconds=5):
            raise ActionError(400, "as_of is in the future: use the as_of the preview returned")
        if now - req.as_of > PREVIEW_MAX_AGE:
            raise ActionError(409, "the preview is more than 15 minutes old: preview again and confirm what you see now")
        preview = q.get_bulk_preview(conn, req.flt, req.to, req.as_of)
        if preview is None:
            raise ActionError(409, f"no preview was taken at {req.as_of.isoformat()}: preview first, then confirm "
                                   "with the as_of it returns. Nothing was changed.")
        if not preview.matches:
            raise ActionError(409, f"this confirmation is for {filter_in_words(req.flt.to_json())} → {req.to}, but "
                                   f"the preview at {req.as_of.isoformat()} showed {filter_in_words(preview.filter)} "
                                   f"→ {preview.to_status} (were the filters changed after the preview?). Nothing "
                                   "was changed: preview again and confirm what it shows.")
        if req.flt.scope is None and not req.all_scopes:
            raise ActionError(400, "this would change stuck keys in every scope: name one scope in the filter, or "
                                   "confirm that you mean all of them (\"all_scopes\": true; on the page, tick "
                                   "\"every scope\"). Nothing was changed.")
        before = q.count_bulk_candidates(conn, db.tables, req.flt, req.as_of, to=req.to, lease_seconds=lease)
        parent_id = q.insert_bulk_audit(conn, req.flt, req.to, req.as_of, reason=req.reason, actor=actor,
                                        bulk_id=bulk_id, preview=preview, cap=cap)
        changed = n = _bulk_batch(conn, req, parent_id, min(BULK_BATCH, cap))
    while n and changed < cap:
        with db.write() as conn:
            n = _bulk_batch(conn, req, parent_id, min(BULK_BATCH, cap - changed))
        changed += n
    with db.read() as conn:
        remaining = q.count_bulk_candidates(conn, db.tables, req.flt, req.as_of, to=req.to, lease_seconds=lease)
    return {"bulk_id": str(bulk_id), "audit_id": parent_id, "as_of": req.as_of, "to": req.to,
            "filter": req.flt.to_json(), "filter_text": filter_in_words(req.flt.to_json()),
            "previewed": preview.candidates, "changed": changed, "skipped": max(before - changed, 0),
            "still_eligible": remaining, "cap": cap, "capped": changed >= cap and remaining > 0}


def _bulk_batch(conn, req: BulkRequest, parent_id: int, size: int) -> int:
    config = current_app.config
    return q.reclassify_bulk_batch(conn, get_target().tables, req.flt, req.as_of, to=req.to, reason=req.reason,
                                   actor=current_user().name, lease_seconds=config["DEFAULT_LEASE_SECONDS"],
                                   replay_horizon_seconds=config["REPLAY_HORIZON"], batch_size=size,
                                   parent_id=parent_id)


# -- views -----------------------------------------------------------------------

def _json_error(exc: ActionError):
    body: dict[str, Any] = {"error": exc.message}
    if exc.key is not None:
        body["key"] = exc.key
    return jsonify(body), exc.status


@bp.post("/api/v1/keys/reclassify")
@json_action
def reclassify_api():
    try:
        scope, key, fields = parse_reclassification(request.get_json(silent=True), from_form=False)
        return jsonify(reclassify(scope, key, fields))
    except ActionError as exc:
        return _json_error(exc)


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
        req = _bulk_request(data, preview=preview)
        return jsonify(bulk_preview(req) if preview else bulk_apply(req))
    except ActionError as exc:
        return _json_error(exc)


@bp.post("/keys/reclassify-bulk")
@operator_required
def bulk_form():
    """The stuck list's bulk box. Its filter fields come from the list's own filter form (hx-include="#filters"),
    so preview and confirmation take the filters on screen, whatever was changed in place."""
    form = request.form
    # The filters on screen come from the list's filter form (htmx sends it along); without JavaScript, the form
    # carries the ones it was rendered with as default_<name>.
    data = {"filter": {k: form[k] if k in form else form.get(f"default_{k}", "") for k in BULK_FILTER_FIELDS},
            "to": form.get("to"), "reason": form.get("reason", ""), "as_of": form.get("as_of", ""),
            "all_scopes": form.get("all_scopes", "")}
    preview = form.get("step") != "confirm"
    try:
        if form.get("status", "stuck") != "stuck":
            raise ActionError(400, "bulk reclassification acts on stuck keys: switch the list back to stuck first")
        req = _bulk_request(data, preview=preview)
        if preview:
            return render("bulk.html", "bulk_panel", step="preview", req=req, result=bulk_preview(req),
                          filters=data["filter"])
        result = bulk_apply(req)
        body = render("bulk.html", "bulk_panel", step="done", req=req, result=result, filters=data["filter"])
        return htmx_response(body, trigger=KEYS_CHANGED)
    except ActionError as exc:
        return render("bulk.html", "bulk_panel", step="error", error=exc.message, req=None, result=None,
                      filters=data["filter"]), exc.status
