"""`idemdash purge` and `idemdash scheduler`: the retention purges now, or every job on its schedule."""

from __future__ import annotations

import getpass
import logging
import signal
import sys
import time

import click

from idemdash.cli.common import connect, databases_option, load_settings, preflight_fleet, targets
from idemdash.cli.fleet import Outcome, each_database, failure, keep_going_option
from idemdash.core.formatting import plural
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.statuses import PURGE_METHOD_WORDS
from idemdash.jobs.library_purge import run_library_purges
from idemdash.jobs.purge_run import TABLES, PartitionEvent, PurgeResult, run_purge
from idemdash.jobs.scheduler import run_blocking
from idemdash.queries.catalog import ShapeNotFound
from idemdash.queries.target import Target

# Without a terminal (a log, a pipe), one progress line for the first batch and then every this many.
PROGRESS_EVERY = 10


class _Progress:
    """Rows, rate and elapsed time of one run as it goes: a line that updates in place on a terminal, one line
    per ``PROGRESS_EVERY`` batches otherwise."""

    def __init__(self, table: str, verb: str, live: bool) -> None:
        self.table, self.verb, self.live = table, verb, live
        self.started = time.monotonic()
        self.width = 0
        self.open = False

    def batch(self, batches: int, rows: int) -> None:
        if not self.live and batches != 1 and batches % PROGRESS_EVERY:
            return
        seconds = time.monotonic() - self.started
        rate = rows / seconds if seconds > 0 else 0.0
        line = (
            f"  {self.table}: {rows:,} rows {self.verb}, {rate:,.0f} rows/s, {seconds:.1f} s "
            f"({batches:,} batch{'' if batches == 1 else 'es'})"
        )
        if self.live:
            click.echo("\r" + line.ljust(self.width), nl=False)  # pad over a longer previous line
            self.width = len(line)
            self.open = True
        else:
            click.echo(line)

    def partition(self, event: PartitionEvent) -> None:
        self.end_line()
        rows = f" ({event.rows:,} rows)" if event.rows is not None else ""
        what = {
            "dropped": "dropped partition",
            "would_drop": "would drop partition",
            "kept": "kept partition",
            "attached_again": "attached again partition",
            "detached": "detached partition",
        }.get(event.action, event.action)
        click.echo(f"  {self.table}: {what} {event.partition}{rows}" + (f": {event.detail}" if event.detail else ""))

    def end_line(self) -> None:
        if self.open:
            click.echo()
            self.open = False


@click.command()
@databases_option
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="TABLE",
    help="Purge only this table (repeatable): keys, inbox or outbox; on a database of another library's "
    "profile, the role of one of its purgeable tables (outbox, inbox, keys, archive) [default: all].",
)
@click.option("--dry-run", is_flag=True, help="Count what each purge would delete; delete nothing.")
@keep_going_option
def purge(database_url: str, database: str | None, tables: tuple[str, ...], dry_run: bool, keep_going: bool) -> None:
    """Run the retention purges now, one run per table and database, recorded in the purge history like
    scheduled runs."""
    chosen = targets(database_url, database)
    with _CtrlC() as ctrl_c:
        several = len(chosen) > 1

        def one(db: Target) -> Outcome:
            if several:
                connect(db, "idemdash-purge").close()  # unreachable: one line, and none of its tables tried
            failed = _purge(db, tables, dry_run, ctrl_c)
            if ctrl_c.asked:
                return Outcome("cancelled (Ctrl-C)", 130)
            if failed:
                return failure("; ".join(failed))
            return Outcome("counted" if dry_run else "purged")

        status = each_database(chosen, one, keep_going=keep_going, stop=lambda: "Ctrl-C" if ctrl_c.asked else None)
    if ctrl_c.asked:
        sys.exit(130)  # stopped by Ctrl-C, as a shell reports it: never "keep going"
    sys.exit(status)


class _CtrlC:
    """The first Ctrl-C asks the running purge to stop after its current batch (the run is recorded as cancelled,
    by whoever ran the command) and starts no other; a second one stops at once."""

    def __init__(self) -> None:
        self.asked = False
        self.by = "cli"

    def __enter__(self) -> _CtrlC:
        self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self.previous)

    def _handle(self, signum: int, frame: object) -> None:
        if self.asked:
            raise KeyboardInterrupt
        self.asked = True
        click.echo("\nCtrl-C: stopping after the current batch (Ctrl-C again to stop at once)", err=True)

    def cancelled_by(self) -> str | None:
        return f"{self.by} (Ctrl-C)" if self.asked else None


