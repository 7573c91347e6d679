"""Which databases a config's fleets hold now: a pattern fleet's server is asked for its databases (pg_database),
a listed fleet's members are its names.

``resolve`` is called at start and again every IDEMDASH_FLEET_DISCOVER_SECONDS by whoever serves the databases (the
web app, the scheduler); the command line calls it once. A server that cannot be asked is not an error: its fleet
keeps the members it had (none at start), the cause is logged once, and the next round asks again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from idemdash.core.databases import Config, DatabaseConfig
from idemdash.core.diagnosis import URL, diagnose
from idemdash.core.dsn import endpoint
from idemdash.core.fleets import FleetConfig, member_names
from idemdash.queries import statement

log = logging.getLogger(__name__)

APPLICATION_NAME = "idemdash-discover"
# how long asking a fleet's server may take to connect (unless its url says) and to answer
CONNECT_TIMEOUT_SECONDS = 5
STATEMENT_TIMEOUT_MS = 5000


@dataclass(frozen=True)
class Membership:
    databases: list[DatabaseConfig]  # every database served, in order
    found: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # a pattern fleet: its databases as last found
    problems: Mapping[str, str] = field(default_factory=dict)  # a pattern fleet whose server did not answer: why

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.databases]


def server_databases(url: str) -> list[str]:
    """The names of the databases of ``url``'s server (any database one may connect to names them all)."""
    extra: dict[str, Any] = (
        {} if "connect_timeout" in conninfo_to_dict(url) else {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
    )
    with psycopg.connect(url, autocommit=True, application_name=APPLICATION_NAME, **extra) as conn:
        conn.execute(statement("set_statement_timeout"), {"ms": str(STATEMENT_TIMEOUT_MS)})
        return [name for (name,) in conn.execute(statement("list_server_databases")).fetchall()]


def resolve(config: Config, previous: Membership | None = None) -> Membership:
    """Every database ``config`` describes now: its ``[databases.x]`` tables, then each fleet's members by name."""
    found: dict[str, tuple[str, ...]] = {}
    problems: dict[str, str] = {}
    for fleet in config.fleets:
        if not fleet.discovered:
            continue
        try:
            found[fleet.name] = _members(fleet)
        except psycopg.Error as exc:
            had = previous.found.get(fleet.name, ()) if previous is not None else ()
            found[fleet.name] = had
            problems[fleet.name] = _cannot_ask(fleet, exc, len(had))
            if previous is None or previous.problems.get(fleet.name) != problems[fleet.name]:
                log.warning("%s", problems[fleet.name])
            continue
        if previous is not None and fleet.name in previous.problems:
            log.info("fleet %s: its server answers again: %d member(s)", fleet.name, len(found[fleet.name]))
    databases = list(config.databases)
    for fleet in config.fleets:
        names = found[fleet.name] if fleet.discovered else fleet.names
        databases += [DatabaseConfig(*fleet.member(name)) for name in names]
    return Membership(databases, found, problems)


def _members(fleet: FleetConfig) -> tuple[str, ...]:
    assert fleet.url is not None
    names = server_databases(fleet.url)
    members = member_names(fleet, names)
    skipped = [n for n in names if n not in members and _matches(fleet, n)]
    if skipped:
        log.warning(
            "fleet %s: database(s) %s match %r but cannot be served under that name (a member's name is "
            "letters, digits, '_', '.' or '-'): rename them or narrow the pattern",
            fleet.name,
            ", ".join(skipped),
            fleet.pattern,
        )
    return tuple(members)


def _matches(fleet: FleetConfig, name: str) -> bool:
    return fnmatchcase(name, fleet.pattern or "")


def _cannot_ask(fleet: FleetConfig, exc: psycopg.Error, kept: int) -> str:
    assert fleet.url is not None
    cause = diagnose(exc, fleet.url)
    message = cause.message.replace(URL, f"the url of [fleets.{fleet.name}] in IDEMDASH_CONFIG")
    kept_text = f"it keeps its {kept} member(s) found before" if kept else "it has no members until it answers"
    return (
        f"fleet {fleet.name}: cannot ask {endpoint(fleet.url).label} for its databases, so {kept_text} "
        f"(asked again every IDEMDASH_FLEET_DISCOVER_SECONDS): {message}"
    )
