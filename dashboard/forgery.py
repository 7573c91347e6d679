"""Requests that change something must come from the dashboard itself, from the user it was shown to
(docs/security.md, Requests that change something).

- Every state-changing request whose ``Origin`` (or, without one, ``Referer``) is another site's, or whose
  ``Sec-Fetch-Site`` is ``cross-site``, is refused with 403 before anything runs: forms, htmx and the JSON API.
- Forms and htmx also carry Flask-WTF's CSRF token, and the session it lives in is bound to the signed-in user: a
  request signed in as someone else than the session's user is refused (a session planted in another person's
  browser, say), and that user's next page starts a session, and a token, of their own.
- The JSON API takes no token (scripts call it): JSON bodies only, which no other site can send without a CORS
  preflight that idemdash never grants.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask, abort, current_app, g, has_request_context, request, session
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFError, CSRFProtect

from idemdash.dashboard.network import request_scheme
from idemdash.dashboard.targets import app_settings
from idemdash.dashboard.web import error_response

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# the session's key for the name of the user its CSRF token was issued to
SESSION_USER = "user"

csrf = CSRFProtect()


def own_origin() -> str:
    """This dashboard's ``scheme://host[:port]`` as the browser sees it (a trusted proxy's X-Forwarded-Proto counts)."""
    return f"{request_scheme()}://{request.host}".lower()


def _origin_of(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else url.strip().lower()


def foreign_origin() -> str | None:
    """The header that says another site sent this request (its Origin, else its Referer, or Sec-Fetch-Site), or
    None when it is ours or the request names none (a script)."""
    if request.headers.get("Sec-Fetch-Site", "").strip().lower() == "cross-site":
        return "Sec-Fetch-Site: cross-site"
    for header in ("Origin", "Referer"):  # the Referer only when there is no Origin
        sent = request.headers.get(header)
        if sent is not None:
            return None if _origin_of(sent).rstrip("/") == own_origin() else f"{header} {sent[:200]!r}"
    return None


def refuse_other_sites() -> None:
    """403 for a state-changing request another site made a browser send, before anything is read or changed."""
    other = foreign_origin()
    if other is not None:
        abort(
            403,
            f"refused: this request came from another site ({other}), not from this dashboard "
            f"({own_origin()}). Nothing was changed. Use the dashboard's own pages; a script calling the API "
            "sends no Origin header.",
        )


def check_json_request() -> None:
    """A state-changing JSON API call: not from another site, and a JSON body.

    Scripts send no Origin and pass. A JSON content type cannot be sent cross-origin without a CORS preflight
    (which idemdash never grants).
    """
    refuse_other_sites()
    if not request.is_json:
        abort(415, "send the request body as JSON with Content-Type: application/json")


def _owner() -> str | None:
    """Whom this request's session belongs to: the signed-in user, as the sign-in mode names them. Under
    IDEMDASH_AUTH=none everyone on this machine is the same anonymous operator, whatever loopback address a
    connection comes from (``localhost`` may be ::1 on one connection and 127.0.0.1 on the next)."""
    user = g.get("user")
    if user is None:
        return None
    return "none" if user.source == "none" else f"{user.source}:{user.name}"


def _bind_session_to_user() -> None:
    """The session's CSRF token belongs to one user: refuse a form posted as another, give a page a fresh token."""
    name = _owner()
    if session.get(SESSION_USER) == name:
        return
    field = current_app.config.get("WTF_CSRF_FIELD_NAME", "csrf_token")
    if (
        request.method in STATE_CHANGING
        and request.endpoint is not None
        and not request.path.startswith("/api/")
        and field in session
    ):
        raise CSRFError("The security token of this form was issued to another user than the one now signed in.")
    session.pop(field, None)
    g.pop(field, None)
    if name is None:
        session.pop(SESSION_USER, None)
    else:
        session[SESSION_USER] = name


class _SessionInterface(SecureCookieSessionInterface):
    """The session (the CSRF token and its user) is Secure when asked to be, or when the page came over HTTPS."""

    def get_cookie_secure(self, app: Flask) -> bool:
        if app_settings(app).session_cookie_secure:
            return True
        return has_request_context() and request_scheme() == "https"


def init_app(app: Flask) -> None:
    """Call after the user is known (its checks run in the order registered)."""
    app.config.update(
        SESSION_COOKIE_NAME="idemdash_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # On in tests too (tests switch it off explicitly if they must); the token never expires
        # because the dashboard stays open for a whole shift.
        WTF_CSRF_ENABLED=True,
        WTF_CSRF_TIME_LIMIT=None,
        # checked by csrf_guard below, after the user is known, and not for /api/
        WTF_CSRF_CHECK_DEFAULT=False,
    )
    app.session_interface = _SessionInterface()
    csrf.init_app(app)

    @app.before_request
    def csrf_guard() -> None:
        if request.method in STATE_CHANGING and request.endpoint is not None:
            if request.path.startswith("/api/"):
                check_json_request()
            else:
                refuse_other_sites()
        if not app.config["WTF_CSRF_ENABLED"] or request.path.startswith("/api/"):
            return  # the JSON API takes no CSRF token: no session to bind to the user, no cookie signed and sent
        _bind_session_to_user()
        if request.method in STATE_CHANGING and request.endpoint is not None and not request.path.startswith("/api/"):
            csrf.protect()

    @app.errorhandler(CSRFError)
    def csrf_failed(exc: CSRFError):
        return error_response(
            400,
            f"This form was refused: {exc.description} It carries a security token "
            "(CSRF) that proves it came from this dashboard. Reload the page and submit "
            "again; if it keeps failing, allow cookies for this site.",
        )
