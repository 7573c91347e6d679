"""The `idemdash` command line."""
from __future__ import annotations

import logging
import secrets
import sys
from typing import Any

import click
import psycopg

from core import settings
from queries.target import Target

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
@database_url_option
@click.option("--apply-indexes", is_flag=True,
              help="Build the missing recommended indexes, concurrently and one at a time.")
def check(database_url: str, apply_indexes: bool) -> None:
    """The indexes the pages and purges need (statement and why for each), the schema checks; exit 1 if any missing."""
    from dashboard.check import run

    config = _config(DATABASE_URL=database_url)
    url = _require_url(config)
    _connect(url).close()  # a clear error for a wrong URL before anything else
    sys.exit(run(url, config, apply_indexes=apply_indexes))


@main.command()
@database_url_option
@click.option("--table", "tables", type=click.Choice(["keys", "inbox", "outbox"]), multiple=True,
              help="Purge only this table (repeatable) [default: keys, inbox and outbox].")
@click.option("--dry-run", is_flag=True, help="Count what each purge would delete; delete nothing.")
def purge(database_url: str, tables: tuple[str, ...], dry_run: bool) -> None:
    """Run the retention purges now, one run per table, recorded in the purge history like scheduled runs."""
    import getpass
    import time

    from jobs.purges import TABLES, run_purge

    config = _config(DATABASE_URL=database_url)
    _require_url(config)
    target = Target.from_settings(config)
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("jobs.purges").setLevel(logging.WARNING)  # the lines below say it all
    try:
        started_by = f"cli:{getpass.getuser()}"
    except Exception:  # no user name in this environment (some containers)
        started_by = "cli"
    live = sys.stdout.isatty()
    verb = "to delete" if dry_run else "deleted"
    results = []
    for table in [t for t in TABLES if not tables or t in tables]:
        started = time.monotonic()
        run_ids: list[int] = []

        def on_batch(batches: int, rows: int, table: str = table) -> None:
            line = f"  {table}: batch {batches}, {rows:,} rows {verb}"
            if live:
                click.echo("\r" + line, nl=False)
            else:
                click.echo(line)

        click.echo(f"{'dry run: counting' if dry_run else 'purging'} {table} ...")
        result = run_purge(target, table, dry_run=dry_run, started_by=started_by, by_person=True,
                           on_start=run_ids.append, on_batch=on_batch)
        if live and result.batches:
            click.echo()
        results.append((result, time.monotonic() - started))

    click.echo("")
    for result, seconds in results:
        run = f"run {result.run_id}" if result.run_id is not None else "not recorded"
        click.echo(f"{result.table:<7} {result.outcome:<17} {run:<12} {result.batches:>6,} batches "
                   f"{result.rows:>12,} rows {verb}  {seconds:.1f}s")
        if result.outcome == "budget_exhausted":
            click.echo("        time budget (IDEMDASH_PURGE_TIME_BUDGET_SECONDS) used up; the next run carries on")
        if result.error:
            click.echo(f"        {result.error}")
    if any(result.outcome == "failed" for result, _ in results):
        sys.exit(1)


@main.command()
@click.option("--bind", default=None, help="host:port to listen on [default: IDEMDASH_BIND].")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="gunicorn worker processes [default: IDEMDASH_WORKERS].")
def serve(bind: str | None, workers: int | None) -> None:
    """Serve the dashboard with gunicorn."""
    from gunicorn.app.base import BaseApplication

    from dashboard import auth

    config = _config()
    _require_url(config)
    options = {"bind": bind or config["BIND"], "workers": workers or config["WORKERS"],
               "accesslog": "-", "timeout": 30, "graceful_timeout": 10}
    try:
        # before gunicorn starts: its workers would only fail one by one
        auth.check_bind(config, auth.bind_host(options["bind"]), what=f"--bind {options['bind']}")
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
    options["pre_request"] = auth.mark_repeated_headers

    class Gunicorn(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self):
            from dashboard import create_app

            return create_app({"SECRET_KEY": secret_key})

    Gunicorn().run()


@main.command("hash-password")
@click.option("--user", "name", default=None, help="Print a whole IDEMDASH_USERS_FILE line for this user.")
@click.option("--role", type=click.Choice(["viewer", "operator"]), default="viewer", show_default=True,
              help="The role on that line.")
def hash_password(name: str | None, role: str) -> None:
    """Hash a password for IDEMDASH_USERS_FILE (asks for it twice; nothing is echoed or stored)."""
    from werkzeug.security import generate_password_hash

    from dashboard.auth import valid_user_name

    if name is not None and not valid_user_name(name):
        raise click.UsageError("--user must be 1-200 characters without spaces or ':'")
    password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    if not password:
        raise click.UsageError("the password is empty")
    hashed = generate_password_hash(password)
    click.echo(f"{name}:{role}:{hashed}" if name else hashed)


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
