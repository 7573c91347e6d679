"""`/tables` and `GET /api/v1/tables`: the database's tables as its profile reads them (core/profiles), every state
counted by the library's own definition. On a database of another library's profile the on-call pages read through
the same profile (dashboard/one_model.py); the pages of the reference tables' decisions answer 404 naming it (see
``refuse_reference_routes``)."""

from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, abort, request, url_for

from idemdash.core.profiles import profile
from idemdash.core.profiles.shape import MEANINGS
from idemdash.dashboard import contract, one_model, panels
from idemdash.dashboard.auth import refuse_action
from idemdash.dashboard.schemas import tables as schema
from idemdash.dashboard.targets import all_targets, get_target
from idemdash.dashboard.web import render
from idemdash.queries.profile_rows import list_backlogs
from idemdash.queries.replication import list_logical_slots
from idemdash.queries.rollup_states import read_library_states

bp = Blueprint("tables", __name__)

# blueprints that serve a database of any profile; every other one reads the reference tables
# (the audit log is idemdash's own: purges started by people and the library's own actions are recorded there;
# hotspots, workers, suppression, search, the stuck breakdown and the runbooks read each profile's role tables)
EVERY_PROFILE = frozenset(
    {
        "tables",
        "table_rows",
        "library_actions",
        "health",
        "probes",
        "openapi",
        "metrics",
        "databases",
        "purges",
        "purge_cancel",
        "audit",
        "journey",
        "routes_map",
        "hotspots",
        "suppression",
        "workers",
        "search",
        "breakdown",
        "runbooks",
    }
)


def _report() -> schema.Tables:
    target = get_target()
    chosen = profile(target.settings.profile)
    read, stored = panels.require(panels.load(read_library_states, target.settings))
    counts = {(state.table, state.meaning): (state, count) for state, count in read.counts}
    found = dict(read.found.tables) if read.found else {}
    backlogs = panels.load(list_backlogs, read.found, target.settings) if read.found else None
    by_role = backlogs.value if backlogs is not None and backlogs.ok and backlogs.value is not None else {}
    tables = []
    for table in chosen.tables if read.found else ():
        states = []
        for meaning in MEANINGS:
            state, count = counts.get((table.role, meaning), (None, None))
            kept = stored.get((table.role, meaning))
            states.append(
                schema.StateCount.model_validate(
                    {
                        "meaning": meaning,
                        "recorded": state is not None,
                        "count": count,
                        "computed_at": kept.computed_at if kept else None,
                        "estimated": bool(kept and kept.estimated),
                        "note": state.note if state is not None else f"not recorded by {chosen.library}",
                    }
                )
            )
        backlog = (
            [
                schema.BacklogGroup(
                    group=[None if v is None else str(v) for v in g.group_values],
                    rows=g.rows,
                    lag_seconds=g.lag_seconds,
                )
                for g in by_role[table.role]
            ]
            if table.role in by_role
            else None
        )
        tables.append(
            schema.TableStates(
                role=table.role,
                name=found.get(table.role),
                states=states,
                backlog_by=list(table.groups),
                backlog=backlog,
            )
        )
    slots = None
    if chosen.reads_wal and read.found:
        slots = panels.require(panels.load(list_logical_slots))
    return schema.Tables(
        database=target.name,
        slots=slots,
        profile=chosen.name,
        library=chosen.library,
        version=read.found.version if read.found else None,
        app_schema=target.settings.app_schema,
        problem=read.problem,
        tables=tables,
        cleanup=chosen.cleanup,
        read_only=not (one_model.owns_tables(target.settings) or target.settings.library_actions),
        as_of=datetime.now(timezone.utc),
    )


@bp.get("/tables")
def page():
    return render("tables.html", "tables_panel", report=_report())


@bp.get("/api/v1/tables")
@contract.operation(
    "The database's tables as its profile reads them: every state of every table, counted by the "
    "library's own definition",
    ok=schema.Tables,
)
def api() -> schema.Tables:
    return _report()


# routes of blueprints otherwise of the reference tables that read through the database's profile (the one model:
# dashboard/one_model.py dispatches each to the profile's reads where the table records no operator's decisions)
EVERY_PROFILE_ENDPOINTS = frozenset(
    {
        "overview.page",
        "overview.api",
        "keys.list_page",
        "keys.list_api",
        "keys.detail_page",
        "keys.detail_page_by_query",
        "keys.detail_api",
        "keys.detail_api_by_query",
        "outbox.page",
        "outbox.api",
        "outbox_rows.detail_page",
        "outbox_rows.detail_api",
        "outbox_rows.poison_page",
        "outbox_rows.poison_api",
        "inbox.page",
        "inbox.api",
    }
)


def serves_every_profile(endpoint: str | None) -> bool:
    """Whether the route ``endpoint`` (its ``@db`` twin alike) answers on a database of any profile."""
    plain = (endpoint or "").partition("@")[0]
    return plain.partition(".")[0] in EVERY_PROFILE or plain in EVERY_PROFILE_ENDPOINTS


def refuse_reference_routes() -> None:
    """On a database of another library's profile, a route that reads only the reference tables' decisions (a key's
    evidence, the bulk pages, ...) answers 404 naming the profile, an action 403: idemdash never reads another
    library's rows as if they were its own. The on-call pages (``EVERY_PROFILE_ENDPOINTS``) read through the
    profile; the audit log is idemdash's own and served for every profile."""
    if not all_targets():  # only fleets, none of whose servers answered yet: no database's routes to refuse
        return
    target = get_target()
    chosen = target.settings.profile
    if request.blueprint is None or one_model.owns_tables(target.settings):
        return
    if request.method not in ("GET", "HEAD"):
        if request.blueprint in EVERY_PROFILE:
            return
        refuse_action()  # 403: an action on another library's rows, named as such
    if serves_every_profile(request.endpoint):
        return
    abort(
        404,
        f'database {target.name} holds {profile(chosen).library} tables (profile = "{chosen}"), not '
        f"idemdash's reference tables: {request.path} reads an operator's decisions, which only those record. "
        f"Its tables and their states are at {url_for('tables.page')} (JSON: {url_for('tables.api')}); see "
        f"docs/profiles.md.",
    )
