"""`idemdash serve` (the dashboard under gunicorn) and `idemdash hash-password` (a line for the users file)."""
from __future__ import annotations

import logging
import secrets

import click
from gunicorn.app.base import BaseApplication
from werkzeug.security import generate_password_hash

from cli.common import load_settings, require_url
from core import settings
from dashboard import auth, create_app, network
from dashboard.accounts import valid_user_name


@click.command()
@click.option("--bind", default=None, help="host:port to listen on [default: IDEMDASH_BIND].")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="gunicorn worker processes [default: IDEMDASH_WORKERS].")
def serve(bind: str | None, workers: int | None) -> None:
    """Serve the dashboard with gunicorn."""
    config = load_settings()
    require_url(config)
    options = {"bind": bind or config["BIND"], "workers": workers or config["WORKERS"],
               "accesslog": "-", "timeout": 30, "graceful_timeout": 10}
    try:
        # before gunicorn starts: its workers would only fail one by one
        network.check_bind(config, network.bind_host(options["bind"]), what=f"--bind {options['bind']}")
        auth.check_config(config)
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None

    # one key for every worker (each builds its own app after the fork): a session or CSRF token one worker
    # signed must hold on the next
    secret_key = config["SECRET_KEY"] or secrets.token_hex(32)
    if not config["SECRET_KEY"]:
        logging.getLogger(__name__).warning(
            "IDEMDASH_SECRET_KEY is not set: made one key for all %d workers of this server; sessions and CSRF "
            "tokens (open forms) end when the server restarts. Set IDEMDASH_SECRET_KEY to keep them across "
            "restarts.", options["workers"])
    # several X-Forwarded-Groups lines would reach the app joined into one list: count them while gunicorn can
    options["pre_request"] = network.mark_repeated_headers

    class Gunicorn(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self):  # in each worker, after the fork
            return create_app({"SECRET_KEY": secret_key})

    Gunicorn().run()


@click.command("hash-password")
@click.option("--user", "name", default=None, help="Print a whole IDEMDASH_USERS_FILE line for this user.")
@click.option("--role", type=click.Choice(["viewer", "operator"]), default="viewer", show_default=True,
              help="The role on that line.")
def hash_password(name: str | None, role: str) -> None:
    """Hash a password for IDEMDASH_USERS_FILE (asks for it twice; nothing is echoed or stored)."""
    if name is not None and not valid_user_name(name):
        raise click.UsageError("--user must be 1-200 characters without spaces or ':'")
    password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    if not password:
        raise click.UsageError("the password is empty")
    hashed = generate_password_hash(password)
    click.echo(f"{name}:{role}:{hashed}" if name else hashed)
