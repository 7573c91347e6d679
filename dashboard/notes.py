"""Triage notes on a key (`POST /api/v1/keys/notes`, and the form on the key page): who, when, what.

A note and its audit row are one statement (queries/notes.sql), so it shows in the key's history and in /audit
or nowhere. Writing one is an operator action, like a reclassification: refused to viewers and in read-only mode.
"""

from __future__ import annotations

from flask import Blueprint, abort, redirect, request

from idemdash.dashboard import contract
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.links import key_url
from idemdash.dashboard.schemas.audit import Note, NoteBody
from idemdash.dashboard.targets import get_target
from idemdash.queries import notes

bp = Blueprint("notes", __name__)


def write_note(note: NoteBody) -> notes.Note:
    target = get_target()
    with target.write() as conn:
        written = notes.insert_triage_note(
            conn, target.tables, note.scope, note.key, author=current_user().name, text=note.text
        )
    if written is None:
        raise ActionError(404, f"no key {note.key!r} in scope {note.scope!r}: a note needs a key that exists")
    return written


@bp.post("/api/v1/keys/notes")
@contract.operation(
    "Write a triage note on a key (with its audit row, in one statement)", body=NoteBody, ok=Note, status=201
)
@json_action
def api():
    try:
        return Note.model_validate(write_note(contract.body(NoteBody)))
    except ActionError as exc:
        return exc.json()


@bp.post("/keys/notes")
@operator_required
def form():
    # the form's own fields (its CSRF token is not the note's)
    fields = {name: request.form[name] for name in NoteBody.model_fields if name in request.form}
    try:
        note = contract.form(NoteBody, fields)
        written = write_note(note)
    except ActionError as exc:
        abort(exc.status, exc.message)
    return redirect(key_url(note.scope, note.key, noted=written.note_id, _anchor="history"), code=303)
