"""Who is asking, and may they act (docs/security.md).

Every request gets ``g.user``, from one of three modes (``IDEMDASH_AUTH``):

- ``none``: everyone is an operator named ``anonymous@<address>``, for this machine only: every request
  must name a loopback Host and come from a loopback peer (DNS rebinding), unless
  ``IDEMDASH_ALLOW_UNAUTHENTICATED=1``; ``idemdash serve`` and ``demo`` also refuse a non-loopback bind;
- ``basic``: HTTP Basic against ``IDEMDASH_USERS_FILE`` (``name:role:hash`` lines);
- ``proxy``: the user and groups headers of an SSO proxy, believed only from
  ``IDEMDASH_PROXY_TRUSTED``, and only when sent once.

A request nobody vouches for gets 401, except the probes, /metrics and static files.

Views that change state are wrapped with ``operator_required`` (forms and htmx,
whose CSRF token Flask-WTF checks before the view runs) or ``json_action``
(the JSON API: application/json instead of a token; every state-changing
``/api/`` request is held to that, decorated or not). No state-changing request
from another site gets that far (dashboard/forgery.py).
``actions_allowed()`` tells templates whether to show action buttons.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from flask import Flask, abort, g, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import BadRequest, TooManyRequests, Unauthorized

from idemdash.core.settings import ConfigError, Settings, split_list
from idemdash.dashboard import forgery, one_model
from idemdash.dashboard.accounts import OPERATOR, VIEWER, PasswordCheck, load_users
from idemdash.dashboard.forgery import check_json_request
from idemdash.dashboard.network import address_in, client_address, is_loopback_request, parse_networks, repeated_headers
from idemdash.dashboard.targets import app_settings, check_database, database_in_path, get_target
from idemdash.dashboard.throttle import SignInThrottle
from idemdash.dashboard.web import error_response

log = logging.getLogger(__name__)


REALM = "idemdash"
# quoted by hand: werkzeug leaves a token-like realm unquoted, which some clients mis-parse
BASIC_CHALLENGE = f'Basic realm="{REALM}", charset="UTF-8"'


@dataclass(frozen=True)
class User:
    name: str
    role: str
    source: str  # 'none', 'basic' or 'proxy'

    @property
    def is_operator(self) -> bool:
        return self.role == OPERATOR


def current_user() -> User:
    user = g.get("user")
    if user is None:  # only the open endpoints (probes, static) run without one
        abort(401, "sign in first")
    return user


# Blueprints whose actions start or stop a job the scheduler runs anyway: a purge, which on another library's
# tables deletes only the rows the library itself counts as finished and old; allowed on a database of any profile.
JOB_BLUEPRINTS = frozenset({"purges", "purge_cancel"})


def _library_rows() -> bool:
    """This request would change another library's rows (a database of a foreign profile, not a job's action)."""
    return not one_model.owns_tables(get_target().settings) and request.blueprint not in JOB_BLUEPRINTS


def actions_allowed() -> bool:
    user = g.get("user")
    if user is None:  # nothing to offer, and a stranger's request names no database to look up
        return False
    return bool(user.is_operator and not get_target().settings.read_only and not _library_rows())


def check_config(config: Settings) -> None:
    """What create_app would refuse, checked before a server starts (ConfigError)."""
    if config.auth == "basic":
        load_users(config.users_file)


# -- who is asking -------------------------------------------------------------------------


class _Untrusted(Unauthorized):
    """Identity headers from an address that is not the proxy: worth a line in the log."""


class _Auth:
    def __init__(self, config: Settings) -> None:
        self.mode = config.auth
        self.trusted = parse_networks(config.proxy_trusted)
        self.user_header = config.proxy_user_header
        self.groups_header = config.proxy_groups_header
        self.operator_groups = frozenset(split_list(config.operator_groups))
        self.passwords = PasswordCheck(load_users(config.users_file)) if self.mode == "basic" else None
        self.throttle = SignInThrottle() if self.mode == "basic" else None

    def identify(self) -> User:
        if self.mode == "basic":
            return self._basic()
        if self.mode == "proxy":
            return self._proxy()
        return User(f"anonymous@{request.remote_addr or 'local'}", OPERATOR, "none")

    def _basic(self) -> User:
        challenge = WWWAuthenticate("basic")  # marks the 401 as a Basic challenge; see unauthorized()
        credentials = request.authorization
        if credentials is None or credentials.type != "basic":
            raise Unauthorized(
                "sign in: idemdash asks for a user name and password (IDEMDASH_AUTH=basic)", www_authenticate=challenge
            )
        assert self.passwords is not None and self.throttle is not None  # set whenever the mode is basic
        address, name = client_address(), credentials.username or ""
        wait = self.throttle.retry_after(address, name)
        if wait is not None:  # before the password is checked: a guess costs nothing and tells nothing
            raise TooManyRequests(
                f"too many failed sign-ins from this address or for this user name: try again in "
                f"{wait} s (see docs/security.md, Failed sign-ins)",
                retry_after=wait,
            )
        account = self.passwords.check(name, credentials.password or "")
        if account is None:
            self.throttle.failed(address, name)
            raise Unauthorized("wrong user name or password", www_authenticate=challenge)
        return User(account.name, account.role, "basic")

    def _proxy(self) -> User:
        if not address_in(request.remote_addr, self.trusted):
            raise _Untrusted(
                f"this request did not come through the sign-in proxy (it came from {request.remote_addr}, "
                "which is not in IDEMDASH_PROXY_TRUSTED), so it is not signed in: open the dashboard through "
                "the proxy's address"
            )
        self._refuse_repeated()
        name = request.headers.get(self.user_header, "").strip()
        if not name:
            raise Unauthorized(
                f"the sign-in proxy sent no {self.user_header} header: configure it to pass the "
                "signed-in user (oauth2-proxy: --set-xauthrequest / --pass-user-headers)"
            )
        if len(name) > 320 or any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise Unauthorized(f"the {self.user_header} header is not a plausible user name")
        groups = set(split_list(request.headers.get(self.groups_header, "")))
        return User(name, OPERATOR if groups & self.operator_groups else VIEWER, "proxy")

    def _refuse_repeated(self) -> None:
        """A proxy that adds its header to the client's instead of replacing it would let the client add a group."""
        repeated = repeated_headers()
        for header in (self.user_header, self.groups_header):
            if header.lower() in repeated:
                raise BadRequest(
                    f"send exactly one {header} header: this request carried several, as when the "
                    "sign-in proxy adds its own to one the client sent. Configure the proxy to set the "
                    "header, replacing any the client sent (see docs/security.md)"
                )


