"""`idemdash serve` (the dashboard under gunicorn, which replaces the command's process) and
`idemdash hash-password` (a line for the users file)."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
import tempfile

import click
from werkzeug.security import generate_password_hash

from idemdash.cli.common import database_url_option, load_settings, preflight_fleet, targets
from idemdash.core import parsers, settings
from idemdash.dashboard import auth, gunicorn_config, network
from idemdash.dashboard.accounts import valid_user_name


def _bind(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return parsers.bind(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command()
@database_url_option
@click.option(
    "--bind",
    default=None,
    callback=_bind,
    help="HOST:PORT, [IPv6]:PORT, unix:PATH or fd://N to listen on [default: IDEMDASH_BIND].",
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="gunicorn worker processes [default: IDEMDASH_WORKERS]."
)
def serve(database_url: str, bind: str | None, workers: int | None) -> None:
    """Serve the dashboard with gunicorn (checks the address, the settings and the database first)."""
    config = load_settings(DATABASE_URL=database_url)
    checked = targets(database_url)  # --database-url, or every database of IDEMDASH_CONFIG
    bind = bind or config.bind
    workers = workers or config.workers
    host = network.bind_host(bind)
    try:
        # before gunicorn starts: its workers would only fail one by one
        if host:
            _resolves(host, bind)
        network.check_bind(config, host, what=f"--bind {bind}")
        auth.check_config(config)
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    # with several databases one that cannot be used is logged in one line (its /readyz says it) and the others
    # are served; the server refuses to start only when none can be used
    preflight_fleet(checked, "the web server")

    # the workers build the app from the environment: the databases checked here must be the ones they serve
    env = dict(os.environ)
    if database_url:
        env["IDEMDASH_DATABASE_URL"] = database_url
    typed = click.get_current_context().get_parameter_source("database_url") == click.core.ParameterSource.COMMANDLINE
    if typed:  # --database-url on the command line wins over IDEMDASH_CONFIG's file
        env.pop("IDEMDASH_CONFIG", None)
    if not config.secret_key:
        # one key for every worker (each builds its own app after the fork): a session or CSRF token one worker
        # signed must hold on the next
        env["IDEMDASH_SECRET_KEY"] = secrets.token_hex(32)
        logging.getLogger(__name__).warning(
            "IDEMDASH_SECRET_KEY is not set: made one key for all %d workers of this server; sessions and CSRF "
            "tokens (open forms) end when the server restarts. Set IDEMDASH_SECRET_KEY to keep them across "
            "restarts.",
            workers,
        )
    # the workers' request metrics add up in files here; prometheus_client reads the variable at import, so it
    # is set before gunicorn (and the app) start: gunicorn replaces this process
    if not env.get("PROMETHEUS_MULTIPROC_DIR"):
        env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix=gunicorn_config.OWN_METRICS_DIR_PREFIX)
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:idemdash.dashboard.gunicorn_config",
        "--bind",
        bind,
        "--workers",
        str(workers),
        "--access-logfile",
        "-",
        "--timeout",
        "30",
        "--graceful-timeout",
        "10",
        "idemdash.dashboard:create_app()",
    ]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


def _resolves(host: str, bind: str) -> None:
    try:
        socket.getaddrinfo(host.strip("[]"), None)
    except OSError:
        raise settings.ConfigError(
            f"--bind {bind}: the host {host!r} does not resolve to an address of this "
            "machine; use an address (127.0.0.1, 0.0.0.0, [::1]) or a name that "
            "resolves"
        ) from None


@click.command("hash-password")
@click.option("--user", "name", default=None, help="Print a whole IDEMDASH_USERS_FILE line for this user.")
@click.option(
    "--role",
    type=click.Choice(["viewer", "operator"]),
    default="viewer",
    show_default=True,
    help="The role on that line.",
)
def hash_password(name: str | None, role: str) -> None:
    """Hash a password for IDEMDASH_USERS_FILE (asks for it twice; nothing is echoed or stored)."""
    if name is not None and not valid_user_name(name):
        raise click.UsageError("--user must be 1-200 characters without spaces or ':'")
    password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    if not password:
        raise click.UsageError("the password is empty")
    hashed = generate_password_hash(password)
    click.echo(f"{name}:{role}:{hashed}" if name else hashed)
