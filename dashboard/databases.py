"""Several databases in one dashboard: every page also under /db/<name>/…, every JSON route under
/api/v1/db/<name>/…, links that stay in the database they were followed from, and the all-databases overview
(`/databases`, `GET /api/v1/databases`).

With IDEMDASH_CONFIG each route gets a second rule with the database in its path, for the same endpoint and view;
the plain routes mean the first database, so runbook links and bookmarks made before keep working. Flask's own
hooks carry the name: dashboard/targets.py's ``url_value_preprocessor`` takes it out of the URL, and
``stay_in_database`` (a ``url_defaults``) puts it back into every ``url_for`` inside that database's pages, so
templates and views name endpoints as before.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Flask, abort, current_app, g, request, url_for

from idemdash.dashboard import contract, fleet_purges, fleet_views
from idemdash.dashboard.all_databases import AllDatabases, DatabaseRow
from idemdash.dashboard.schemas.databases import NUMBERS, DatabaseItem, Databases, DatabasesQuery
from idemdash.dashboard.targets import all_targets, app_settings, current_database, signed_in
from idemdash.dashboard.web import render

bp = Blueprint("databases", __name__)
bp.register_blueprint(fleet_purges.bp)  # /databases/purges: about every database, so no per-database route either


def install_routes(app: Flask) -> None:
    """Give every route (pages, JSON, actions) a rule with the database in its path; call after the blueprints
    are registered. The rule has the route's endpoint and view; dashboard/targets.py takes the name out of the URL
    values. Werkzeug builds from the rule with the most arguments it is given, so ``url_for`` with ``database``
    builds this one and without it the plain one."""
    for rule in list(app.url_map.iter_rules()):
        fleet_wide = (f"{bp.name}.", "fleet_search.", "journey.", "routes_map.")
        if rule.endpoint == "static" or rule.endpoint.startswith(fleet_wide):
            continue
        if rule.rule.startswith("/api/v1/"):
            path = "/api/v1/db/<database:database>/" + rule.rule[len("/api/v1/") :]
        else:
            path = "/db/<database:database>" + rule.rule
        app.add_url_rule(
            path, endpoint=rule.endpoint, view_func=app.view_functions[rule.endpoint], methods=rule.methods
        )


def has_database_route(endpoint: str) -> bool:
    """Whether ``endpoint`` has a rule with the database in its path (none: one database, or a page about all).
    Asked for every link a page builds, so the app's answer is kept once its rules are all there (the first
    request comes after ``install_routes``)."""
    known = current_app.extensions.get("idemdash_database_endpoints")
    if known is None:
        known = frozenset(r.endpoint for r in current_app.url_map.iter_rules() if "database" in r.arguments)
        current_app.extensions["idemdash_database_endpoints"] = known
    return endpoint in known


def stay_in_database(endpoint: str, values: dict[str, Any]) -> None:
    """``url_defaults``: a link from a database's page stays in that database; a link to a page without a database
    route drops a ``database`` it was given (there is nothing to put it in, and it is not a query parameter)."""
    if not has_database_route(endpoint):
        values.pop("database", None)
    elif values.get("database") is None and (name := current_database()) is not None:
        values["database"] = name


def url_in_database(name: str) -> str:
    """This page in database ``name`` (the header's switcher); the database's overview when the page has no
    per-database twin."""
    endpoint = request.endpoint
    if endpoint is None or request.method != "GET" or not has_database_route(endpoint):
        return url_for("overview.page", database=name)
    path = url_for(endpoint, database=name, **(request.view_args or {}))
    query = urlencode([(k, v) for k, v in request.args.items(multi=True) if v != ""])
    return f"{path}?{query}" if query else path


# -- the all-databases overview -------------------------------------------------------------------------------

# while a row waits for its first answer the page asks again soon, so it fills in as the answers come
POLL_PENDING, POLL_IDLE = "1s", "15s"


def database_rows() -> list[DatabaseRow]:
    """What the background refresh has (dashboard/all_databases.py): never waits for a database."""
    return current_app.extensions["idemdash_overview"].rows()


def fleet_names() -> list[str]:
    return [fleet.name for fleet in current_app.extensions["idemdash_fleets"].config.fleets]


def environment_names(rows: list[DatabaseRow]) -> list[str]:
    return sorted({env for row in rows if (env := fleet_views.environment_of(row)) is not None})


def filtered_rows() -> tuple[fleet_views.Filters, list[DatabaseRow], list[DatabaseRow]]:
    """This request's filters (a 400 when one is malformed, a 404 naming the values there are when one names
    nothing), every row, and the rows they keep, worst first."""
    args = contract.query(DatabasesQuery)
    filters = fleet_views.Filters(args.fleet, args.environment, args.attention)
    rows = database_rows()
    try:
        fleet_views.check(filters, fleet_names(), environment_names(rows))
    except fleet_views.BadFilter as exc:
        abort(404, str(exc))
    return filters, rows, fleet_views.select(rows, filters)


@bp.get("/databases")
def page():
    filters, every, rows = filtered_rows()
    poll = POLL_PENDING if any(row.pending for row in rows) else POLL_IDLE
    query = {
        k: v
        for k, v in (
            ("fleet", filters.fleet),
            ("environment", filters.environment),
            ("attention", "1" if filters.attention else None),
        )
        if v is not None
    }
    return render(
        "databases.html",
        "databases_panel",
        rows=rows,
        as_of=datetime.now(timezone.utc),
        poll=poll,
        refresh_seconds=app_settings().fleet_refresh_seconds,
        filters=filters,
        query=query,
        total=len(every),
        fleets=fleet_names(),
        environments=environment_names(every),
        attention=fleet_views.attention,
        no_fleet=fleet_views.NO_FLEET,
    )


@bp.get("/api/v1/databases")
@contract.operation(
    "Every database of IDEMDASH_CONFIG at once, as the background refresh last found it: stuck and "
    "held keys, the outbox backlog and lag, the last purge, or why it cannot answer; how old each "
    "row is, and which have not answered yet; worst first, with why each needs attention, filtered by "
    "fleet, environment or attention. Never waits for a database.",
    query=DatabasesQuery,
    ok=Databases,
    errors=(*contract.READ_ERRORS, 404),
)
def api() -> Databases:
    now = datetime.now(timezone.utc)
    items = []
    for row in filtered_rows()[2]:
        age = row.age_seconds(now)
        item: dict[str, Any] = {
            "name": row.name,
            "database": row.label,
            "environment": row.environment[0] if row.environment else None,
            "reachable": row.reachable,
            "profile": row.profile,
            "problem": row.problem,
            "answered_ms": row.milliseconds,
            "pending": row.pending,
            "asking": row.asking,
            "as_of": row.as_of,
            "age_seconds": round(age, 3) if age is not None else None,
            "failures": row.failures,
            "next_ask_at": row.next_ask,
            "attention": fleet_views.attention(row),
            "fleet": fleet_views.fleet_of(row.name),
        }
        if item["fleet"] == fleet_views.NO_FLEET:
            item["fleet"] = None
        if row.summary is not None:
            item |= {name: getattr(row.summary, name) for name in NUMBERS}
        items.append(DatabaseItem.model_validate(item))
    return Databases(items=items, next_cursor=None, as_of=now)


def init_app(app: Flask) -> None:
    """The overview and, with a config file, the per-database routes; the header's database context."""
    app.register_blueprint(bp)
    overview = app.extensions["idemdash_overview"] = AllDatabases(app.extensions["idemdash_targets"], app_settings(app))
    app.extensions["idemdash_fleets"].on_change(overview.replace_targets)  # a fleet's members joined or left
    if app_settings(app).config:
        install_routes(app)
        # several databases: the refresh starts at the worker's first signed-in request of any kind, so /databases
        # mostly finds its rows answered; with one, at the first request for them. Not at a stranger's (a probe, a
        # static file): nobody signed in makes idemdash connect to a database but /readyz to the first one.
        app.before_request(lambda: overview.start() if signed_in() else None)
    app.url_defaults(stay_in_database)
    app.add_template_global(url_in_database)

    @app.context_processor
    def database_context() -> dict[str, Any]:
        if not signed_in():  # a refusal or error page: no database names, and no replica to measure
            return {
                "databases": [],
                "database_name": None,
                "db_settings": app_settings(app),
                "replica": None,
                "plain_endpoint": request.endpoint,
            }
        targets = all_targets()
        name = g.get("database") or next(iter(targets), None)
        target = targets.get(name) if name is not None else None  # none: only fleets, none of which answered yet
        return {
            "databases": list(targets) if app_settings(app).config else [],
            "database_name": name,
            "db_settings": target.settings if target is not None else app_settings(app),
            "replica": target.replica_status() if target is not None else None,
            "plain_endpoint": request.endpoint,
        }
