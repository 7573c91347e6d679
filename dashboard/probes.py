"""Liveness and readiness probes for load balancers and orchestrators."""
from __future__ import annotations

import psycopg
from flask import Blueprint, jsonify
from psycopg_pool import PoolTimeout

from dashboard.db import get_target
from queries.health import ping

bp = Blueprint("probes", __name__)


@bp.get("/healthz")
def healthz():
    """The process is alive; says nothing about the database."""
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz():
    """The database answers a query within the statement timeout."""
    try:
        with get_target().read() as conn:
            ping(conn)
    except (psycopg.Error, PoolTimeout) as exc:
        return jsonify({"status": "unavailable", "error": f"database unreachable: {type(exc).__name__}"}), 503
    return jsonify({"status": "ok"})
