"""`idemdash purge` and `idemdash scheduler`: the retention purges now, or every job on its schedule."""
from __future__ import annotations

import getpass
import logging
import sys
import time

import click

from cli.common import database_url_option, load_settings, preflight, require_url, target
from jobs.purge_run import TABLES, run_purge
from jobs.scheduler import run_blocking
from queries.target import Target


@click.command()
@database_url_option
@click.option("--table", "tables", type=click.Choice(["keys", "inbox", "outbox"]), multiple=True,
              help="Purge only this table (repeatable) [default: keys, inbox and outbox].")
@click.option("--dry-run", is_flag=True, help="Count what each purge would delete; delete nothing.")
def purge(database_url: str, tables: tuple[str, ...], dry_run: bool) -> None:
    """Run the retention purges now, one run per table, recorded in the purge history like scheduled runs."""
    db = target(database_url)
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
    if any(result.outcome == "failed" for result, _ in results):
        sys.exit(1)


@click.command()
@database_url_option
def scheduler(database_url: str) -> None:
    """Run the scheduled jobs in this process (APScheduler) until stopped (checks the database first)."""
    config = load_settings(DATABASE_URL=database_url)
    require_url(config)
    preflight(Target.from_settings(config), "the scheduler")
    run_blocking(config)
