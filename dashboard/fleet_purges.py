"""The purges of every database (`/databases/purges`, `GET /api/v1/databases/purges`): one row per database and
table with its last run and its failures in the last 24 hours, worst first, each linking to that database's own
`/db/<name>/purges`.

Like `/databases`, a request asks no database: it reads what the all-databases background refresh last found
(dashboard/all_databases.py, which also asks each database for its purges per table), so a hung host never holds it
up, and each row says how old it is. The routes live in a blueprint nested in the all-databases one, so they get no
per-database twin (they are about every database at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from flask import Blueprint, current_app, url_for

from idemdash.core.statuses import PURGE_METHOD_WORDS
from idemdash.dashboard import contract
from idemdash.dashboard.all_databases import DatabaseRow
from idemdash.dashboard.schemas.fleet_purges import FleetPurgeItem, FleetPurges, FleetPurgesQuery
from idemdash.dashboard.targets import app_settings
from idemdash.dashboard.web import render
from idemdash.queries.purge_history import PurgeRun, PurgeTableStatus

bp = Blueprint("fleet_purges", __name__)

# worst first (dashboard/schemas/fleet_purges.py says what each means)
STATES = ("failing", "failed_recently", "unreachable", "purges_unknown", "pending", "never_purged", "ok")
POLL_PENDING, POLL_IDLE = "1s", "15s"


@dataclass(frozen=True)
class FleetPurgeRow:
    database: DatabaseRow
    table: str | None
    state: str
    last_run: PurgeRun | None = None
    failures_24h: int | None = None
    last_success_at: datetime | None = None
    problem: str | None = None

    @property
    def name(self) -> str:
        return self.database.name

    @property
    def fleet(self) -> str | None:
        return fleet_of(self.database.name)


def fleet_of(name: str) -> str | None:
    """A fleet member is named <fleet>/<database>; a database of its own has no fleet."""
    fleet, slash, _ = name.partition("/")
    return fleet if slash else None


def purge_rows(databases: list[DatabaseRow], fleet: str | None = None) -> list[FleetPurgeRow]:
    """Each database's tables with their last run, worst first, then by database and table."""
    rows: list[FleetPurgeRow] = []
    for db in databases:
        if fleet is not None and fleet_of(db.name) != fleet:
            continue
        if db.pending:
            rows.append(FleetPurgeRow(db, None, "pending"))
        elif not db.reachable:
            rows.append(FleetPurgeRow(db, None, "unreachable", problem=db.problem))
        elif db.purges is None:
            rows.append(FleetPurgeRow(db, None, "purges_unknown", problem=db.purges_problem))
        elif not db.purges:
            rows.append(FleetPurgeRow(db, None, "never_purged"))
        else:
            rows += [_table_row(db, status) for status in db.purges]
    return sorted(rows, key=lambda r: (STATES.index(r.state), r.name, r.table or ""))


def _table_row(db: DatabaseRow, status: PurgeTableStatus) -> FleetPurgeRow:
    state = "failing" if status.last_run.outcome == "failed" else "failed_recently" if status.failures_24h else "ok"
    return FleetPurgeRow(db, status.table_name, state, status.last_run, status.failures_24h, status.last_success_at)


def _rows() -> tuple[list[FleetPurgeRow], str | None]:
    fleet = contract.query(FleetPurgesQuery).fleet
    return purge_rows(current_app.extensions["idemdash_overview"].rows(), fleet), fleet


@bp.get("/databases/purges")
def page():
    rows, fleet = _rows()
    poll = POLL_PENDING if any(row.state == "pending" for row in rows) else POLL_IDLE
    return render(
        "fleet_purges.html",
        "fleet_purges_panel",
        rows=rows,
        fleet=fleet,
        methods=PURGE_METHOD_WORDS,
        as_of=datetime.now(timezone.utc),
        poll=poll,
        refresh_seconds=app_settings().fleet_refresh_seconds,
    )


@bp.get("/api/v1/databases/purges")
@contract.operation(
    "Every database's purges, as the background refresh last found them: per database and table the "
    "last run and the failures in the last 24 hours, failing tables first, then databases that "
    "could not be asked; how old each row is. Never waits for a database.",
    query=FleetPurgesQuery,
    ok=FleetPurges,
)
def api() -> FleetPurges:
    now = datetime.now(timezone.utc)
    rows, _ = _rows()
    return FleetPurges(items=[_item(row, now) for row in rows], next_cursor=None, as_of=now)


def _item(row: FleetPurgeRow, now: datetime) -> FleetPurgeItem:
    age = row.database.age_seconds(now)
    item: dict[str, Any] = {
        "database": row.name,
        "fleet": row.fleet,
        "table": row.table,
        "state": row.state,
        "last_run": row.last_run,
        "failures_24h": row.failures_24h,
        "last_success_at": row.last_success_at,
        "problem": row.problem,
        "as_of": row.database.as_of,
        "age_seconds": round(age, 3) if age is not None else None,
        "url": url_for("purges.page", database=row.name),
    }
    return FleetPurgeItem.model_validate(item)
