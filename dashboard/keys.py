"""Key lists (`/keys`), one key (`/keys/<scope>/<key>`), and their JSON twins."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from flask import Blueprint, abort

from idemdash.core.fill_in import FillIn, fill_ins
from idemdash.core.triage import OUTCOMES, suggest
from idemdash.dashboard import (
    contract,
    key_breakdown,
    key_filters,
    key_tabs,
    one_model,
    panels,
    profile_lists,
    table_rows,
)
from idemdash.dashboard.links import key_url, runbook_url
from idemdash.dashboard.schemas import key_page
from idemdash.dashboard.schemas import keys as schema
from idemdash.dashboard.schemas.profile_pages import ProfileRows
from idemdash.dashboard.schemas.table_rows import Row
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import htmx_request, render
from idemdash.queries import keys
from idemdash.queries.audit import list_audit_for_key
from idemdash.queries.notes import list_notes_for_key
from idemdash.queries.search import list_recent_workers

bp = Blueprint("keys", __name__)
# the links every page builds to a key and to its runbook (dashboard/links.py)
bp.add_app_template_global(key_url)
bp.add_app_template_global(runbook_url)

LIST_FIELDS = (
    "scope",
    "key",
    "status",
    "request_hash",
    "claimed_by",
    "claimed_at",
    "locked_until",
    "overdue_seconds",
    "attempt_count",
    "created_at",
    "updated_at",
    "expires_at",
)
DETAIL_FIELDS = LIST_FIELDS + ("response_body", "result_ref_type", "result_ref_id", "failure_code", "failure_message")
# a group of stuck keys by suggested outcome, as the stuck list names it: the evidence, then the question
SUGGESTION_WORDS = {
    "already_succeeded": ("with an outbox row", "already succeeded?"),
    "safe_to_retry": ("with no effect recorded", "safe to retry"),
    "needs_review": ("attempted many times", "needs review"),
    "abandoned": ("past their replay window", "abandoned?"),
}
# the index a key list needs (named in a timed-out panel)
LIST_INDEX = {"stuck": "index_keys_leases", "processing": "index_keys_leases", "needs_review": "index_keys_held"}


def key_json(row: keys.KeyRow, fields: tuple[str, ...] = LIST_FIELDS) -> dict:
    """A key as the JSON API shows it; a key held for review also says until when, by whom and why."""
    hold = None
    if row.held:
        hold = {"until": row.locked_until, "by": row.held_by, "reason": row.hold_reason, "at": row.held_at}
    return {f: getattr(row, f) for f in fields} | {"hold": hold}


def _list_panel():
    args = contract.query(schema.KeyListQuery)
    flt, ignored = key_filters.read(args)
    limit, after, order = args.limit, args.cursor, args.order or keys.DEFAULT_ORDER[flt.status]
    db = get_target()
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        panel = panels.load(
            keys.list_keys,
            db.tables,
            flt,
            lease_seconds=db.settings.default_lease_seconds,
            after=after,
            limit=limit,
            order=order,
            hotspot_min_attempts=db.settings.hotspot_min_attempts,
            index=LIST_INDEX.get(flt.status, "index_keys_updated"),
        )
    except ValueError as exc:
        abort(400, str(exc))
    return flt, ignored, limit, after, order, panel


def _tabs(flt: keys.KeyFilter) -> panels.Panel[list[key_tabs.Tab]]:
    """The state tabs, the terminal and failed ones within the window asked for even on a tab it does not apply to
    (their links carry it)."""
    return key_tabs.load(flt.status, contract.query(schema.KeyListQuery).updated_within)


def _rich() -> bool:
    """Whether the keys table records an operator's decisions (the reference tables): else the profile's reads."""
    return one_model.rich(get_target().settings, "keys")


@bp.get("/keys")
def list_page():
    if not _rich():
        return profile_lists.keys_page()
    flt, ignored, limit, after, order, panel = _list_panel()
    tables = get_target().tables
    scopes = panels.load(keys.list_scopes, tables)
    # the worker suggestions sit in the filter form, outside the fragment a refresh swaps: full pages, or a hint
    workers = (
        panels.load(list_recent_workers, tables, index="index_keys_leases")
        if not htmx_request() or flt.claimed_by
        else panels.Panel(value=[])
    )
    tabs = _tabs(flt)  # first: a tab counted past the cap spares its breakdown a read
    matching = key_filters.matching(flt, limit)
    empty = panel.ok and panel.value is not None and not panel.value.items and after is None
    return render(
        "keys.html",
        "keys_panel",
        flt=flt,
        limit=limit,
        after=after,
        order=order,
        panel=panel,
        tabs=tabs,
        scopes=scopes.value or [],
        workers=workers.value or [],
        statuses=keys.KEY_STATUSES,
        as_of=datetime.now(timezone.utc),
        ignored=ignored,
        filters_text=key_filters.in_words(flt),
        matching=matching,
        applies=key_filters.APPLIES,
        groups=key_filters.suggestion_groups(flt, panel),
        suggestions=SUGGESTION_WORDS,
        breakdown=key_breakdown.load(flt, panel),
        breakdown_top=key_breakdown.TOP,
        window_seconds=contract.query(schema.KeyListQuery).updated_within,
        window_words=key_filters.window_words,
        loosened=key_filters.without_each(flt, limit) if empty and key_filters.filtered(flt) else [],
    )


@bp.get("/api/v1/keys")
@contract.operation(
    "Key list, with prev_cursor, the count of every state (exact up to count_cap), how many keys "
    "match the filters, and the stuck keys per suggested outcome",
    query=schema.KeyListQuery,
    ok=schema.KeyList,
    also=(ProfileRows,),
)
def list_api() -> schema.KeyList | ProfileRows:
    if not _rich():
        return profile_lists.rows_answer("keys", profile_lists.read_rows("keys"))
    flt, ignored, limit, after, order, panel = _list_panel()
    page = panels.require(panel)
    tabs = _tabs(flt)
    groups = panels.require(key_filters.suggestion_groups(flt, panel))
    return schema.KeyList.model_validate(
        {
            "items": [key_json(row) for row in page.items],
            "next_cursor": page.next_cursor,
            "prev_cursor": page.prev_cursor,
            "order": order,
            "counts": key_tabs.counts_json(panels.require(tabs)),
            "count_cap": key_tabs.COUNT_CAP,
            "matching": panels.require(key_filters.matching(flt, limit)),
            "suggestions": groups,
            "suggestions_cap": limit,
            "not_applied": [{"filter": name, "applies_to": key_filters.APPLIES[name]} for name in ignored],
        }
    )


def detail_context(scope: str, key: str) -> dict:
    """Everything the key page shows (404 when there is no such key)."""
    data = _detail(scope, key, fill_in=True)
    row = data["key"]
    return {
        **data,
        "outcomes": OUTCOMES,
        "runbook": runbook_url(row.scope, row.key, "stuck" if row.stuck else row.status),
    }


def _detail(scope: str, key: str, *, fill_in: bool = False) -> dict:
    """The key, its outbox rows, history and suggestion; with ``fill_in`` (the page's form) also the response_bodies
    it offers for already_succeeded, where it can be chosen."""
    db = get_target()
    config = get_target().settings
    key_panel = panels.load(keys.get_key, db.tables, scope, key, lease_seconds=config.default_lease_seconds)
    row = panels.require(key_panel)
    if row is None:
        abort(404, f"no key {key!r} in scope {scope!r}: it may have been purged, or the scope is different")
    outbox = panels.load(keys.list_outbox_for_key, db.tables, scope, key, index="index_outbox_key")
    audit = panels.load(list_audit_for_key, scope, key, limit=100)
    notes = panels.load(list_notes_for_key, scope, key, limit=100)
    suggestion = suggest(row, outbox.value or [], hotspot_min_attempts=config.hotspot_min_attempts, now=row.as_of)
    # response_bodies to start the form's already_succeeded from: this key's own evidence on the shape of its
    # scope's responses, never another key's values (core/fill_in.py)
    offered: list[FillIn] = []
    if fill_in and row.status == "processing" and (row.stuck or row.held):
        shape = panels.load(keys.list_response_fields, db.tables, scope, key)
        offered = fill_ins(shape.value or [], outbox.value or [])
    return {
        "key": row,
        "outbox": outbox,
        "audit": audit,
        "notes": notes,
        "suggestion": suggestion,
        "fill_ins": offered,
        "replay_horizon": config.replay_horizon,
        "purgeable_from": purgeable_from(row, audit.value or [], config.replay_horizon),
    }


def purgeable_from(row: keys.KeyRow, audit: list, replay_horizon_seconds: int) -> datetime | None:
    """When the keys purge may delete this key: a terminal key once its expires_at has passed and no operator
    decision on it is within the replay horizon. None while it is processing or failed_retryable: never purged."""
    if row.status not in ("succeeded", "failed_final"):
        return None
    decisions = [entry.at for entry in audit if entry.action.startswith("reclassify")]
    if not decisions:
        return row.expires_at
    return max(row.expires_at, max(decisions) + timedelta(seconds=replay_horizon_seconds))


@bp.get("/keys/<scope>/<path:key>")
def detail_page(scope: str, key: str):
    return _render_detail(scope, key)


@bp.get("/key")
def detail_page_by_query():
    """The same page for keys a path cannot carry (a scope with '/', '.' or '..' segments)."""
    ref = contract.query(key_page.KeyRef)
    return _render_detail(ref.scope, ref.key)


def _render_detail(scope: str, key: str):
    if not _rich():  # a library's key: its row's page, where a scope and a key tell it apart
        return table_rows.row_page_for("keys", profile_lists.key_identity(scope, key))
    shown = contract.query(key_page.KeyPageQuery)
    done, noted = shown.done, shown.noted
    return render("key.html", None, **detail_context(scope, key), done=done, noted=noted)


@bp.get("/api/v1/keys/<scope>/<path:key>")
@contract.operation(
    "One key with its evidence (the key may contain '/')",
    ok=key_page.KeyPage,
    also=(Row,),
    errors=(*contract.READ_ERRORS, 404),
)
def detail_api(scope: str, key: str) -> key_page.KeyPage | Row:
    return _detail_json(scope, key)


@bp.get("/api/v1/key")
@contract.operation(
    "One key, for keys a path cannot carry",
    query=key_page.KeyRef,
    ok=key_page.KeyPage,
    also=(Row,),
    errors=(*contract.READ_ERRORS, 404),
)
def detail_api_by_query() -> key_page.KeyPage | Row:
    ref = contract.query(key_page.KeyRef)
    return _detail_json(ref.scope, ref.key)


def _detail_json(scope: str, key: str) -> key_page.KeyPage | Row:
    if not _rich():
        return table_rows.row_answer("keys", profile_lists.key_identity(scope, key))
    data = _detail(scope, key)
    row = data["key"]
    return key_page.KeyPage.model_validate(
        {
            "key": key_json(row, DETAIL_FIELDS) | {"stuck": row.stuck, "purgeable_from": data["purgeable_from"]},
            "outbox_events": data["outbox"].value or [],
            "audit": data["audit"].value or [],
            "notes": data["notes"].value or [],
            "suggestion": data["suggestion"],
            "runbook_url": runbook_url(row.scope, row.key, "stuck" if row.stuck else row.status),
        }
    )
