"""Liveness and readiness probes for load balancers and orchestrators."""

from __future__ import annotations

import psycopg
from flask import Blueprint, Response, jsonify
from psycopg_pool import PoolTimeout

from idemdash.checks.readiness import readiness
from idemdash.dashboard.targets import get_target, signed_in

bp = Blueprint("probes", __name__)


@bp.get("/healthz")
def healthz():
    """The process is alive; says nothing about the database."""
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz():
    """Ready when the database answers, idemdash's schema is current and the application tables can be read.

    Otherwise 503 with the cause in one line (``error``), its kind (``cause``) and, when the database answered,
    every problem found (``problems``); to a request nobody signed in for (a load balancer's), only
    ``{"status": "unavailable"}``: the cause names hosts, roles, the config file and the driver's words.
    """
    target = get_target()
    try:
        with target.read(primary=True) as conn:  # a standby that lags or is down is not an outage
            problems = readiness(conn, target.tables, target.settings)
    except (psycopg.Error, PoolTimeout) as exc:
        cause = target.cause_of(exc)
        target.problems.failed(cause)  # the log has it whoever asked
        error = f"database unreachable: {cause.message}" if cause.transient else cause.message
        return _unavailable({"cause": cause.kind, "error": error})
    if problems:
        for problem in problems:
            target.problems.failed(problem)
        return _unavailable(
            {
                "cause": problems[0].kind,
                "error": problems[0].message,
                "problems": [{"cause": p.kind, "error": p.message} for p in problems],
            }
        )
    return jsonify({"status": "ok"})


def _unavailable(why: dict) -> tuple[Response, int]:
    return jsonify({"status": "unavailable", **(why if signed_in() else {})}), 503
