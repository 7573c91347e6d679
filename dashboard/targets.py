"""The web app's databases: one ``Target`` per database it serves (core.databases), built in ``init_app``;
``get_target`` is the one the current request is about.

When a database's pool opens is the worker's ``PoolBudget`` (queries/pool_budget.py), kept in
``app.extensions["idemdash_pools"]``: with one database at start, as always; with several (IDEMDASH_CONFIG) when a
request first reads or writes that database, and it closes after IDEMDASH_FLEET_IDLE_SECONDS unused, all of them
within IDEMDASH_FLEET_MAX_CONNECTIONS.

A request under /db/<name>/… (or /api/v1/db/<name>/…, see dashboard/databases.py) is about that database;
any other request about the first one. One pool per database and process: gunicorn workers each build their
own app after the fork, and several apps in one process (the tests) each have their own.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask, abort, current_app, g, has_request_context

from idemdash.core.databases import load_databases
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.target import Target


def init_app(app: Flask) -> dict[str, Target]:
    targets = {d.name: Target.from_settings(d.settings, d.name) for d in load_databases(app.config)}
    app.extensions["idemdash_pools"] = budget(app.config, targets)
    app.extensions["idemdash_targets"] = targets

    @app.url_value_preprocessor
    def pick_database(endpoint: str | None, values: dict | None) -> None:
        name = values.pop("database", None) if values else None
        if name is None:
            return
        if name not in targets:
            abort(404, f"no database {name!r} here: this dashboard serves {', '.join(targets)}")
        g.database = name

    return targets


def budget(config: Mapping[str, Any], targets: Mapping[str, Target]) -> PoolBudget:
    """The worker's pools: opened now with one database; with several on demand, within the budget, which the
    background reads share (the all-databases refresh's threads, and one for /metrics)."""
    background = min(config["FLEET_REFRESH_THREADS"], len(targets)) + 1
    keeper = PoolBudget(targets, lazy=len(targets) > 1, budget=config["FLEET_MAX_CONNECTIONS"],
                        idle_seconds=float(config["FLEET_IDLE_SECONDS"]), background=background,
                        wait_seconds=float(config["POOL_TIMEOUT_SECONDS"]))
    for target in targets.values():
        target.keeper = keeper
    return keeper


def all_targets() -> dict[str, Target]:
    """Every database this app serves, in the configured order (the first is the one plain URLs mean)."""
    return current_app.extensions["idemdash_targets"]


def current_database() -> str | None:
    """The database named in the request's URL (/db/<name>/…), or None for a plain URL."""
    return g.get("database") if has_request_context() else None


def get_target() -> Target:
    targets = all_targets()
    name = current_database()
    return targets[name] if name is not None else next(iter(targets.values()))


def close(app: Flask) -> None:
    """Stop the all-databases refresh (dashboard/all_databases.py), then close every pool."""
    refresh = app.extensions.get("idemdash_overview")
    if refresh is not None:
        refresh.close()
    app.extensions["idemdash_pools"].close()
    for target in app.extensions["idemdash_targets"].values():
        target.close()
