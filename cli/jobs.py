"""`idemdash purge` and `idemdash scheduler`: the retention purges now, or every job on its schedule."""
from __future__ import annotations

import getpass
import logging
import sys
import time

import click

from cli.common import databases_option, heading, load_settings, preflight, targets
from jobs.purge_run import TABLES, run_purge
from jobs.scheduler import run_blocking


@click.command()
@databases_option
@click.option("--table", "tables", type=click.Choice(["keys", "inbox", "outbox"]), multiple=True,
              help="Purge only this table (repeatable) [default: keys, inbox and outbox].")
@click.option("--dry-run", is_flag=True, help="Count what each purge would delete; delete nothing.")
def purge(database_url: str, database: str | None, tables: tuple[str, ...], dry_run: bool) -> None:
    """Run the retention purges now, one run per table and database, recorded in the purge history like
    scheduled runs."""
    chosen = targets(database_url, database)
    failed = False
    for db in chosen:
        heading(db, len(chosen) > 1)
        failed = _purge(db, tables, dry_run) or failed
    if failed:
        sys.exit(1)


def _purge(db, tables: tuple[str, ...], dry_run: bool) -> bool:
    """One database's purges; True when a run failed."""
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("jobs.purge_run").setLevel(logging.WARNING)  # the lines below say it all
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
        result = run_purge(db, table, dry_run=dry_run, started_by=started_by, by_person=True,
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
    return any(result.outcome == "failed" for result, _ in results)


@click.command()
@databases_option
def scheduler(database_url: str, database: str | None) -> None:
    """Run the scheduled jobs of every database (or of --database NAME) in this process until stopped (checks
    each database first)."""
    chosen = targets(database_url, database)
    for db in chosen:
        preflight(db, "the scheduler" if len(chosen) == 1 else f"the scheduler for database {db.name}")
    run_blocking(load_settings(), chosen)
