"""`/health` and `GET /api/v1/health/schema`: the findings of the health checks (checks/), each with what
fixes it."""

from __future__ import annotations

from datetime import datetime, timezone
from functools import partial

from flask import Blueprint, current_app

from idemdash.checks import FAIL, OK, SEVERITY, WARN, Check, run_checks, summary
from idemdash.checks.connections import check_connections
from idemdash.checks.library import check_library
from idemdash.dashboard import contract, one_model
from idemdash.dashboard.schemas.databases import Health
from idemdash.dashboard.targets import all_targets, get_target
from idemdash.dashboard.web import render

bp = Blueprint("health", __name__)


def _checks() -> list[Check]:
    return [*_database_checks(), _connections()]


def _database_checks() -> list[Check]:
    target = get_target()
    if not one_model.owns_tables(target.settings):  # another library's tables: what matters about them
        with target.read(primary=True) as conn:
            return check_library(conn, target.settings)
    # on the primary: its sessions, locks, vacuum and schema are what the checks are about, not a standby's
    return run_checks(partial(target.read, primary=True), target.tables, target.settings)


def _connections() -> Check:
    """The worker's own connections and budget (after the database's checks: this page's own pool counts)."""
    return check_connections(current_app.extensions["idemdash_pools"].usage(), len(all_targets()))


@bp.get("/health")
def page():
    checks = sorted(_checks(), key=lambda c: SEVERITY[c.status])
    return render(
        "health.html",
        "health_panel",
        checks=checks,
        counts=summary(checks),
        as_of=datetime.now(timezone.utc),
        horizon=get_target().settings.replay_horizon,
    )


@bp.get("/api/v1/health/schema")
@contract.operation(
    "The health checks' findings (schema, indexes, retention, vacuum, sessions, locks, purges), each "
    "with what fixes it",
    ok=Health,
)
def api() -> Health:
    checks = _checks()
    counts = summary(checks)
    return Health.model_validate(
        {
            "status": FAIL if counts[FAIL] else WARN if counts[WARN] else OK,
            "counts": counts,
            "items": checks,
            "next_cursor": None,
        }
    )
