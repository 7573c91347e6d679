"""The routes learned from the tables (`/routes`, `GET /api/v1/routes`): for each event type, the databases that
wrote it to their outbox and the consumers whose inbox consumed it in the last hour, with their usual delays. A map
of the services drawn from their own tables; the journey reads it to say which consumer a message is missing at."""

from __future__ import annotations

from flask import Blueprint, current_app

from idemdash.dashboard import contract
from idemdash.dashboard.databases import database_rows
from idemdash.dashboard.fan_out import known_down
from idemdash.dashboard.journey import DEADLINE_SECONDS, route_book
from idemdash.dashboard.schemas import journey as schema
from idemdash.dashboard.targets import all_targets
from idemdash.dashboard.web import render

bp = Blueprint("routes_map", __name__)


def _routes() -> schema.Routes:
    skip = known_down({row.name: row for row in database_rows()})
    learned = route_book().current(all_targets(), current_app.extensions["idemdash_pools"], skip, DEADLINE_SECONDS)
    return schema.Routes(
        routes=[
            schema.Route(
                event_type=r.event_type,
                producers=list(r.producers),
                sent=r.sent,
                consumers=[schema.RouteConsumer.model_validate(c) for c in r.consumers],
            )
            for r in learned.routes
        ],
        learned_at=learned.learned_at,
        window_seconds=learned.window_seconds,
        not_answered=[schema.Database(database=n, why=w) for n, w in learned.not_answered.items()],
    )


@bp.get("/routes")
def page():
    return render("routes.html", None, answer=_routes())


@bp.get("/api/v1/routes")
@contract.operation(
    "The routes learned from the tables: for each event type, the databases whose outbox wrote it "
    "and the consumers whose inbox consumed it in the last hour, with their usual delays",
    ok=schema.Routes,
)
def api() -> schema.Routes:
    return _routes()
