"""The links pages build: ``url_for`` kept for the next requests alike, a key's page, a runbook."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import flask
from flask import current_app, g, has_request_context, request

from idemdash.dashboard.targets import app_settings, current_database, get_target

# links kept per app: at most this many for one place the app is mounted and one database, then they start over
KEPT_MAX = 10_000
KEPT_CONTEXTS_MAX = 64


def url_for(endpoint: str, **values: Any) -> str:
    """``flask.url_for``, each answer kept for the next requests that would build it alike.

    A list page links every row to a filter of its own scope and worker, and every page its header's links: the same
    URLs request after request, each build walking the url_defaults and the URL map (5 % of `/`). An answer depends on
    the endpoint and the values, and on the request only through where the app is mounted (its script root) and the
    database the page is in (``stay_in_database``, dashboard/databases.py, adds it to a link): the URL map is built
    at start. So the answers are kept per script root and database, for every request of this app; a relative
    endpoint (``.page``) or a url_for option (``_external``: the request's host) is built every time.
    """
    kept = _kept()
    try:
        # the types too: True and 1 are equal keys of a dict, but url_for writes them differently
        memo_key = (endpoint, tuple(values.items()), tuple(map(type, values.values())))
        url = kept.get(memo_key) if kept is not None else None
    except TypeError:  # a value that cannot be a key (a list of values): built every time
        return flask.url_for(endpoint, **values)
    if url is None:
        url = flask.url_for(endpoint, **values)
        if kept is not None and not endpoint.startswith(".") and not any(name.startswith("_") for name in values):
            kept[memo_key] = url
    return url


def _kept() -> dict | None:
    """The links kept for this request's script root and database (looked up once per request, ``g``); None outside
    a request."""
    if not has_request_context():
        return None
    kept = g.get("idemdash_urls")
    if kept is None:
        every: dict = current_app.extensions.setdefault("idemdash_links", {})
        context = (request.script_root, current_database())
        kept = every.get(context)
        if kept is None or len(kept) >= KEPT_MAX:  # links with values typed into filters: start over now and then
            if len(every) >= KEPT_CONTEXTS_MAX:
                every.clear()
            kept = every[context] = {}
        g.idemdash_urls = kept
    return kept


def _path_safe(scope: str, key: str) -> bool:
    """Whether /keys/<scope>/<key> round-trips through a browser (which folds '.' and '..' segments)."""
    if not scope or not key or "/" in scope or scope in (".", "..") or key.startswith("/"):
        return False
    return not any(segment in (".", "..") for segment in key.split("/"))


def key_url(scope: str, key: str, *, api: bool = False, **query: Any) -> str:
    if _path_safe(scope, key):
        endpoint = "keys.detail_api" if api else "keys.detail_page"
        return _key_path(endpoint, scope, key) if not query else url_for(endpoint, scope=scope, key=key, **query)
    return url_for("keys.detail_api_by_query" if api else "keys.detail_page_by_query", scope=scope, key=key, **query)


# what werkzeug's converters leave unquoted in a path segment (https://url.spec.whatwg.org/#url-path-segment-string)
SEGMENT_SAFE = "!$&'()*+,/:;=@"
# stand-ins for a scope and a key: quote() leaves them as they are, and the request's pattern is cut at them
_SCOPE, _KEY = "idemdash-scope-stand-in", "idemdash-key-stand-in"


def _key_path(endpoint: str, scope: str, key: str) -> str:
    """``url_for(endpoint, scope=scope, key=key)`` for a key whose path is safe, from the endpoint's pattern, kept
    with the links (``_kept``): the stuck list links every row to its key, each link a different key, so the links
    kept by ``url_for`` never repeat. werkzeug builds this path as the rule's fixed parts around each value quoted
    by its converter (``quote(value, safe=SEGMENT_SAFE)`` for both ``<scope>`` and ``<path:key>``); the pattern is
    url_for's own answer for the stand-ins, so the prefix (the script root, a database's ``/db/<name>``) is the one
    url_for writes. A pattern the stand-ins do not cut cleanly is not kept: url_for builds each link then."""
    patterns = _kept()
    if patterns is None:
        return flask.url_for(endpoint, scope=scope, key=key)
    parts = patterns.get(("key path", endpoint))
    if parts is None:
        pattern = flask.url_for(endpoint, scope=_SCOPE, key=_KEY)
        before, _, rest = pattern.partition(_SCOPE)
        middle, _, after = rest.partition(_KEY)
        clean = pattern.count(_SCOPE) == pattern.count(_KEY) == 1 and _KEY in rest
        parts = patterns[("key path", endpoint)] = (before, middle, after) if clean else ()
    if not parts:
        return url_for(endpoint, scope=scope, key=key)
    before, middle, after = parts
    return before + quote(scope, safe=SEGMENT_SAFE) + middle + quote(key, safe=SEGMENT_SAFE) + after


# the built-in runbooks, by the name IDEMDASH_RUNBOOK_URL's {runbook} is filled with
RUNBOOKS = {"stuck-keys": "runbooks.stuck_keys", "outbox-backlog": "runbooks.outbox_backlog"}


def runbook_url(scope: str, key: str, status: str, kind: str = "stuck-keys") -> str:
    """The runbook link: IDEMDASH_RUNBOOK_URL filled in, or the built-in runbook ``kind``.

    A template with ``{runbook}`` serves every runbook (filled with ``stuck-keys`` or ``outbox-backlog``); one
    without it was written for stuck keys, and the outbox keeps its built-in runbook.
    """
    template = app_settings().runbook_url
    if not template or (kind != "stuck-keys" and "{runbook}" not in template):
        if kind == "stuck-keys":
            return url_for(RUNBOOKS[kind], scope=scope, key=key)
        return url_for(RUNBOOKS[kind])
    # str.replace, not str.format: a template may contain other braces.
    return (
        template.replace("{scope}", quote(scope, safe=""))
        .replace("{key}", quote(key, safe=""))
        .replace("{status}", quote(status, safe=""))
        .replace("{database}", quote(get_target().name, safe=""))
        .replace("{runbook}", quote(kind, safe=""))
    )
