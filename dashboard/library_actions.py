"""A library's own documented actions on one row of its tables (core/profiles: ``Profile.actions``), where the
database's LIBRARY_ACTIONS enables them: `POST /api/v1/tables/<role>/row/<action>` and the form on the row's page.

idemdash does what the library does, nothing more: the statement (queries/library_actions.py) changes the row only
while it still meets the library's own condition and still holds the values the operator saw, never waits behind
the library, and writes the audit row in the same statement. Read-only mode, the operator role, the CSRF token (a
form) or same origin and a JSON body (the API) are required exactly as for idemdash's own actions."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, g, redirect, request, url_for
from psycopg import errors

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import LibraryAction
from idemdash.core.settings import library_actions
from idemdash.dashboard import contract, one_model, table_rows
from idemdash.dashboard.auth import check_json_request, current_user, refuse_action
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.schemas import library_actions as schema
from idemdash.dashboard.targets import get_target
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.library_actions import applies, expected_text, run_action
from idemdash.queries.profile_rows import get_row

bp = Blueprint("library_actions", __name__)


def library_action_allowed(name: str) -> bool:
    """Whether the signed-in user may do the library action ``name`` on this database (the row page's forms)."""
    user = g.get("user")
    settings = get_target().settings
    return bool(
        user
        and user.is_operator
        and not settings.read_only
        and not one_model.owns_tables(settings)
        and name in library_actions(settings)
    )


def refuse(name: str) -> None:
    """403 unless the user may do the library action ``name`` here: idemdash's own rules for any action (read-only,
    operator role), and the database's LIBRARY_ACTIONS naming it."""
    refuse_action(library_action=True)
    target = get_target()
    if name not in library_actions(target.settings):
        abort(
            403,
            f"{name} is not enabled on database {target.name}: its LIBRARY_ACTIONS setting "
            "(IDEMDASH_LIBRARY_ACTIONS, or library_actions in its [databases.<name>] table) does not name it; "
            "see docs/profiles.md",
        )


@bp.app_context_processor
def _allowed() -> dict:
    return {"library_action_allowed": library_action_allowed}


def _action(found: Found, role: str, name: str) -> LibraryAction:
    chosen = profile(found.profile)
    for action in chosen.actions:
        if action.name == name and role in action.tables:
            return action
    offered = [a.name for a in chosen.actions if role in a.tables]
    raise ActionError(
        404,
        f"{chosen.library} documents no action {name!r} on its {role} table"
        + (f" (it has {', '.join(offered)})" if offered else ""),
    )


def act(role: str, name: str, identity: str, reason: str, expected: dict[str, Any]) -> schema.LibraryActionDone:
    """Do the library's action ``name`` on the row; returns it as it is now. Raises ActionError (400, 404, 409,
    503)."""
    target = get_target()
    with target.read(primary=True) as conn:
        try:
            found = find_configured(conn, target.settings)
        except ShapeNotFound as exc:
            raise ActionError(404, str(exc)) from exc
    action = _action(found, role, name)
    if set(expected) != set(action.expected):
        raise ActionError(
            400,
            f"expected must hold exactly the values you saw of {', '.join(action.expected)} "
            f"(the row page's actions[].expected), got {', '.join(sorted(expected)) or 'none'}",
        )
    try:
        with target.write() as conn:
            result = run_action(
                conn, found, action, role, identity, actor=current_user().name, reason=reason, expected=expected
            )
    except errors.LockNotAvailable as exc:
        raise ActionError(
            409,
            f"{profile(found.profile).library} holds this row right now, so nothing was changed: "
            "look at the row again in a moment",
        ) from exc
    except errors.UndefinedTable as exc:
        raise ActionError(
            503,
            "idemdash's own schema is not in this database, so the action could not be "
            "recorded and nothing was changed: run `idemdash migrate` against it",
        ) from exc
    with target.read(primary=True) as conn:
        row = get_row(conn, found, role, identity)
        still = applies(conn, found, action, role, identity) if row is not None else False
    table = found.table(role) or role
    if row is None:
        raise ActionError(
            404,
            f"no row of {table} has the identity {identity} (the library may have finished it "
            "and deleted it since you looked)",
        )
    if not result.changed:
        raise ActionError(409, _why_not(found, action, row, expected, still), row)
    return schema.LibraryActionDone(
        database=target.name,
        profile=found.profile,
        role=role,
        table=table,
        action=name,
        identity=identity,
        audit_id=result.audit_id or 0,
        row={k: table_rows._cut(v) for k, v in row.items()},
    )


def _why_not(found: Found, action: LibraryAction, row: dict, expected: dict[str, Any], still: bool) -> str:
    changed = [
        f"{c} is {_shown(row.get(named(c, found.naming)))} now, you saw {_shown(v)}"
        for c, v in expected.items()
        if expected_text(row.get(named(c, found.naming))) != expected_text(v)
    ]
    if changed:
        return f"{'; '.join(changed)}: the row changed since you looked. Nothing was changed."
    if not still:
        return (
            f"the row no longer meets {profile(found.profile).library}'s condition for {action.name} "
            f"({action.does}) Nothing was changed."
        )
    return "the row changed while the action ran. Nothing was changed: look at it again."


def _shown(value: Any) -> str:
    return "NULL" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


@bp.post("/api/v1/tables/<role>/row/<action>")
@contract.operation(
    "Do one of the library's own documented actions on one row of its table, where the database's "
    "LIBRARY_ACTIONS enables it: a compare-and-set on the library's condition and the values you saw, "
    "with a reason and an audit row",
    body=schema.LibraryActionBody,
    ok=schema.LibraryActionDone,
    conflict=schema.LibraryActionConflict,
)
def action_api(role: str, action: str) -> Any:
    check_json_request()
    refuse(action)
    try:
        body = contract.body(schema.LibraryActionBody)
        return act(role, action, body.id, body.reason, dict(body.expected))
    except ActionError as exc:
        return exc.json(current="row")


@bp.post("/tables/<role>/row/<action>")
def action_form(role: str, action: str):
    refuse(action)  # the CSRF token was checked before the view (dashboard/auth.py)
    identity = request.form.get("id", "")
    if not identity:
        abort(400, "the form sent no row identity (id): open the row's page and submit its form again")
    # a value the page showed as NULL is sent empty
    expected = {
        name.removeprefix("expected_"): value if value != "" else None
        for name, value in request.form.items()
        if name.startswith("expected_")
    }
    try:
        if request.form.get("confirm") != "yes":
            raise ActionError(400, "tick the box to confirm: the library's row is changed as its own code would")
        body = contract.form(
            schema.LibraryActionBody, {"id": identity, "reason": request.form.get("reason", ""), "expected": expected}
        )
        result = act(role, action, body.id, body.reason, dict(body.expected))
    except ActionError as exc:
        if exc.status == 404:
            abort(404, exc.message)
        return table_rows.row_page_for(role, identity, action_error=exc.message, form=request.form), exc.status
    return redirect(url_for("table_rows.row_page", role=role, id=identity, done=result.audit_id), code=303)
