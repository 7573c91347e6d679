"""`/` and `GET /api/v1/overview` on a database whose tables record no operator's decisions (another library's):
per role table, stuck, in progress, pending with its lag (poison apart), failed, done in 24 h, with what the library
does not record said in words; the last purges and the trends where stored (dashboard/overview.py dispatches)."""

from __future__ import annotations

from datetime import datetime, timezone

from idemdash.core.profiles.dimensions import ROLES, no_tables, role_table
from idemdash.dashboard import panels, trends
from idemdash.dashboard.one_model import chosen
from idemdash.dashboard.profile_numbers import definitions, other_table, role_panel
from idemdash.dashboard.schemas import profile_overview as schema
from idemdash.dashboard.schemas.overview import LastPurge
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import overview, snapshots
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS
from idemdash.queries.profile_numbers import read_role_numbers

TREND_HOURS = 24


def read() -> tuple[schema.ProfileOverview, list]:
    target = get_target()
    model = chosen(target.settings)
    roles = (*ROLES, *(t.role for t in model.tables if t.role not in ROLES))
    numbers = panels.require(panels.load(read_role_numbers, target.settings, roles, POISON_MIN_ATTEMPTS))
    by_role = {n.role: n for n in numbers.roles}
    # idemdash's own tables (purge runs, snapshots) exist once `idemdash migrate` ran here: without, not read
    purges = panels.load(overview.list_recent_purge_runs)
    trend = panels.load(snapshots.list_snapshot_trend, hours=TREND_HOURS, max_points=trends.MAX_POINTS)
    points = trend.value if trend.ok and trend.value else []
    answer = schema.ProfileOverview(
        database=target.name,
        profile=model.name,
        library=model.library,
        problem=numbers.problem,
        roles=[role_panel(model, role, by_role.get(role)) for role in ROLES] if numbers.found else [],
        other_tables=[other_table(model, n) for n in numbers.roles if n.role not in ROLES and n.name],
        last_purges=[LastPurge.model_validate(r) for r in purges.value]
        if purges.ok and purges.value is not None
        else None,
        trends=points,
        definitions=definitions(model),
        as_of=datetime.now(timezone.utc),
    )
    return answer, points


def page():
    answer, points = read()
    model = chosen(get_target().settings)
    none = tuple(r for r in ROLES if role_table(model, r) is None)
    # the roles the library has no table for, in one sentence; an optional table not here, each in its own
    absent = [no_tables(model, none)] if none else []
    absent += [r.no_table for r in answer.roles if r.no_table and r.role not in none]
    charts = [c for c in trends.charts(points) if c.points]  # the rates are the reference keys' only
    return render("profile_overview.html", "overview_panel", report=answer, charts=charts, absent=absent)


def api() -> schema.ProfileOverview:
    return read()[0]
