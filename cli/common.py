"""What every command shares: which databases it works on (--database-url, or --database NAME of
IDEMDASH_CONFIG's file, default every one), settings with their errors as usage errors, and database failures
said in one line (the cause and its fix, ``core.diagnosis``), never a traceback."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
import psycopg

from idemdash.checks.readiness import readiness
from idemdash.core import settings
from idemdash.core.databases import load_config
from idemdash.core.diagnosis import Cause
from idemdash.queries.fleets import resolve
from idemdash.queries.target import Target

log = logging.getLogger(__name__)

database_url_option = click.option(
    "--database-url",
    envvar="IDEMDASH_DATABASE_URL",
    default="",
    show_envvar=True,
    help="Database holding the application tables (and idemdash's own schema); on the command line it wins "
    "over IDEMDASH_CONFIG.",
)
database_option = click.option(
    "--database",
    "database",
    default=None,
    metavar="NAME",
    help="With IDEMDASH_CONFIG: only this database of the file [default: every one].",
)


def databases_option(command):
    return database_url_option(database_option(command))


def load_settings(**overrides: Any) -> settings.Settings:
    try:
        return settings.load(**{k: v for k, v in overrides.items() if v not in (None, "")})
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def require_url(config: settings.Settings) -> str:
    if not config.database_url:
        raise click.UsageError("no database: pass --database-url or set IDEMDASH_DATABASE_URL")
    return config.database_url


def targets(database_url: str = "", database: str | None = None) -> list[Target]:
    """The databases a command works on: --database-url given on the command line (or no IDEMDASH_CONFIG), else
    every database of the config file, or the one --database names."""
    config = load_settings()
    ctx = click.get_current_context(silent=True)
    typed = ctx is not None and ctx.get_parameter_source("database_url") == click.core.ParameterSource.COMMANDLINE
    if database_url and (typed or not config.config):
        if database:
            raise click.UsageError(
                "--database picks one database of IDEMDASH_CONFIG; with --database-url there is only that one"
            )
        return [target(database_url)]
    try:
        described = load_config(config)
    except settings.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    membership = resolve(described)  # a fleet's server that does not answer is logged, its members left out
    found = membership.databases
    if database is not None:
        found = [d for d in found if d.name == database]
        if not found:
            fleet = database.partition("/")[0]
            why = f" ({membership.problems[fleet]})" if fleet in membership.problems else ""
            declared = ", ".join(d.name for d in membership.databases[:20])
            more = f" and {len(membership.databases) - 20} more" if len(membership.databases) > 20 else ""
            raise click.UsageError(
                f"no database {database!r} in {config.config or 'IDEMDASH_DATABASE_URL'}"
                f"{why}: it declares {declared or 'none now'}{more}"
            )
    return [Target.from_settings(d.settings, d.name) for d in found]


def heading(db: Target, several: bool) -> None:
    """With several databases, a line saying which one the following lines are about."""
    if several:
        click.echo(f"== database {db.name} ({db.label})")


def target(database_url: str = "", **overrides: Any) -> Target:
    """The database a command works on, from the settings (the option wins over IDEMDASH_DATABASE_URL)."""
    config = load_settings(DATABASE_URL=database_url, **overrides)
    require_url(config)
    return Target.from_settings(config)


def connect(target: Target, application_name: str = "idemdash-cli") -> psycopg.Connection:
    try:
        return target.connect(application_name, report=False)
    except psycopg.Error as exc:
        raise click.ClickException(f"cannot connect to the database: {target.cause_of(exc)}") from None


@contextmanager
def database_errors(target: Target, doing: str) -> Iterator[None]:
    """A database error while ``doing`` something ends the command with its cause and fix in one line."""
    try:
        yield
    except psycopg.Error as exc:
        raise click.ClickException(f"{doing} failed: {target.cause_of(exc)}") from None


def preflight(target: Target, what: str) -> None:
    """Before a long-running process starts: stop with the cause when the database cannot work as configured
    (a wrong password or database, missing tables, schema or grants); only warn, once, when it is merely
    unreachable right now (it may be starting too: the process rides that out)."""
    problems = _unusable(target, what)
    if problems:
        raise click.ClickException(f"{what} not started: " + "\n  ".join(p.message for p in problems))


def preflight_fleet(chosen: list[Target], what: str) -> list[Target]:
    """``preflight`` for a long-running process over ``chosen``; the databases it cannot use yet.

    One database: exactly ``preflight`` (it stops the command). Several: each database that cannot work as
    configured is logged in ONE line (its cause and fix) and the process starts with the others; it stops only
    when none can be used. A database left out of use keeps its jobs: each run connects anew, so the first run
    after the fix works, and its cause is not logged again by every run meanwhile."""
    if not chosen:  # only fleets, and no fleet's server answered (logged): their members join once one does
        log.warning("%s starts without a database: its fleets' members join once their servers answer", what)
        return []
    if len(chosen) == 1:
        preflight(chosen[0], what)
        return []
    refused: list[tuple[Target, list[Cause]]] = []
    for db in chosen:
        problems = _unusable(db, f"{what} (database {db.name})")
        if problems:
            refused.append((db, problems))
    if len(refused) == len(chosen):
        raise click.ClickException(
            f"{what} not started: no database can be used:\n  "
            + "\n  ".join(f"database {db.name}: " + "; ".join(p.message for p in problems) for db, problems in refused)
        )
    for db, problems in refused:
        log.error(
            "database %s cannot be used yet; %s starts with the others and runs its jobs once it is fixed: %s",
            db.name,
            what,
            "; ".join(p.message for p in problems),
        )
        for problem in problems:
            db.problems.failed(problem, say=False)  # said just now: the jobs' failures stay quiet
    return [db for db, _ in refused]


def _unusable(target: Target, what: str) -> list[Cause]:
    """Why ``target`` cannot work as configured (none: usable, or merely unreachable right now: warned once)."""
    try:
        conn = target.connect(f"idemdash-{what}"[:63], report=False)
    except psycopg.Error as exc:
        cause = target.cause_of(exc)
        if not cause.transient:
            return [cause]
        log.warning("starting %s although the database is unreachable right now: %s", what, cause)
        return []
    with conn, database_errors(target, "checking the database"):
        return readiness(conn, target.tables, target.settings)
