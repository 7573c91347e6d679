"""`idemdash simulate` (a live workload against any database with the reference schema) and `idemdash demo`
(all of it on an embedded PostgreSQL)."""
from __future__ import annotations

import sys
import time

import click

from idemdash.cli.common import connect, database_url_option, target
from idemdash.core import settings
from idemdash.core.formatting import plural
from idemdash.core.settings import redact_dsn
from idemdash.dashboard import auth, create_app, network
from idemdash.queries.workload.simulate import list_missing_reference_objects
from idemdash.workload.backfill import backfill
from idemdash.workload.demo import run_demo
from idemdash.workload.simulator import Simulator

REPORT_EVERY_SECONDS = 10.0


@click.command()
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
    db = target(database_url)
    url, tables = db.dsn, db.tables
    with connect(db, "idemdash-simulate") as conn:
        missing = list_missing_reference_objects(conn, tables)
        if missing:
            raise click.ClickException(
                f"the reference schema is missing in schema {tables.schema!r} (no {', '.join(missing)}); "
                f"run `idemdash init-app-schema --database-url ...` first")
        if backfill_days:
            started = time.monotonic()
            written = backfill(conn, tables, backfill_days)
            click.echo(f"backfilled {plural(backfill_days, 'day')} in {time.monotonic() - started:.1f}s: "
                       + " ".join(f"{name}={count}" for name, count in written.items()))

    sim = Simulator(url, tables, rate=rate, clients=clients, seed=seed)
    click.echo(f"simulating {rate:g} requests/s with {clients} clients against {redact_dsn(url)} "
               f"({f'for {duration:g}s' if duration else 'Ctrl-C to stop'})")
    sim.start()
    started = time.monotonic()
    next_report = started + REPORT_EVERY_SECONDS
    try:
        while not duration or time.monotonic() - started < duration:
            time.sleep(0.2)
            if time.monotonic() >= next_report:
                click.echo(sim.stats.summary())
                next_report += REPORT_EVERY_SECONDS
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    click.echo("final: " + sim.stats.summary())


@click.command()
@click.option("--fresh", is_flag=True, help="Delete the demo database and start over.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--rate", type=click.FloatRange(min=0.1), default=15.0, show_default=True,
              help="Simulated client requests per second.")
@click.option("--backfill", "backfill_days", type=click.IntRange(min=0), default=3, show_default=True,
              help="Days of history written when the demo database is new.")
def demo(fresh: bool, host: str, port: int, rate: float, backfill_days: int) -> None:
    """Embedded PostgreSQL, reference schema, live workload, scheduler and web app, all in one."""
    try:  # no sign-in unless IDEMDASH_AUTH says otherwise: loopback only, unless allowed
        config = settings.load()
        network.check_bind(config, host, what=f"--host {host}")
        auth.check_config(config)
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    sys.exit(run_demo(create_app, fresh=fresh, host=host, port=port, rate=rate, backfill_days=backfill_days,
                      environment=config["ENVIRONMENT"]))
