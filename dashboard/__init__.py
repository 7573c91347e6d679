"""idemdash: the Flask application factory."""
from __future__ import annotations

if not __name__.startswith("idemdash."):  # imported by its old top-level name, from a checkout
    raise ImportError(f"{__name__!r} is 'idemdash.dashboard' since idemdash 0.2: gunicorn 'idemdash.dashboard:create_app()', gunicorn -c python:idemdash.dashboard.gunicorn_config, flask --app idemdash.dashboard")

import logging
import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask
from htmx_flask import Htmx

from idemdash.core import settings
from idemdash.dashboard import (
    actions,
    audit,
    auth,
    breakdown,
    databases,
    fleet_search,
    health,
    hotspots,
    inbox,
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
    runbooks,
    search,
    suppression,
    table_rows,
    tables,
    targets,
    web,
    workers,
)
from idemdash.dashboard.databases import DashboardApp
from idemdash.jobs.scheduler import start_in_background

htmx = Htmx()

_HERE = Path(__file__).resolve().parent


def _asset_dir(name: str) -> str:
    """templates/ and static/ live inside the package in a wheel, beside it in a checkout."""
    packaged = _HERE / name
    if packaged.is_dir():
        return str(packaged)
    return str(_HERE.parent / name)


def _gunicorn_workers() -> int | None:
    """How many apps gunicorn builds, each with its own process key: 1 with --preload (the master builds one for all
    its workers), else its worker count; None when it cannot tell.

    gunicorn resolves its settings again here, with its own parser, from what it was started with: the command line
    (the workers inherit the master's argv), GUNICORN_CMD_ARGS, a config file and WEB_CONCURRENCY.
    """
    from gunicorn.app.wsgiapp import WSGIApplication

    try:
        cfg = WSGIApplication("%(prog)s [OPTIONS] [APP_MODULE]").cfg
    except (Exception, SystemExit):  # not gunicorn's own command line (an embedding server): unknown
        return None
    return 1 if cfg.preload_app else cfg.workers


def _process_secret_key() -> str:
    """A random key for this process; refused when gunicorn would give each of several workers its own.

    Sessions (and the CSRF token in them) signed by one worker would fail on the next, so a form posted
    to another worker than the one that served it would be refused at random.
    """
    if os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/"):
        workers = _gunicorn_workers()
        if workers != 1:
            _refuse_without_secret(workers)
    logging.getLogger(__name__).warning(
        "IDEMDASH_SECRET_KEY is not set; using a random key for this process only")
    return secrets.token_hex(32)


def _refuse_without_secret(workers: int | None) -> None:
    """Stop gunicorn with one line: AppImportError is printed without a traceback and halts the arbiter.

    Every worker refuses at once, and the arbiter trips over a second failed worker while it is already
    stopping (a traceback of its own). So one worker, the first to create a file named after the arbiter's pid,
    fails; the others wait for the arbiter's stop signal (SIGTERM) and leave quietly, also when it is slow to come
    (a busy machine): a worker that exits cleanly is only replaced, and its replacement waits the same way.
    """
    from gunicorn.errors import AppImportError

    if not _first_to_refuse(Path(tempfile.gettempdir()) / f"idemdash-refused-{os.getppid()}"):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        time.sleep(10)
        sys.exit(0)
    raise AppImportError(
        f"IDEMDASH_SECRET_KEY is not set and gunicorn runs {workers or 'an unknown number of'} workers, which "
        "would each sign sessions and CSRF tokens with a key of their own: set IDEMDASH_SECRET_KEY (the same "
        "value for every worker and replica), or start it with `idemdash serve`, which makes one key for all "
        "its workers.")


def _first_to_refuse(marker: Path) -> bool:
    """True for the one process that creates ``marker``; a marker older than a minute is an earlier arbiter's."""
    try:
        if time.time() - marker.stat().st_mtime > 60:
            marker.unlink()
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def create_app(test_config: Mapping[str, Any] | None = None, *, testing: bool = False) -> Flask:
    values = settings.load(**dict(test_config or {}))
    app = DashboardApp(__name__, template_folder=_asset_dir("templates"), static_folder=_asset_dir("static"))
    app.config.update(values)
    app.config["TESTING"] = testing
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = _process_secret_key()

    # auth first: its checks (AUTH=none answers this machine only) come before anything else answers
    auth.init_app(app)
    web.init_app(app)
    # one target (and pool) per database and app: several apps in one process (tests) must not share a pool
    targets.init_app(app)
    htmx.init_app(app)

    for module in (probes, overview, keys, actions, notes, search, hotspots, suppression, outbox, outbox_rows, outbox_actions, outbox_bulk, inbox,
                   audit, metrics, openapi, purges, purge_cancel, health, runbooks, tables, table_rows, library_actions,
                   fleet_search, workers, breakdown):
        app.register_blueprint(module.bp)
    # a database of another library's profile: its tables page, and no route of the reference tables
    app.before_request(tables.refuse_reference_routes)
    databases.init_app(app)  # after the blueprints: it gives each of their routes a per-database twin
    metrics.init_app(app)

    if app.config["RUN_JOBS"]:
        app.extensions["idemdash_scheduler"] = start_in_background(app.config)
    return app
