"""What every command shares: the --database-url option, settings with their errors as usage errors, a target."""
from __future__ import annotations

from typing import Any

import click
import psycopg

from core import settings
from queries.target import Target

database_url_option = click.option(
    "--database-url", envvar="IDEMDASH_DATABASE_URL", default="", show_envvar=True,
    help="Database holding the application tables (and idemdash's own schema).")


def load_settings(**overrides: Any) -> dict[str, Any]:
    try:
        return settings.load(**{k: v for k, v in overrides.items() if v not in (None, "")})
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def require_url(config: dict[str, Any]) -> str:
    if not config["DATABASE_URL"]:
        raise click.UsageError("no database: pass --database-url or set IDEMDASH_DATABASE_URL")
    return config["DATABASE_URL"]


def target(database_url: str = "", **overrides: Any) -> Target:
    """The database a command works on, from the settings (the option wins over IDEMDASH_DATABASE_URL)."""
    config = load_settings(DATABASE_URL=database_url, **overrides)
    require_url(config)
    return Target.from_settings(config)


def connect(target: Target, application_name: str = "idemdash-cli") -> psycopg.Connection:
    try:
        return target.connect(application_name)
    except psycopg.OperationalError as exc:
        raise click.ClickException(f"cannot connect to {settings.redact_dsn(target.dsn)}: {exc}") from None
