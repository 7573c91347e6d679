"""`idemdash migrate` and `idemdash init-app-schema`: idemdash's own schema, and the reference application schema."""
from __future__ import annotations

import click

from idemdash.cli.common import (
    connect,
    database_errors,
    database_url_option,
    databases_option,
    heading,
    target,
    targets,
)
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import migrate as run_migrations


@click.command()
@databases_option
def migrate(database_url: str, database: str | None) -> None:
    """Create or update idemdash's own schema in each database (safe to run from several replicas at once)."""
    chosen = targets(database_url, database)
    for db in chosen:
        heading(db, len(chosen) > 1)
        with connect(db) as conn, database_errors(db, "migrating idemdash's schema"):
            applied = run_migrations(conn)
        if applied:
            for migration in applied:
                click.echo(f"applied {migration.version:04d}_{migration.name}")
        else:
            click.echo("idemdash schema is up to date")


@click.command("init-app-schema")
@database_url_option
@click.option("--status-type", type=click.Choice(["enum", "text"]), default="enum", show_default=True,
              help="Make `status` a PostgreSQL enum or plain text.")
@click.option("--partitioned", is_flag=True,
              help="Range-partition the inbox (by processed_at) and outbox (by created_at) by day, so purges drop "
                   "whole days; uniqueness then holds within a day only (see docs/reference-schema.md).")
def init_app_schema(database_url: str, status_type: str, partitioned: bool) -> None:
    """Create the reference application tables and claim/complete/fail functions (safe to re-run)."""
    db = target(database_url)
    tables = db.tables
    with connect(db) as conn, database_errors(db, "creating the reference schema"):
        create_app_schema(conn, tables, status_type, partitioned=partitioned)  # type: ignore[arg-type]  # a click.Choice
    click.echo(f"reference schema ready in schema {tables.schema!r}: {tables.keys}, {tables.inbox}, "
               f"{tables.outbox} and the claim/complete/fail/consume functions")
    if partitioned:
        click.echo(f"{tables.inbox} and {tables.outbox} are partitioned by day, with partitions for the next week; "
                   "`idemdash scheduler` makes the following ones (IDEMDASH_PARTITIONS_SCHEDULE)")
