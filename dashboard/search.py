"""The search box in every page's header (`/search`) and its JSON twin: paste a key, land on it whatever its scope."""

from __future__ import annotations

import json
from dataclasses import asdict

from flask import Blueprint, redirect, url_for

from idemdash.dashboard import contract, panels, profile_reads, profile_search
from idemdash.dashboard.links import key_url
from idemdash.dashboard.schemas import search as schema
from idemdash.dashboard.schemas.profile_search import SearchAnswer
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import search

bp = Blueprint("search", __name__)


@bp.app_template_filter()
def identity_label(identity: str) -> str:
    """A library row's identity (a JSON array, as its URL has it) as people read it: the values, joined."""
    try:
        values = json.loads(identity)
    except ValueError:
        return identity
    return " · ".join(str(v) for v in values) if isinstance(values, list) else identity


def _search(model: type[schema.SearchQuery]):
    args = contract.query(model)
    # what a paste adds around a key (a space, a newline) is not part of it
    typed = args.q
    text = (typed or "").strip() or None
    scope = (args.scope or "").strip() or None
    if text is None:
        return None, scope, None
    target = get_target()
    panel = panels.load(
        search.search_keys,
        target.tables,
        text,
        scope=scope,
        typed=typed,
        lease_seconds=get_target().settings.default_lease_seconds,
    )
    return text, scope, panel


def _hit_json(hit: search.SearchHit) -> schema.SearchHit:
    return schema.SearchHit(**asdict(hit), url=key_url(hit.scope, hit.key))


def _outbox_json(hit: search.OutboxHit) -> schema.OutboxHit:
    return schema.OutboxHit(**asdict(hit), url=url_for("outbox_rows.detail_page", outbox_id=hit.outbox_id))


def _only_place(result: search.SearchResult) -> str | None:
    """The one page the text names, if it names exactly one thing: a key, or an outbox row by its id."""
    if result.match == "exact" and len(result.items) == 1 and not result.outbox and not result.messages:
        return key_url(result.items[0].scope, result.items[0].key)
    if not result.items and not result.messages and [h.matched for h in result.outbox] == ["outbox_id"]:
        return url_for("outbox_rows.detail_page", outbox_id=result.outbox[0].outbox_id)
    return None


def _profile_page():
    text = (contract.query(schema.SearchPageQuery).q or "").strip() or None
    panel = profile_search.load(text) if text is not None else None
    place = profile_search.only_place(panel.value) if panel is not None and panel.ok and panel.value else None
    if place is not None:
        return redirect(place, code=302)  # one row has this identity: go there
    return render("search_profile.html", None, q=text, panel=panel, library=profile_reads.chosen().library)


@bp.get("/search")
def page():
    if not profile_reads.rich("keys"):
        return _profile_page()
    text, scope, panel = _search(schema.SearchPageQuery)
    place = _only_place(panel.value) if panel is not None and panel.ok else None
    if place is not None:
        return redirect(place, code=302)  # one key or outbox row has this name: go there
    return render(
        "search.html",
        None,
        q=text,
        scope=scope,
        panel=panel,
        max_scopes=search.MAX_SCOPES,
        prefix_limit=search.PREFIX_LIMIT,
        per_scope=search.PREFIX_PER_SCOPE_ACROSS,
    )


@bp.get("/api/v1/search")
@contract.operation(
    "Find a key whatever its scope (exact, else by prefix), scopes and workers by name, outbox rows "
    "by id and inbox messages by message_id; on a library's database, rows of every role table by "
    "their identity columns, and owners by name",
    query=schema.SearchQuery,
    ok=SearchAnswer,
)
def api() -> SearchAnswer:
    if not profile_reads.rich("keys"):
        return SearchAnswer(panels.require(profile_search.load(contract.query(schema.SearchQuery).q.strip())))
    return SearchAnswer(_reference_api())


def _reference_api() -> schema.SearchResult:
    _, _, panel = _search(schema.SearchQuery)
    assert panel is not None  # q is required here, and says something
    result = panels.require(panel)
    return schema.SearchResult.model_validate(
        {
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
            "outbox": [_outbox_json(hit) for hit in result.outbox],
            "messages": result.messages,
            "nearest": [schema.NearKey(**asdict(near), url=key_url(near.scope, near.key)) for near in result.nearest],
            "definitions": {
                "match": "exact: keys named exactly q (in scope, or in every scope; 'scope/key' and a pasted key URL "
                "are understood too); prefix: no exact match, keys starting with q; none: neither",
                "items": f"exact matches, or at most {search.PREFIX_LIMIT} prefix matches (with no scope: at most "
                f"{search.PREFIX_PER_SCOPE_ACROSS} per scope)",
                "scopes": "scope names containing q, ignoring case",
                "workers": f"workers (claimed_by) named q exactly (first), then those containing q ignoring case (at "
                f"most {search.NAMES_SHOWN}), whatever their keys' state: among the owners of failed keys "
                f"(the first {search.MAX_FAILING_OWNERS} by name; by its exact name any of them), of the "
                f"{search.OWNER_SAMPLE} latest succeeded keys and of the {search.OWNER_SAMPLE} processing "
                "keys with the latest and with the oldest leases",
                "q": "the text searched, white space around it trimmed; a UUID-shaped text is also looked for in lower "
                "and upper case",
                "outbox": f"outbox rows whose outbox_id is q, else those whose aggregate_id is q (at most "
                f"{search.OTHER_ROWS_LIMIT}; only when q is a UUID and no scope is named)",
                "messages": f"inbox rows whose message_id is q, in every consumer (at most {search.OTHER_ROWS_LIMIT})",
                "nearest": f"when nothing else matched: the keys just before and after q in each scope's key order "
                f"that share a start with it, longest shared start first (at most {search.NEAREST_SHOWN})",
                "scopes_truncated": f"true when there are more than {search.MAX_SCOPES} scopes: keys in the others "
                "were "
                "not looked for (name the scope)",
            },
        }
    )
