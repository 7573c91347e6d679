"""The search box in every page's header (`/search`) and its JSON twin: paste a key, land on it whatever its scope."""
from __future__ import annotations

from dataclasses import asdict

from flask import Blueprint, abort, jsonify, redirect

from idemdash.dashboard import panels, query_args
from idemdash.dashboard.keys import key_url
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import search

bp = Blueprint("search", __name__)

MAX_QUERY = 10_000   # keys are arbitrary text; a primary-key entry holds at most about 2,700 bytes anyway


def _search():
    text = query_args.text("q", max_length=MAX_QUERY)
    scope = query_args.text("scope")
    if text is None:
        return None, scope, None
    target = get_target()
    panel = panels.load(search.search_keys, target.tables, text, scope=scope,
                        lease_seconds=get_target().settings["DEFAULT_LEASE_SECONDS"])
    return text, scope, panel


def _hit_json(hit: search.SearchHit) -> dict:
    return asdict(hit) | {"url": key_url(hit.scope, hit.key)}


@bp.get("/search")
def page():
    text, scope, panel = _search()
    if panel is not None and panel.ok and panel.value.match == "exact" and len(panel.value.items) == 1:
        hit = panel.value.items[0]
        return redirect(key_url(hit.scope, hit.key), code=302)   # one key has this name: go there
    return render("search.html", None, q=text, scope=scope, panel=panel,
                  max_scopes=search.MAX_SCOPES, prefix_limit=search.PREFIX_LIMIT, per_scope=search.PREFIX_PER_SCOPE_ACROSS)


@bp.get("/api/v1/search")
def api():
    text, scope, panel = _search()
    if panel is None:
        abort(400, "q is required: the key to find (exact, in every scope), or the start of one, e.g. ?q=cart/42")
    result = panels.require(panel)
    return jsonify({
        "q": result.q,
        "scope": result.scope,
        "match": result.match,
        "items": [_hit_json(hit) for hit in result.items],
        "next_cursor": None,
        "scopes": result.scopes,
        "workers": result.workers,
        "scopes_searched": result.scopes_searched,
        "scopes_truncated": result.scopes_truncated,
        "prefix_limited": result.prefix_limited,
        "definitions": {
            "match": "exact: keys named exactly q (in scope, or in every scope; 'scope/key' and a pasted key URL "
                     "are understood too); prefix: no exact match, keys starting with q; none: neither",
            "items": f"exact matches, or at most {search.PREFIX_LIMIT} prefix matches (with no scope: at most "
                     f"{search.PREFIX_PER_SCOPE_ACROSS} per scope)",
            "scopes": "scope names containing q, ignoring case",
            "workers": f"workers (claimed_by) containing q, ignoring case, among those of the {search.WORKER_SAMPLE} "
                       "processing keys with the latest leases",
            "scopes_truncated": f"true when there are more than {search.MAX_SCOPES} scopes: keys in the others were "
                                "not looked for (name the scope)",
        },
    })
