"""Triage notes on a key (`POST /api/v1/keys/notes`, and the form on the key page): who, when, what.

A note and its audit row are one statement (queries/notes.sql), so it shows in the key's history and in /audit
or nowhere. Writing one is an operator action, like a reclassification: refused to viewers and in read-only mode.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from flask import Blueprint, abort, jsonify, redirect, request

from idemdash.dashboard import request_body
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.keys import key_url
from idemdash.dashboard.request_body import ActionError
from idemdash.dashboard.targets import get_target
from idemdash.queries import notes

bp = Blueprint("notes", __name__)


def parse_note(data: Any) -> tuple[str, str, str]:
    if not isinstance(data, Mapping):
        raise ActionError(400, 'send a JSON object: {"scope": "...", "key": "...", "text": "..."}')
    scope = request_body.text(data, "scope", required=True)
    key = request_body.text(data, "key", required=True, max_length=100_000)
    text = (request_body.text(data, "text", max_length=notes.MAX_NOTE) or "").strip()
    if not text:
        raise ActionError(400, "text is required: what you found or did, for the next person on call")
    return scope, key, text  # type: ignore[return-value]  # request_body.text(required=True) never gives None


def write_note(scope: str, key: str, text: str) -> notes.Note:
    target = get_target()
    with target.write() as conn:
        note = notes.insert_triage_note(conn, target.tables, scope, key, author=current_user().name, text=text)
    if note is None:
        raise ActionError(404, f"no key {key!r} in scope {scope!r}: a note needs a key that exists")
    return note


@bp.post("/api/v1/keys/notes")
@json_action
def api():
    try:
        note = write_note(*parse_note(request.get_json(silent=True)))
    except ActionError as exc:
        return exc.json()
    return jsonify(asdict(note)), 201


@bp.post("/keys/notes")
@operator_required
def form():
    try:
        scope, key, text = parse_note(request.form)
        note = write_note(scope, key, text)
    except ActionError as exc:
        abort(exc.status, exc.message)
    return redirect(key_url(scope, key, noted=note.note_id, _anchor="history"), code=303)
