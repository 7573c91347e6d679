"""What every page and API answer shares: JSON encoding, fragments, headers, errors."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, cast
from urllib.parse import urlencode
from uuid import UUID

from flask import Flask, Response, jsonify, make_response, redirect, render_template, request
from flask.json.provider import DefaultJSONProvider
from htmx_flask import make_response as htmx_response
from htmx_flask.requests import HtmxAwareRequest, HtmxHeaders
from jinja2_fragments.flask import render_block
from werkzeug.http import HTTP_STATUS_CODES

from idemdash.core.formatting import ago, duration, library_moment, plural, pretty_json, utc
from idemdash.core.parsers import split_environment
from idemdash.dashboard import links, one_model, page_reads, partials
from idemdash.dashboard.targets import get_target, signed_in

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)


class JSONProvider(DefaultJSONProvider):
    """ISO 8601 times with their zone (Flask's default is an HTTP date)."""

    sort_keys = False

    @staticmethod
    def default(o: Any) -> Any:
        if isinstance(o, (datetime, date)):
            return o.isoformat()
        if isinstance(o, timedelta):
            return o.total_seconds()
        if isinstance(o, (UUID, Decimal)):
            return str(o)
        return DefaultJSONProvider.default(o)


def wants_json() -> bool:
    return request.path.startswith("/api/")


def htmx_request() -> HtmxHeaders:
    """The request's htmx headers, falsy unless htmx sent it (Htmx() makes every request an HtmxAwareRequest)."""
    return cast(HtmxAwareRequest, request).htmx


def render(template: str, block: str | None = None, **context: Any) -> Response:
    """The whole page, or only ``block`` when htmx asks for a fragment of it."""
    # A history-restore request wants the whole page even though htmx sends it.
    fragment = htmx_request() and not htmx_request().history_restore_request
    page_reads.finish()  # the panels are read: their transaction is not held open while the templates render
    if block is not None and fragment:
        body = render_block(template, block, **context)
    else:
        body = render_template(template, **context)
    response = make_response(body)
    response.vary.add("HX-Request")
    return response


# Form fields a person types, shown editable when a post failed and is offered again (the rest ride along hidden).
RESEND_TEXT_FIELDS = {
    "text": "Note",
    "reason": "Reason",
    "response_body": "response_body (JSON)",
    "result_ref_type": "result_ref_type",
    "result_ref_id": "result_ref_id",
    "hold_for": "Hold for",
}


# What a request nobody signed in for may be told in full: how to sign in, and what was wrong with the request itself.
# Anything else (a 404 naming databases, a 503 with a host or the driver's words) says only its status to them.
TOLD_TO_STRANGERS = frozenset({400, 401, 403, 405, 413, 415, 429})


def error_response(status: int, message: str, *, retry: bool | None = None) -> Response:
    """JSON for the API, a fragment for htmx, else the error page (which reloads itself while ``retry``: 503)."""
    if not signed_in() and status not in TOLD_TO_STRANGERS:
        message = f"{HTTP_STATUS_CODES.get(status, 'Error')}."
    if wants_json():
        response = jsonify({"error": message})
    elif htmx_request():
        # htmx swaps a 4xx answer into the form's target: a message, not a whole page
        response = make_response(render_template("_error_fragment.html", status=status, message=message))
    else:
        # Only a read reloads itself: a browser reloads a page by GET, and a POST-only URL then answers 405 with
        # the typed text gone. A form post that failed shows what was sent, with a button to send it again.
        read = request.method in ("GET", "HEAD")
        resend = list(request.form.items(multi=True)) if not read and status >= 500 else None
        response = make_response(
            render_template(
                "error.html",
                status=status,
                message=message,
                resend=resend,
                resend_text_fields=RESEND_TEXT_FIELDS,
                retry=read and (status == 503 if retry is None else retry),
            )
        )
    response.status_code = status
    return response


def url_with(**changes: Any) -> str:
    """This page's URL with some query arguments changed (None removes one); empty ones are dropped.

    The query string is built here, not by url_for: an argument named like a path variable (``scope``),
    or like url_for's own (``_anchor``, ``_external``, ``endpoint``), must stay a plain query argument.
    """
    args = {k: v for k, v in request.args.items() if v != ""}
    for name, value in changes.items():
        if value is None:
            args.pop(name, None)
        else:
            args[name] = value
    assert request.endpoint is not None, "url_with() needs a request that matched a route"
    path = links.url_for(request.endpoint, **(request.view_args or {}))
    return f"{path}?{urlencode(args)}" if args else path


def drop_empty_query_args():
    """A filter form submits empty fields; the address bar should only hold the filters that apply."""
    if request.method != "GET" or wants_json() or htmx_request() or request.endpoint in (None, "static"):
        return None
    if any(v == "" for v in request.args.values()):
        return redirect(url_with(), code=302)
    return None


def push_clean_url(response: Response) -> Response:
    if (
        htmx_request()
        and request.method == "GET"
        and request.endpoint
        and any(v == "" for v in request.args.values())
        and response.status_code == 200
    ):
        return htmx_response(response, push_url=url_with())
    return response


def security_headers(response: Response) -> Response:
    # the cache rule (docs/security.md): pages, fragments, JSON and error pages show keys, bodies, payloads and
    # names, so no browser or shared cache may keep any of them; only the static files (the same for everyone) may
    if request.endpoint != "static":
        response.headers["Cache-Control"] = "no-store"
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Frame-Options", "DENY")
    return response


def template_globals() -> dict[str, Any]:
    # which database and environment, only to someone signed in: a refused request (401, or 403 for another
    # Host) learns nothing. Both are this request's database's own (IDEMDASH_CONFIG may give each its own).
    if not signed_in():  # nor is a database looked up for them (its name may be one this app does not serve)
        return {"database": None, "database_label": "", "env_band": None, "lease_seconds": 0}
    target = get_target()
    database = target.endpoint
    return {
        "database": database,
        "database_label": database.label,
        "env_band": split_environment(target.settings.environment),
        "lease_seconds": target.settings.default_lease_seconds,
    }


def init_app(app: Flask) -> None:
    # globals, not context: macros imported without context use them too
    app.add_template_global(url_with)
    app.add_template_global(links.url_for, "url_for")  # Flask's, each link kept for the next requests alike
    # this app's routes (every blueprint is registered before its first request), without a lookup of current_app
    app.add_template_global(app.view_functions.__contains__, "has_endpoint")
    app.add_template_global(one_model.header, "model_header")
    partials.init_app(app)  # the times and a key's link, which templates/_macros.html exports
    # Keys may contain '//' and must reach the view unchanged.
    app.url_map.merge_slashes = False
    app.add_template_filter(pretty_json)
    app.add_template_filter(duration)
    app.add_template_filter(ago)
    app.add_template_filter(utc)
    app.add_template_filter(plural)
    app.add_template_filter(library_moment, "moment")
    # scopes or workers whose name contains what was typed into an exact filter (the hint under an empty list)
    app.jinja_env.tests["contains_text"] = lambda value, needle: str(needle).casefold() in str(value).casefold()

    app.json_provider_class = JSONProvider
    app.json = JSONProvider(app)

    app.before_request(drop_empty_query_args)
    app.after_request(push_clean_url)
    app.after_request(security_headers)
    app.context_processor(template_globals)
    page_reads.init_app(app)