def _purge(db: Target, tables: tuple[str, ...], dry_run: bool, ctrl_c: _CtrlC) -> list[str]:
    """One database's purges; each failed run's table and cause."""
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        for name in ("idemdash.jobs.purge_run", "idemdash.jobs.partition_drops", "idemdash.jobs.partition_detach"):
            logging.getLogger(name).setLevel(logging.WARNING)  # the lines below say it all
    try:
        started_by = f"cli:{getpass.getuser()}"
    except Exception:  # no user name in this environment (some containers)
        started_by = "cli"
    ctrl_c.by = started_by
    live = sys.stdout.isatty()
    verb = "to delete" if dry_run else "deleted"
    unknown = [t for t in tables if t not in TABLES] if db.settings.profile == DEFAULT_PROFILE else []
    if unknown:
        raise click.ClickException(
            "; ".join(f"--table {t}: not a table of this database's purges (keys, inbox or outbox)" for t in unknown)
        )
    if db.settings.profile != DEFAULT_PROFILE:
        results = _library_purges(db, tables, dry_run, started_by, ctrl_c)
    else:
        results = []
        for table in [t for t in TABLES if not tables or t in tables]:
            if ctrl_c.asked:
                break
            progress = _Progress(table, verb, live)
            click.echo(f"{'dry run: counting' if dry_run else 'purging'} {table} ...")
            result = run_purge(
                db,
                table,
                dry_run=dry_run,
                started_by=started_by,
                by_person=True,
                on_batch=progress.batch,
                on_partition=progress.partition,
                cancel=ctrl_c.cancelled_by,
            )
            progress.end_line()
            results.append((result, time.monotonic() - progress.started))

    click.echo("")
    for result, seconds in results:
        run = f"run {result.run_id}" if result.run_id is not None else "not recorded"
        rate = f", {result.rows / seconds:,.0f} rows/s" if seconds > 0 and result.rows else ""
        click.echo(
            f"{result.table:<7} {result.outcome:<17} {run:<12} {result.batches:>6,} batches "
            f"{result.rows:>12,} rows {verb}  {seconds:.1f}s{rate}"
        )
        if result.partitions_dropped:
            click.echo(f"        {plural(result.partitions_dropped, 'partition')} dropped whole")
        if result.method:
            click.echo(
                f"        batches {PURGE_METHOD_WORDS.get(result.method, result.method)}"
                + (
                    " (the planner did not read the due rows through an index: usual on a small table or "
                    "when most rows are due; on a big table `idemdash check` names the index that would)"
                    if result.method == "primary_key"
                    else ""
                )
            )
        if result.outcome == "budget_exhausted":
            click.echo("        time budget (IDEMDASH_PURGE_TIME_BUDGET_SECONDS) used up; the next run carries on")
        if result.error:
            click.echo(f"        {result.error}")
    return [f"{result.table}: {result.error}" for result, _ in results if result.outcome == "failed"]


def _library_purges(
    db: Target, tables: tuple[str, ...], dry_run: bool, started_by: str, ctrl_c: _CtrlC
) -> list[tuple[PurgeResult, float]]:
    """Another library's tables: only the rows it counts as finished (jobs/library_purge.py), each table a run."""
    click.echo(
        f"{'dry run: counting' if dry_run else 'purging'} what the {db.settings.profile} tables hold finished ..."
    )
    began = time.monotonic()
    try:
        results = [
            (r, time.monotonic() - began)
            for r in run_library_purges(
                db, dry_run=dry_run, started_by=started_by, by_person=True, roles=tables, cancel=ctrl_c.cancelled_by
            )
        ]
    except ShapeNotFound as exc:  # nothing was purged: the tables are not where, or not what, the configuration says
        raise click.ClickException(f"nothing purged: {exc}") from None
    if not results:
        which = f" among {', '.join(tables)}" if tables else ""
        click.echo(
            f"no {db.settings.profile} table here{which} has a state its library counts as finished and "
            "old: nothing to purge"
        )
    return results


@click.command()
@databases_option
def scheduler(database_url: str, database: str | None) -> None:
    """Run the scheduled jobs of every database (or of --database NAME) in this process until stopped (checks
    each database first: one it cannot use is logged in one line and the others are served; it refuses to start
    only when no database can be used)."""
    chosen = targets(database_url, database)
    preflight_fleet(chosen, "the scheduler")
    config = load_settings()
    typed = click.get_current_context().get_parameter_source("database_url") == click.core.ParameterSource.COMMANDLINE
    every = database is None and config.config and not typed
    # every database's jobs: a database fixed later needs no restart; with every database of IDEMDASH_CONFIG, a
    # fleet's members join and leave as they are found
    run_blocking(config, chosen, discover=bool(every))
