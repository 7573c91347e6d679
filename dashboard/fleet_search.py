"""A key, an inbox message id or an outbox id looked up in every database at once (the all-databases page's search
box, `GET /api/v1/databases/search`): which databases hold it, with links to it there, and which could not be asked.

Exact lookups only (a prefix across hundreds of databases would be a scan of each): the key in ``scope`` or in every
scope (as `/search` understands it: ``scope/key`` and a pasted key URL too), inbox rows whose message_id is it, the
outbox row whose outbox_id is it. Each database is asked on the refresh's short connection path
(``Target.read_once``: an idle connection of its open pool, else one of its own, closed after) on the worker's one
fan-out pool of IDEMDASH_FLEET_REFRESH_THREADS threads, shared by every search at once (``PoolBudget.fan_out``); a
connection of its own first takes a slot of the worker's budget, IDEMDASH_FLEET_MAX_CONNECTIONS, waiting for one no
longer than the request. The answer never waits past ``DEADLINE_SECONDS``: a database that has not answered by then
(a hung host, a slow one), was never reached (all threads busy with others) or found no connection free is listed
as not asked, as is one whose last background ask failed (not asked again, so a host known down costs the
search nothing) and one of another library's profile (its own search page).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, current_app, url_for

from idemdash.dashboard import contract, one_model
from idemdash.dashboard.all_databases import DatabaseRow
from idemdash.dashboard.databases import database_rows
from idemdash.dashboard.links import key_url
from idemdash.dashboard.schemas import fleet_search as schema
from idemdash.dashboard.targets import all_targets
from idemdash.dashboard.web import render
from idemdash.queries import search, search_text
from idemdash.queries.keys import list_scopes
from idemdash.queries.pool_budget import NoConnectionFree, PoolBudget
from idemdash.queries.target import Target

bp = Blueprint("fleet_search", __name__)

# the longest a lookup waits for the fleet, all databases together
DEADLINE_SECONDS = 2.0
STATEMENT_TIMEOUT_MS = 1500
CONNECT_TIMEOUT_SECONDS = 2  # libpq's least; the deadline above ends the wait sooner
APPLICATION_NAME = "idemdash-fleet-search"
# an ask still waiting for a thread or a connection slot gives up this long before the request stops waiting for it,
# so that it is reported as not reached rather than as a host that did not answer
SLOT_MARGIN_SECONDS = 0.05


@dataclass
class Held:
    database: str
    keys: list[search.SearchHit] = field(default_factory=list)
    messages: list[search.MessageHit] = field(default_factory=list)
    outbox: list[search.OutboxHit] = field(default_factory=list)


@dataclass
class Lookup:
    q: str
    scope: str | None
    held: list[Held]  # databases that hold it, in the configured order
    without: list[str]  # databases asked that do not hold it
    not_asked: dict[str, str]  # database: why it could not be asked (in the configured order)
    seconds: float


def _ask(target: Target, q: str, scope: str | None, deadline: float) -> Held:
    tables, lease = target.tables, target.settings.default_lease_seconds
    with target.read_once(
        APPLICATION_NAME, STATEMENT_TIMEOUT_MS, CONNECT_TIMEOUT_SECONDS, slot_deadline=deadline
    ) as conn:
        if scope is not None:
            pairs = [(scope, text) for text in search_text.spellings(q)]
        else:
            pairs = search_text.candidate_pairs(q, list_scopes(conn, tables, limit=search.MAX_SCOPES))
        held = Held(target.name, keys=search.find_keys_exact(conn, tables, pairs, lease_seconds=lease))
        if scope is None:
            held.messages = search.find_inbox_messages(conn, tables, q)
            held.outbox = [hit for hit in search.find_outbox_rows(conn, tables, q) if hit.matched == "outbox_id"]
    return held


def _skip(target: Target, row: DatabaseRow | None) -> str | None:
    """Why ``target`` is not asked at all, or None."""
    if not one_model.owns_tables(target.settings):
        return f"{target.settings.profile} tables: search them on that database's own pages"
    if row is not None and not row.pending and not row.reachable and not row.asking:
        return f"its last background ask failed: {row.problem}"
    return None


class NotReached(Exception):
    """The request's deadline passed before a thread of the worker's fan-out pool was free for this database."""


def _ask_by(target: Target, q: str, scope: str | None, deadline: float) -> Held:
    """``_ask`` on a thread of the worker's fan-out pool, unless the request stopped waiting first."""
    if time.monotonic() >= deadline:
        raise NotReached()
    return _ask(target, q, scope, deadline)


