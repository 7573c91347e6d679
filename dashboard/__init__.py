"""idemdash: the Flask application factory."""

from __future__ import annotations

import importlib.util
import logging
import os
import secrets
from collections.abc import Mapping
from typing import Any

from flask import Flask
from gunicorn.errors import AppImportError
from htmx_flask import Htmx

from idemdash.core import settings
from idemdash.dashboard import (
    actions,
    audit,
    auth,
    breakdown,
    databases,
    error_handlers,
    fleet_search,
    health,
    hotspots,
    inbox,
    journey,
    keys,
    library_actions,
    metrics,
    notes,
    openapi,
    outbox,
    outbox_actions,
    outbox_bulk,
    outbox_rows,
    overview,
    probes,
    purge_cancel,
    purges,
    routes_map,
    runbooks,
    search,
    suppression,
    table_rows,
    tables,
    targets,
    web,
    workers,
)
from idemdash.jobs.scheduler import start_in_background

htmx = Htmx()


def _asset_dir(name: str) -> str:
    """templates/ and static/: the packages ``idemdash.dashboard.templates`` and ``.static`` (pyproject's package-dir
    maps them from the checkout's top-level folders), found as every installed form has them: a wheel, an unpacked
    sdist, an editable install."""
    spec = importlib.util.find_spec(f"idemdash.dashboard.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"idemdash.dashboard.{name} is not installed: reinstall idemdash (docs/development.md)")
    return str(next(iter(spec.submodule_search_locations)))


MISSING_SECRET = (
    "IDEMDASH_SECRET_KEY is not set, and under gunicorn each worker builds its own app (and a replaced worker "
    "another): each would sign sessions and CSRF tokens with a key of its own, and a form served by one would be "
    "refused by the next. Set IDEMDASH_SECRET_KEY (the same value for every worker and replica), or start it with "
    "`idemdash serve`, which makes one key for all its workers."
)


def _process_secret_key() -> str:
    """A random key for a single process (``flask run``, the demo); refused under gunicorn, where several
    processes build the app. gunicorn prints an AppImportError as its one line and stops."""
    if os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/"):  # gunicorn's arbiter sets it
        raise AppImportError(MISSING_SECRET)
    logging.getLogger(__name__).warning("IDEMDASH_SECRET_KEY is not set; using a random key for this process only")
    return secrets.token_hex(32)


def create_app(test_config: Mapping[str, Any] | None = None, *, testing: bool = False) -> Flask:
    config = settings.load(**dict(test_config or {}))
    app = Flask(__name__, template_folder=_asset_dir("templates"), static_folder=_asset_dir("static"))
    targets.init_settings(app, config)
    app.config["TESTING"] = testing
    app.config["SECRET_KEY"] = config.secret_key or _process_secret_key()

    # auth first: its checks (AUTH=none answers this machine only) come before anything else answers
    auth.init_app(app)
    web.init_app(app)
    error_handlers.init_app(app)
    # one target (and pool) per database and app: several apps in one process (tests) must not share a pool
    targets.init_app(app)
    htmx.init_app(app)

    for module in (
        probes,
        overview,
        keys,
        actions,
        notes,
        search,
        hotspots,
        suppression,
        outbox,
        outbox_rows,
        outbox_actions,
        outbox_bulk,
        inbox,
        audit,
        metrics,
        openapi,
        purges,
        purge_cancel,
        health,
        runbooks,
        tables,
        table_rows,
        library_actions,
        fleet_search,
        workers,
        breakdown,
        journey,
        routes_map,
    ):
        app.register_blueprint(module.bp)
    # a database of another library's profile: its tables page, and no route of the reference tables
    app.before_request(tables.refuse_reference_routes)
    databases.init_app(app)  # after the blueprints: it gives each of their routes a per-database twin
    metrics.init_app(app)

    if config.run_jobs:
        app.extensions["idemdash_scheduler"] = start_in_background(config)
    return app
