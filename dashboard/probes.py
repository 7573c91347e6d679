"""Liveness and readiness probes for load balancers and orchestrators."""
from __future__ import annotations

import psycopg
from flask import Blueprint, jsonify
from psycopg_pool import PoolTimeout

from idemdash.checks.readiness import readiness
from idemdash.dashboard.targets import get_target

bp = Blueprint("probes", __name__)


@bp.get("/healthz")
def healthz():
    """The process is alive; says nothing about the database."""
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz():
    """Ready when the database answers, idemdash's schema is current and the application tables can be read.

    Otherwise 503 with the cause in one line (``error``), its kind (``cause``) and, when the database answered,
    every problem found (``problems``).
    """
    target = get_target()
    try:
        with target.read(primary=True) as conn:  # a standby that lags or is down is not an outage
            problems = readiness(conn, target.tables, target.settings)
    except (psycopg.Error, PoolTimeout) as exc:
        cause = target.cause_of(exc)
        target.problems.failed(cause)
        error = f"database unreachable: {cause.message}" if cause.transient else cause.message
        return jsonify({"status": "unavailable", "cause": cause.kind, "error": error}), 503
    if problems:
        for problem in problems:
            target.problems.failed(problem)
        return jsonify({"status": "unavailable", "cause": problems[0].kind, "error": problems[0].message,
                        "problems": [{"cause": p.kind, "error": p.message} for p in problems]}), 503
    return jsonify({"status": "ok"})
