"""The web app's databases: one ``Target`` per database it serves (core.databases, and the members of its fleets
that queries/fleets.py finds), built and opened in ``init_app``; ``get_target`` is the one the current request is
about; ``app_settings`` is the app's ``Settings`` (a database's own are its target's).

When a database's pool opens is the worker's ``PoolBudget`` (queries/pool_budget.py), kept in
``app.extensions["idemdash_pools"]``: with one database at start, as always; with several (or any fleet) when a
request first reads or writes that database, and it closes after IDEMDASH_FLEET_IDLE_SECONDS unused, all of them
within IDEMDASH_FLEET_MAX_CONNECTIONS.

A request under /db/<name>/… (or /api/v1/db/<name>/…, see dashboard/databases.py) is about that database;
any other request about the first one. A fleet member's name has one '/' (``orders/orders_eu``), and so its URLs
one more segment (/db/orders/orders_eu/keys). One pool per database and process: gunicorn workers each build their
own app after the fork, and several apps in one process (the tests) each have their own.

Membership changes while the app runs: a fleet found by a pattern is asked again every FLEET_DISCOVER_SECONDS
(``Fleets``), a database created since joins and one dropped leaves (its pages answer 404 naming it). The targets
dict is never changed in place: each round builds a new one and replaces it in one assignment, so a request reads
either the old or the new one whole, then closes the pools of the databases that left.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import cast

from flask import Flask, Response, abort, current_app, g, has_request_context, jsonify, make_response, request
from werkzeug.routing import BaseConverter, ValidationError

from idemdash.core.databases import Config, load_config
from idemdash.core.settings import Settings
from idemdash.queries.fleets import Membership, resolve
from idemdash.queries.pool_budget import PoolBudget
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

THREAD_NAME = "idemdash-fleet-discover"
NONE_YET = (
    "no database yet: IDEMDASH_CONFIG describes only fleets, and no fleet's server has answered (they are "
    "asked again every IDEMDASH_FLEET_DISCOVER_SECONDS):"
)


def init_settings(app: Flask, settings: Settings) -> None:
    """Keep the one ``Settings`` create_app loaded on the app (``app.config``'s string keys no type checker reads);
    Flask's own key that a setting decides goes into ``app.config`` too."""
    app.extensions["idemdash_settings"] = settings
    app.config["SESSION_COOKIE_SECURE"] = settings.session_cookie_secure  # read by Flask's session cookie


def app_settings(app: Flask | None = None) -> Settings:
    """The settings of ``app`` (default: the app handling the request)."""
    return cast(Settings, (app or current_app).extensions["idemdash_settings"])


def init_app(app: Flask) -> dict[str, Target]:
    config = load_config(app_settings(app))
    membership = resolve(config)
    targets = {d.name: Target.from_settings(d.settings, d.name) for d in membership.databases}
    app.extensions["idemdash_pools"] = budget(app_settings(app), targets, lazy=len(targets) > 1 or bool(config.fleets))
    app.extensions["idemdash_targets"] = targets
    fleets = app.extensions["idemdash_fleets"] = Fleets(app, config, membership)
    app.url_map.converters["database"] = _database_converter({fleet.name for fleet in config.fleets})
    if any(fleet.discovered for fleet in config.fleets):
        app.before_request(fleets.start)
        app.before_request(_none_yet)

    @app.url_value_preprocessor
    def pick_database(endpoint: str | None, values: dict | None) -> None:
        # Runs before sign-in (dashboard/auth.py): only notes the name. An unknown one is answered by
        # check_database, after sign-in, so that a stranger learns neither it nor the names there are.
        name = values.pop("database", None) if values else None
        if name is None:
            return
        if name in all_targets():
            g.database = name
        else:
            g.unknown_database = name

    return targets


def signed_in() -> bool:
    """Someone dashboard/auth.py vouched for asks (``g.user``): only they see names, hosts and causes."""
    return has_request_context() and g.get("user") is not None


def database_in_path() -> bool:
    """Whether the request came by a route's /db/<name>/… rule (dashboard/databases.py), which has the plain
    route's endpoint: the probes' are pages like any other."""
    rule = request.url_rule
    return rule is not None and "database" in rule.arguments


def check_database() -> None:
    """/db/<name>/… for a name this app does not serve: 404 naming the ones it does (after sign-in only)."""
    name = g.get("unknown_database")
    if name is not None:
        abort(404, current_app.extensions["idemdash_fleets"].unknown(name))


def budget(config: Settings, targets: Mapping[str, Target], *, lazy: bool) -> PoolBudget:
    """The worker's pools: opened now with one database; with several on demand, within the budget, which the
    background reads share (the all-databases refresh's threads, and one for /metrics)."""
    background = min(config.fleet_refresh_threads, max(1, len(targets))) + 1
    keeper = PoolBudget(
        targets,
        lazy=lazy,
        budget=config.fleet_max_connections,
        idle_seconds=float(config.fleet_idle_seconds),
        background=background,
        wait_seconds=float(config.pool_timeout_seconds),
        fan_out_threads=config.fleet_refresh_threads,
    )
    for target in targets.values():
        target.keeper = keeper
    return keeper


def _none_yet() -> Response | None:
    """Only fleets, and no fleet's server answered yet: every page but /healthz answers 503 with why, plainly (the
    error page itself shows a database's context, and there is none)."""
    if current_app.extensions["idemdash_targets"] or (
        request.endpoint in ("static", "probes.healthz") and not database_in_path()
    ):
        return None
    message = NONE_YET + " " + "; ".join(current_app.extensions["idemdash_fleets"].membership.problems.values())
    if not signed_in():  # the probes and /metrics: a stranger learns "down", not the fleets' servers
        message = "unavailable: no database yet"
    if request.path.startswith("/api/"):
        response = jsonify({"error": message})
    else:
        response = make_response(message)
        response.mimetype = "text/plain"
    response.status_code = 503
    response.headers["Retry-After"] = "30"
    return response


def _database_converter(fleets: set[str]) -> type[BaseConverter]:
    """The <database:…> of /db/<database>/…: a database's name, or a fleet member's ``<fleet>/<database>``."""

    class DatabaseName(BaseConverter):
        regex = r"[^/]+(?:/[^/]+)?"
        part_isolating = False

        def to_python(self, value: str) -> str:
            if "/" in value and value.split("/", 1)[0] not in fleets:
                raise ValidationError()  # not a fleet's: the path means another route
            return value

        def to_url(self, value: str) -> str:
            return "/".join(super(DatabaseName, self).to_url(part) for part in str(value).split("/", 1))

    return DatabaseName


class Fleets:
    """Which databases the app serves now: found at start, and again every FLEET_DISCOVER_SECONDS by one thread per
    process (started at the first request, never at import nor in a gunicorn master)."""

    def __init__(self, app: Flask, config: Config, membership: Membership) -> None:
        self.app, self.config, self.membership = app, config, membership
        self.interval = float(app_settings(app).fleet_discover_seconds)
        self.listeners: list[Callable[[dict[str, Target]], None]] = []
        self._lock = threading.Lock()  # one discovery round at a time
        self._start_lock = threading.Lock()
        self._stop = threading.Event()
        self._pid: int | None = None
        self._thread: threading.Thread | None = None

    def on_change(self, listener: Callable[[dict[str, Target]], None]) -> None:
        """``listener(targets)`` after each round that changed the membership (the overview, the metrics)."""
        self.listeners.append(listener)

    def start(self) -> None:
        if self._pid == os.getpid() or self._stop.is_set():
            return
        with self._start_lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread.ident is not None and thread is not threading.current_thread():
            thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.discover()
            except Exception:  # a round that failed is retried at the next; the thread must not die
                log.exception("fleet discovery failed")

    def discover(self) -> Membership:
        """One round: ask each fleet's server again, then replace the targets when the members changed."""
        with self._lock:
            membership = resolve(self.config, self.membership)
            self.membership = membership
            old: dict[str, Target] = self.app.extensions["idemdash_targets"]
            if membership.names == list(old):
                return membership
            targets: dict[str, Target] = {}
            for database in membership.databases:
                target = old.get(database.name)
                if target is None:  # its pool opens when a request first uses it (a fleet's pools are lazy)
                    target = Target.from_settings(database.settings, database.name)
                    target.keeper = self.app.extensions["idemdash_pools"]
                targets[database.name] = target
            self.app.extensions["idemdash_targets"] = targets  # one assignment: requests see old or new, whole
            joined = [name for name in targets if name not in old]
            left = [name for name in old if name not in targets]
            log.info(
                "fleet membership: %d database(s); joined: %s; left: %s",
                len(targets),
                ", ".join(joined) or "none",
                ", ".join(left) or "none",
            )
            for listener in self.listeners:
                listener(targets)
            for name in left:
                self.app.extensions["idemdash_pools"].forget(old[name])
                old[name].close()
            return membership

    def unknown(self, name: str) -> str:
        """Why /db/<name>/… answers 404."""
        fleet, _, member = name.partition("/")
        if member:
            problem = self.membership.problems.get(fleet)
            why = f"; its server does not answer now: {problem}" if problem else ""
            return (
                f"no database {name!r} here: fleet {fleet} has no database {member!r} now (it was dropped, or "
                f"does not match the fleet's pattern; the fleets are asked every {int(self.interval)} s){why}"
            )
        served = list(all_targets())
        shown = ", ".join(served[:20]) + (f" and {len(served) - 20} more" if len(served) > 20 else "")
        return f"no database {name!r} here: this dashboard serves {shown or 'none yet'}"


def all_targets() -> dict[str, Target]:
    """Every database this app serves now, in the configured order (the first is the one plain URLs mean)."""
    return current_app.extensions["idemdash_targets"]


def current_database() -> str | None:
    """The database named in the request's URL (/db/<name>/…), or None for a plain URL, and for a stranger's request
    (whose error page must not link into a database it named, which would tell it that the name exists)."""
    return g.get("database") if signed_in() else None


def get_target() -> Target:
    targets = all_targets()
    name = current_database()
    if name is not None:
        target = targets.get(name)
        if target is None:  # left the fleet since the request started
            abort(404, current_app.extensions["idemdash_fleets"].unknown(name))
        return target
    if not targets:
        abort(503, NONE_YET)
    return next(iter(targets.values()))


def close(app: Flask) -> None:
    """Stop the fleet discovery and the all-databases refresh (dashboard/all_databases.py), then close every pool."""
    fleets = app.extensions.get("idemdash_fleets")
    if fleets is not None:
        fleets.close()
    refresh = app.extensions.get("idemdash_overview")
    if refresh is not None:
        refresh.close()
    app.extensions["idemdash_pools"].close()
    for target in app.extensions["idemdash_targets"].values():
        target.close()
