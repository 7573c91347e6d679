"""idemdash: the Flask application factory."""
from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Any, Mapping

from flask import Flask
from htmx_flask import Htmx

from dashboard import config as settings
from dashboard.db import Database

htmx = Htmx()

_HERE = Path(__file__).resolve().parent


def _asset_dir(name: str) -> str:
    """templates/ and static/ live inside the package in a wheel, beside it in a checkout."""
    packaged = _HERE / name
    if packaged.is_dir():
        return str(packaged)
    return str(_HERE.parent / name)


def create_app(test_config: Mapping[str, Any] | None = None, *, testing: bool = False) -> Flask:
    values = settings.load(**dict(test_config or {}))
    if not values["DATABASE_URL"]:
        raise settings.ConfigError(
            "IDEMDASH_DATABASE_URL is not set: point it at the database that holds the application's "
            "idempotency tables (or run `idemdash demo` for an embedded one)")

    app = Flask(__name__, template_folder=_asset_dir("templates"), static_folder=_asset_dir("static"))
    app.config.update(values)
    app.config["TESTING"] = testing
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = secrets.token_hex(32)
        logging.getLogger(__name__).warning(
            "IDEMDASH_SECRET_KEY is not set; using a random key for this process only")

    from dashboard import auth, web

    # auth first: its checks (AUTH=none answers this machine only) come before anything else answers
    auth.init_app(app)
    web.init_app(app)
    # one Database (and pool) per app: several apps in one process (tests) must not share a pool
    Database().init_app(app)
    htmx.init_app(app)

    from dashboard import (actions, audit, health, hotspots, inbox, keys, metrics, openapi, outbox, overview, probes,
                           purges, suppression)

    for module in (probes, overview, keys, actions, hotspots, suppression, outbox, inbox, audit, metrics, openapi,
                   purges, health):
        app.register_blueprint(module.bp)
    metrics.init_app(app)

    if app.config["RUN_JOBS"]:
        from jobs.scheduler import start_in_background

        app.extensions["idemdash_scheduler"] = start_in_background(app.config)
    return app
