"""The `idemdash` command line."""
from __future__ import annotations

import logging
import sys
from typing import Any

import click
import psycopg

from dashboard import config as settings

database_url_option = click.option(
    "--database-url", envvar="IDEMDASH_DATABASE_URL", default="", show_envvar=True,
    help="Database holding the application tables (and idemdash's own schema).")


def _config(**overrides: Any) -> dict[str, Any]:
    try:
        return settings.load(**{k: v for k, v in overrides.items() if v not in (None, "")})
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _require_url(config: dict[str, Any]) -> str:
    if not config["DATABASE_URL"]:
        raise click.UsageError("no database: pass --database-url or set IDEMDASH_DATABASE_URL")
    return config["DATABASE_URL"]


def _connect(url: str) -> psycopg.Connection:
    try:
        return psycopg.connect(url, autocommit=True, application_name="idemdash-cli")
    except psycopg.OperationalError as exc:
        raise click.ClickException(f"cannot connect to {settings.redact_dsn(url)}: {exc}") from None


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Log debug detail.")
def main(verbose: bool) -> None:
    """idemdash: dashboard and job runner for PostgreSQL idempotency keys, inbox and outbox."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@database_url_option
def migrate(database_url: str) -> None:
    """Create or update idemdash's own schema (safe to run from several replicas at once)."""
    from queries.migrate import migrate as run_migrations

    url = _require_url(_config(DATABASE_URL=database_url))
    with _connect(url) as conn:
        applied = run_migrations(conn)
    if applied:
        for migration in applied:
            click.echo(f"applied {migration.version:04d}_{migration.name}")
    else:
        click.echo("idemdash schema is up to date")


@main.command("init-app-schema")
@database_url_option
@click.option("--status-type", type=click.Choice(["enum", "text"]), default="enum", show_default=True,
              help="Make `status` a PostgreSQL enum or plain text.")
def init_app_schema(database_url: str, status_type: str) -> None:
    """Create the reference application tables and claim/complete/fail functions (safe to re-run)."""
    from queries import Tables
    from queries.app_schema import create_app_schema

    config = _config(DATABASE_URL=database_url)
    tables = Tables.from_config(config)
    with _connect(_require_url(config)) as conn:
        create_app_schema(conn, tables, status_type)  # type: ignore[arg-type]
    click.echo(f"reference schema ready in schema {tables.schema!r}: {tables.keys}, {tables.inbox}, "
               f"{tables.outbox} and the claim/complete/fail/consume functions")


@main.command()
@database_url_option
@click.option("--rate", type=click.FloatRange(min=0.1), default=20.0, show_default=True,
              help="Client requests per second, across all simulated clients.")
@click.option("--clients", type=click.IntRange(min=1), default=4, show_default=True,
              help="Concurrent simulated clients (threads).")
@click.option("--backfill", "backfill_days", type=click.IntRange(min=0), default=0,
              help="First write DAYS of history quickly, then run live.")
@click.option("--duration", type=click.FloatRange(min=0), default=0,
              help="Stop after this many seconds (0: until Ctrl-C).")
@click.option("--seed", type=int, default=None, help="Random seed, for a repeatable run.")
def simulate(database_url: str, rate: float, clients: int, backfill_days: int, duration: float,
             seed: int | None) -> None:
    """Run a live workload against the reference functions (any database with the reference schema)."""
    from dashboard.simulate import run_cli

    config = _config(DATABASE_URL=database_url)
    run_cli(_require_url(config), config, rate=rate, clients=clients, backfill_days=backfill_days,
            duration=duration, seed=seed)


@main.command()
def scheduler() -> None:
    """Run the scheduled jobs in this process (APScheduler) until stopped."""
    from jobs.scheduler import run_blocking

    config = _config()
    _require_url(config)
    run_blocking(config)


@main.command()
@click.option("--bind", default=None, help="host:port to listen on [default: IDEMDASH_BIND].")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="gunicorn worker processes [default: IDEMDASH_WORKERS].")
def serve(bind: str | None, workers: int | None) -> None:
    """Serve the dashboard with gunicorn."""
    from gunicorn.app.base import BaseApplication

    config = _config()
    _require_url(config)
    options = {"bind": bind or config["BIND"], "workers": workers or config["WORKERS"],
               "accesslog": "-", "timeout": 30, "graceful_timeout": 10}

    class Gunicorn(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self):
            from dashboard import create_app

            return create_app()

    Gunicorn().run()


@main.command()
@click.option("--fresh", is_flag=True, help="Delete the demo database and start over.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--rate", type=click.FloatRange(min=0.1), default=15.0, show_default=True,
              help="Simulated client requests per second.")
@click.option("--backfill", "backfill_days", type=click.IntRange(min=0), default=3, show_default=True,
              help="Days of history written when the demo database is new.")
def demo(fresh: bool, host: str, port: int, rate: float, backfill_days: int) -> None:
    """Embedded PostgreSQL, reference schema, live workload, scheduler and web app, all in one."""
    from dashboard.demo import run_demo

    sys.exit(run_demo(fresh=fresh, host=host, port=port, rate=rate, backfill_days=backfill_days))


if __name__ == "__main__":  # pragma: no cover
    main()
