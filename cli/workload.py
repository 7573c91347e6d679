"""`idemdash simulate` (a live workload against any database with the reference schema) and `idemdash demo`
(all of it on an embedded PostgreSQL)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from idemdash.cli.common import connect, database_url_option, target
from idemdash.core import settings
from idemdash.core.dsn import redact_dsn
from idemdash.core.formatting import plural
from idemdash.dashboard import auth, create_app, network
from idemdash.queries.workload.simulate import list_missing_reference_objects
from idemdash.workload import dbos_demo, library_demo
from idemdash.workload.backfill import backfill
from idemdash.workload.oncall import OnCallSettings
from idemdash.workload.pace import DEMO_INSTALL, Pace, missing_demo_modules
from idemdash.workload.simulator import Simulator

REPORT_EVERY_SECONDS = 10.0


@click.command()
@database_url_option
@click.option(
    "--rate",
    type=click.FloatRange(min=0.1),
    default=20.0,
    show_default=True,
    help="Client requests per second, across all simulated clients.",
)
@click.option(
    "--clients",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Concurrent simulated clients (threads).",
)
@click.option(
    "--backfill",
    "backfill_days",
    type=click.IntRange(min=0),
    default=0,
    help="First write DAYS of history quickly, then run live.",
)
@click.option(
    "--duration", type=click.FloatRange(min=0), default=0, help="Stop after this many seconds (0: until Ctrl-C)."
)
@click.option("--seed", type=int, default=None, help="Random seed, for a repeatable run.")
def simulate(
    database_url: str, rate: float, clients: int, backfill_days: int, duration: float, seed: int | None
) -> None:
    """Run a live workload against the reference functions (any database with the reference schema)."""
    db = target(database_url)
    url, tables = db.dsn, db.tables
    with connect(db, "idemdash-simulate") as conn:
        missing = list_missing_reference_objects(conn, tables)
        if missing:
            raise click.ClickException(
                f"the reference schema is missing in schema {tables.schema!r} (no {', '.join(missing)}); "
                f"run `idemdash init-app-schema --database-url ...` first"
            )
        if backfill_days:
            started = time.monotonic()
            written = backfill(conn, tables, backfill_days)
            click.echo(
                f"backfilled {plural(backfill_days, 'day')} in {time.monotonic() - started:.1f}s: "
                + " ".join(f"{name}={count}" for name, count in written.items())
            )

    sim = Simulator(url, tables, rate=rate, clients=clients, seed=seed)
    click.echo(
        f"simulating {rate:g} requests/s with {clients} clients against {redact_dsn(url)} "
        f"({f'for {duration:g}s' if duration else 'Ctrl-C to stop'})"
    )
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
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the embedded PostgreSQL keeps its data, kept between runs "
    "[default: the user's data directory, e.g. ~/.local/share/idemdash/demo-pgdata].",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.1),
    default=15.0,
    show_default=True,
    help="Simulated client requests per second.",
)
@click.option(
    "--backfill",
    "backfill_days",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Days of history written when the demo database is new.",
)
@click.option(
    "--incident-every",
    type=click.FloatRange(min=1),
    default=Pace.incident_every,
    show_default=True,
    help="Seconds between bad deploys, on average.",
)
@click.option(
    "--incident-length",
    type=click.FloatRange(min=1),
    default=Pace.incident_length,
    show_default=True,
    help="Seconds a bad deploy lasts.",
)
@click.option(
    "--oncall-after",
    type=click.FloatRange(min=0),
    default=OnCallSettings.after_seconds,
    show_default=True,
    help="The on-call resolves keys stuck (lease run out) at least this many seconds.",
)
@click.option(
    "--oncall-every",
    type=click.FloatRange(min=1),
    default=OnCallSettings.every_seconds,
    show_default=True,
    help="Seconds between the on-call's looks at the stuck keys.",
)
@click.option(
    "--profile",
    "library",
    type=click.Choice(sorted(library_demo.DEMOS)),
    default=None,
    help="A library's own tables and a live workload of its rows instead of the reference tables (docs/profiles.md).",
)
def demo(
    fresh: bool,
    data_dir: Path | None,
    host: str,
    port: int,
    rate: float,
    backfill_days: int,
    incident_every: float,
    incident_length: float,
    oncall_after: float,
    oncall_every: float,
    library: str | None,
) -> None:
    """Embedded PostgreSQL, reference schema, live workload with incidents and an on-call, scheduler and web app."""
    missing = missing_demo_modules()
    if missing:
        click.echo(
            f"idemdash demo needs {', '.join(missing)}, which a plain install does not bring: {DEMO_INSTALL}", err=True
        )
        sys.exit(2)
    # here, not at the top: the demo imports its extra's packages, and every other command runs without them
    from idemdash.workload.demo import run_demo

    if library is not None and library_demo.DEMOS[library].app and not dbos_demo.available():
        click.echo(
            f"idemdash demo --profile {library} runs a real DBOS application, and the dbos package is not "
            f"installed: {dbos_demo.INSTALL}",
            err=True,
        )
        sys.exit(2)
    try:  # no sign-in unless IDEMDASH_AUTH says otherwise: loopback only, unless allowed
        config = settings.load()
        network.check_bind(config, host, what=f"--host {host}")
        auth.check_config(config)
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    oncall = OnCallSettings(
        after_seconds=oncall_after,
        every_seconds=oncall_every,
        lease_seconds=config.default_lease_seconds,
        replay_horizon_seconds=int(config.replay_horizon),
        hotspot_min_attempts=config.hotspot_min_attempts,
    )
    pace = Pace(incident_every=incident_every, incident_length=incident_length, oncall=oncall)
    sys.exit(
        run_demo(
            create_app,
            fresh=fresh,
            host=host,
            port=port,
            rate=rate,
            backfill_days=backfill_days,
            environment=config.environment,
            data_dir=data_dir,
            pace=pace,
            library=library,
        )
    )
