"""`/tables` and `GET /api/v1/tables`: the database's tables as its profile reads them (core/profiles), every state
counted by the library's own definition. For a database of another library's profile this is its overview: `/`
shows it, and the pages of the reference tables answer 404 naming it (see ``refuse_reference_routes``)."""
from __future__ import annotations

from datetime import datetime, timezone

from flask import Blueprint, abort, request, url_for

from idemdash.core.profiles import DEFAULT, profile
from idemdash.core.profiles.shape import MEANINGS
from idemdash.dashboard import contract, panels
from idemdash.dashboard.auth import refuse_action
from idemdash.dashboard.schemas import tables as schema
from idemdash.dashboard.targets import all_targets, get_target
from idemdash.dashboard.web import render
from idemdash.queries.profile_rows import list_backlogs
from idemdash.queries.replication import list_logical_slots
from idemdash.queries.rollups import read_library_states

bp = Blueprint("tables", __name__)

# blueprints that serve a database of any profile; every other one reads the reference tables
# (the audit log is idemdash's own: purges started by people and the library's own actions are recorded there;
# hotspots, workers, suppression, search, the stuck breakdown and the runbooks read each profile's role tables)
EVERY_PROFILE = frozenset({"tables", "table_rows", "library_actions", "health", "probes", "openapi", "metrics",
                           "databases", "purges", "purge_cancel", "audit", "hotspots", "suppression", "workers",
                           "search", "breakdown", "runbooks"})


def _report() -> schema.Tables:
    target = get_target()
    chosen = profile(target.settings["PROFILE"])
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
            states.append(schema.StateCount.model_validate({
                "meaning": meaning, "recorded": state is not None, "count": count,
                "computed_at": kept.computed_at if kept else None, "estimated": bool(kept and kept.estimated),
                "note": state.note if state is not None else f"not recorded by {chosen.library}"}))
        backlog = [schema.BacklogGroup(group=[None if v is None else str(v) for v in g.group_values], rows=g.rows,
                                       lag_seconds=g.lag_seconds) for g in by_role[table.role]] \
            if table.role in by_role else None
        tables.append(schema.TableStates(role=table.role, name=found.get(table.role), states=states,
                                         backlog_by=list(table.groups), backlog=backlog))
    slots = None
    if chosen.reads_wal and read.found:
        slots = [schema.Slot.model_validate(s) for s in panels.require(panels.load(list_logical_slots))]
    return schema.Tables(database=target.name, slots=slots, profile=chosen.name, library=chosen.library,
                         version=read.found.version if read.found else None, app_schema=target.settings["APP_SCHEMA"],
                         problem=read.problem, tables=tables, cleanup=chosen.cleanup,
                         read_only=chosen.name != DEFAULT and not target.settings["LIBRARY_ACTIONS"],
                         as_of=datetime.now(timezone.utc))


@bp.app_template_test()
def every_profile(endpoint: str) -> bool:
    """Whether ``endpoint`` serves a database of any profile (the navigation of a library's database shows those)."""
    return endpoint.partition(".")[0] in EVERY_PROFILE


@bp.get("/tables")
def page():
    return render("tables.html", "tables_panel", report=_report())


@bp.get("/api/v1/tables")
@contract.operation("The database's tables as its profile reads them: every state of every table, counted by the "
                    "library's own definition", ok=schema.Tables)
def api() -> schema.Tables:
    return _report()


def refuse_reference_routes() -> None:
    """On a database of another library's profile, `/` is its tables page, and a route of the reference tables
    (keys, outbox, inbox, hotspots, search) answers 404 naming the profile, an action 403: idemdash never reads
    another library's rows as if they were its own. Its audit log is idemdash's own and served for every profile."""
    if not all_targets():  # only fleets, none of whose servers answered yet: no database's routes to refuse
        return
    target = get_target()
    chosen = target.settings["PROFILE"]
    if chosen == DEFAULT or request.blueprint is None or request.blueprint in EVERY_PROFILE:
        return
    if request.method not in ("GET", "HEAD"):
        refuse_action()  # 403: an action on another library's rows, named as such
    if request.endpoint in ("overview.page", "overview.page@db"):
        return page()
    abort(404, f"database {target.name} holds {profile(chosen).library} tables (profile = \"{chosen}\"), not "
               f"idemdash's reference tables: {request.path} reads those. Its tables and their states are at "
               f"{url_for('tables.page')} (JSON: {url_for('tables.api')}); see docs/profiles.md.")
