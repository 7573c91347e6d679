"""`idemdash migrate` and `idemdash init-app-schema`: idemdash's own schema, and the reference application schema."""

from __future__ import annotations

import sys

import click

from idemdash.cli.common import (
    connect,
    database_errors,
    database_url_option,
    databases_option,
    target,
    targets,
)
from idemdash.cli.fleet import Outcome, each_database, keep_going_option
from idemdash.core.formatting import plural
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import MigrationError
from idemdash.queries.migrate import migrate as run_migrations
from idemdash.queries.target import Target


@click.command()
@databases_option
@keep_going_option
def migrate(database_url: str, database: str | None, keep_going: bool) -> None:
    """Create or update idemdash's own schema in each database (safe to run from several replicas at once)."""
    sys.exit(each_database(targets(database_url, database), _migrate, keep_going=keep_going))


def _migrate(db: Target) -> Outcome:
    with connect(db) as conn, database_errors(db, "migrating idemdash's schema"):
        try:
            applied = run_migrations(conn)
        except MigrationError as exc:  # an edited migration: nothing was applied
            raise click.ClickException(f"migrating idemdash's schema failed: {exc}") from None
    if not applied:
        click.echo("idemdash schema is up to date")
        return Outcome("up to date")
    for migration in applied:
        click.echo(f"applied {migration.version:04d}_{migration.name}")
    return Outcome("migrated", detail=f"{plural(len(applied), 'migration')} applied")


@click.command("init-app-schema")
@database_url_option
@click.option(
    "--status-type",
    type=click.Choice(["enum", "text"]),
    default="enum",
    show_default=True,
    help="Make `status` a PostgreSQL enum or plain text.",
)
@click.option(
    "--partitioned",
    is_flag=True,
    help="Range-partition the inbox (by processed_at) and outbox (by created_at) by day, so purges drop "
    "whole days; uniqueness then holds within a day only (see docs/reference-schema.md).",
)
def init_app_schema(database_url: str, status_type: str, partitioned: bool) -> None:
    """Create the reference application tables and claim/complete/fail functions (safe to re-run)."""
    db = target(database_url)
    tables = db.tables
    with connect(db) as conn, database_errors(db, "creating the reference schema"):
        create_app_schema(conn, tables, status_type, partitioned=partitioned)  # type: ignore[arg-type]  # a click.Choice
    click.echo(
        f"reference schema ready in schema {tables.schema!r}: {tables.keys}, {tables.inbox}, "
        f"{tables.outbox} and the claim/complete/fail/consume functions"
    )
    if partitioned:
        click.echo(
            f"{tables.inbox} and {tables.outbox} are partitioned by day, with partitions for the next week; "
            "`idemdash scheduler` makes the following ones (IDEMDASH_PARTITIONS_SCHEDULE)"
        )