# Answer without signing in: load balancers, Prometheus, and the CSS of the 401 page. Only the plain routes: the
# /db/<name>/… twins of the probes need a user, or a stranger could try names (and open their pools).
_PROBES = frozenset({"probes.healthz", "probes.readyz"})
_OPEN_ENDPOINTS = _PROBES | {"static", "metrics.scrape"}


def _open_endpoint() -> bool:
    return request.endpoint in _OPEN_ENDPOINTS and not database_in_path()


# -- guards ----------------------------------------------------------------------------------


def refuse_action(library_action: bool = False) -> None:  # library_action: dashboard/library_actions.py, refuse
    user = current_user()
    target = get_target()
    if target.settings.read_only:
        abort(403, "idemdash runs read-only (IDEMDASH_READ_ONLY=1): actions are switched off")
    if _library_rows() and not library_action:
        abort(
            403,
            f"database {target.name} holds another library's tables (profile = "
            f'"{target.settings.profile}", IDEMDASH_PROFILE): idemdash changes none of their rows but by '
            "its purges and the library's own actions LIBRARY_ACTIONS enables; see docs/profiles.md",
        )
    if not user.is_operator:
        abort(403, f"{user.name} is a viewer; reclassifying keys and running purges needs the operator role")


def operator_required(view: Callable) -> Callable:
    """A state-changing form or htmx view: operators only (the CSRF token was checked before the view)."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        refuse_action()
        return view(*args, **kwargs)

    return wrapper


def json_action(view: Callable) -> Callable:
    """A state-changing JSON endpoint: same origin only, JSON body only, operators only."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        check_json_request()
        refuse_action()
        return view(*args, **kwargs)

    return wrapper


# -- wiring ------------------------------------------------------------------------------------


def init_app(app: Flask) -> None:
    try:
        auth = _Auth(app_settings(app))
    except ValueError as exc:  # ConfigError, or a network list that bypassed settings.load
        raise ConfigError(str(exc)) from None
    app.extensions["idemdash_auth"] = auth

    @app.before_request
    def this_machine_only() -> None:
        """AUTH=none: whoever can send a request is an operator, so only this machine may (before any other check)."""
        if (
            auth.mode != "none"
            or app_settings(app).allow_unauthenticated
            or request.endpoint == "static"
            or (request.endpoint in _PROBES and not database_in_path())
            or is_loopback_request()
        ):
            return
        log.warning(
            "IDEMDASH_AUTH=none: refused %s %s for host %r from %s (not this machine)",
            request.method,
            request.path,
            request.host,
            request.remote_addr,
        )
        abort(
            403,
            f"refused: this dashboard runs without sign-in (IDEMDASH_AUTH=none), so it answers only "
            f"requests to localhost or a loopback address from this machine, and this one was for "
            f"{request.host[:100]!r} from {request.remote_addr}. Open it as http://127.0.0.1:<port>/ on this "
            "machine, set IDEMDASH_AUTH=basic or proxy to let others sign in, or set "
            "IDEMDASH_ALLOW_UNAUTHENTICATED=1 if something in front already restricts who can connect.",
        )

    @app.before_request
    def identify() -> None:
        g.user = None
        if auth.mode == "none" and not (app_settings(app).allow_unauthenticated or is_loopback_request()):
            return  # a probe from another machine (this_machine_only refused everything else): nobody
        try:
            g.user = auth.identify()
        except (Unauthorized, BadRequest, TooManyRequests) as exc:
            if _open_endpoint():
                return
            if isinstance(exc, _Untrusted):
                log.warning(
                    "proxy sign-in: refused %s %s from %s, which is not in IDEMDASH_PROXY_TRUSTED",
                    request.method,
                    request.path,
                    request.remote_addr,
                )
            raise

    # /db/<name>/… for a name not served: 404 naming those served, now that the user is known
    app.before_request(check_database)

    # then: not from another site, and (forms, htmx) the CSRF token of this user's session
    forgery.init_app(app)

    @app.errorhandler(401)
    def unauthorized(exc: Unauthorized):
        response = error_response(401, exc.description or "sign in first")
        if exc.www_authenticate:
            response.headers["WWW-Authenticate"] = BASIC_CHALLENGE
        return response

    @app.context_processor
    def auth_context() -> dict:
        return {"current_user": g.get("user"), "actions_allowed": actions_allowed(), "auth_mode": auth.mode}