def lookup(
    targets: Mapping[str, Target],
    rows: Mapping[str, DatabaseRow],
    q: str,
    scope: str | None,
    *,
    keeper: PoolBudget,
    deadline: float = DEADLINE_SECONDS,
) -> Lookup:
    """Ask every database in ``targets`` at once, waiting at most ``deadline`` seconds in all.

    The asks run on the worker's one fan-out pool (``PoolBudget.fan_out``), and each connection of their own takes
    a slot of the worker's budget, waiting for one no longer than the request does: however many searches come at
    once, the worker never holds more than IDEMDASH_FLEET_MAX_CONNECTIONS."""
    started = time.monotonic()
    ends = started + deadline
    not_asked: dict[str, str] = {}
    asked: dict[Future, str] = {}
    for name, target in targets.items():
        why = _skip(target, rows.get(name))
        if why is not None:
            not_asked[name] = why
        else:
            asked[keeper.fan_out(_ask_by, target, q, scope, ends - SLOT_MARGIN_SECONDS)] = name
    pending = set(asked)
    while pending and (left := ends - time.monotonic()) > 0:
        _, pending = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
    for future in pending:  # not started: it never will; started: it ends at its own connect deadline
        future.cancel()
    held, without = [], []
    for future, name in asked.items():
        if future.cancelled() or (future.done() and isinstance(future.exception(), NotReached)):
            not_asked[name] = (
                f"not reached within {deadline:g} s: this worker's threads and connections for "
                "reads across databases (IDEMDASH_FLEET_REFRESH_THREADS, "
                "IDEMDASH_FLEET_MAX_CONNECTIONS) were busy with other databases and searches"
            )
        elif not future.done():
            not_asked[name] = f"no answer within {deadline:g} s (a host that hangs, or a slow one)"
        elif isinstance(exc := future.exception(), NoConnectionFree):
            not_asked[name] = str(exc)
        elif exc is not None:
            not_asked[name] = targets[name].cause_of(exc).message
        elif (found := future.result()).keys or found.messages or found.outbox:
            held.append(found)
        else:
            without.append(name)
    order = list(targets)
    return Lookup(
        q, scope, held, without, {n: not_asked[n] for n in order if n in not_asked}, time.monotonic() - started
    )


def _run(model: type[schema.FleetSearchQuery]) -> Lookup | None:
    args = contract.query(model)
    q = (args.q or "").strip() or None
    if q is None:
        return None
    scope = (args.scope or "").strip() or None
    rows = {row.name: row for row in database_rows()}
    return lookup(all_targets(), rows, q, scope, keeper=current_app.extensions["idemdash_pools"])


def _links(held: Held) -> dict[str, Any]:
    name = held.database
    return {
        "database": name,
        "url": url_for("search.page", q=held.keys[0].key if held.keys else None, database=name),
        "keys": [
            {
                "scope": k.scope,
                "key": k.key,
                "status": k.status,
                "stuck": k.stuck,
                "url": key_url(k.scope, k.key, database=name),
            }
            for k in held.keys
        ],
        "messages": [
            {"consumer": m.consumer, "message_id": m.message_id, "processed_at": m.processed_at} for m in held.messages
        ],
        "outbox": [
            {
                "outbox_id": o.outbox_id,
                "status": o.status,
                "event_type": o.event_type,
                "url": url_for("outbox_rows.detail_page", outbox_id=o.outbox_id, database=name),
            }
            for o in held.outbox
        ],
    }


def _answer(found: Lookup) -> schema.FleetSearch:
    held = [_links(h) for h in found.held]
    for item in held:  # an inbox message alone: that database's search page finds it
        if not item["keys"]:
            item["url"] = url_for("search.page", q=found.q, database=item["database"])
    return schema.FleetSearch.model_validate(
        {
            "q": found.q,
            "scope": found.scope,
            "held_by": held,
            "not_held_by": found.without,
            "not_asked": [{"database": n, "why": why} for n, why in found.not_asked.items()],
            "seconds": round(found.seconds, 3),
            "deadline_seconds": DEADLINE_SECONDS,
        }
    )


@bp.get("/databases/search")
def page():
    found = _run(schema.FleetSearchPageQuery)
    return render("fleet_search.html", "fleet_search_results", answer=_answer(found) if found is not None else None)


@bp.get("/api/v1/databases/search")
@contract.operation(
    "Find a key (exact, in scope or every scope), an inbox message id or an outbox id in every "
    "database at once: which databases hold it, with links there, and which could not be asked "
    "within the deadline (2 s in all)",
    query=schema.FleetSearchQuery,
    ok=schema.FleetSearch,
)
def api() -> schema.FleetSearch:
    found = _run(schema.FleetSearchQuery)
    assert found is not None  # q is required here, and says something
    return _answer(found)
