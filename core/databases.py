"""Which databases one idemdash serves: the one of IDEMDASH_DATABASE_URL, or those IDEMDASH_CONFIG describes.

IDEMDASH_CONFIG names a TOML file, or a directory whose ``*.toml`` files are read in name order. A file holds
``[databases.<name>]`` tables, one per database (core/database_table.py says what a table may set), and
``[fleets.<name>]`` tables, each describing many databases at once (core/fleets.py). Names are unique across all
the files. Every mistake in them is a line of one ConfigError, so a start lists all there is to fix.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idemdash.core.database_table import NAME, NAME_RULE, table_settings
from idemdash.core.fleets import FleetConfig, parse_fleet
from idemdash.core.settings import ConfigError, Settings

DEFAULT = "default"


@dataclass(frozen=True)
class DatabaseConfig:
    name: str
    settings: Settings


@dataclass(frozen=True)
class Config:
    """What IDEMDASH_CONFIG describes: the databases named one by one, in the files' order, and the fleets."""

    databases: list[DatabaseConfig]
    fleets: list[FleetConfig] = field(default_factory=list)

    def listed(self) -> list[DatabaseConfig]:
        """The databases known without asking a server: each ``[databases.x]``, then each listed fleet member."""
        members = [
            DatabaseConfig(*fleet.member(n)) for fleet in self.fleets if not fleet.discovered for n in fleet.names
        ]
        return self.databases + members


def load_config(settings: Settings) -> Config:
    """The databases and fleets to serve; without IDEMDASH_CONFIG, the one of IDEMDASH_DATABASE_URL."""
    path = settings.config
    if not path:
        if not settings.database_url:
            raise ConfigError(
                "IDEMDASH_DATABASE_URL is not set: point it at the database that holds the "
                "application's idempotency tables, or name a file of several in IDEMDASH_CONFIG"
            )
        return Config([DatabaseConfig(DEFAULT, settings)])
    return _read_config(Path(path), settings)


def load_databases(settings: Settings) -> list[DatabaseConfig]:
    """The databases to serve that need no server asked (the first is the one today's URLs mean); a fleet found by
    a pattern adds its members through queries/fleets.py."""
    return load_config(settings).listed()


def _read_config(path: Path, base: Settings) -> Config:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.toml") if p.is_file())
        if not files:
            raise ConfigError(f"IDEMDASH_CONFIG {path}: the directory holds no *.toml file")
    else:
        files = [path]
    problems: list[str] = []
    databases: list[DatabaseConfig] = []
    fleets: list[FleetConfig] = []
    declared: dict[str, Path] = {}  # every name, database's or fleet's, and the file that declares it
    for file in files:
        document = _document(file, problems)
        if document is None:
            continue
        for kind, name, table in _tables(file, document, problems):
            where = f"IDEMDASH_CONFIG {file}: [{kind}.{name}]"
            if name in declared:
                first = declared[name]
                problems.append(
                    f"{where}: the name {name!r} is declared twice, "
                    + (f"in {first} and in {file}" if first != file else f"in {file}")
                    + ": a database's and a fleet's names are unique across the files"
                )
                continue
            declared[name] = file
            if kind == "fleets":
                fleet, found = parse_fleet(where, name, table, base)
                problems += found
                if fleet is not None:
                    fleets.append(fleet)
            else:
                found = _database(where, name, table, base, databases)
                problems += found
    if not problems and not databases and not fleets:
        where = f"IDEMDASH_CONFIG {path}"
        problems.append(
            f"{where}: declares no database; add a [databases.<name>] table with a url, or a [fleets.<name>] table"
        )
    if problems:
        raise ConfigError("\n".join(problems))
    return Config(databases, fleets)


def _document(file: Path, problems: list[str]) -> dict[str, Any] | None:
    where = f"IDEMDASH_CONFIG {file}"
    try:
        document: dict[str, Any] = tomllib.loads(file.read_text(encoding="utf-8"))
        return document
    except FileNotFoundError:
        problems.append(f"{where}: the file does not exist")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{where}: cannot read it: {exc}")
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"{where}: not valid TOML: {exc}")
    return None


def _tables(file: Path, document: Mapping[str, Any], problems: list[str]) -> list[tuple[str, str, Any]]:
    """Each ``[databases.x]`` and ``[fleets.x]`` table of one file, in its order."""
    where = f"IDEMDASH_CONFIG {file}"
    unknown = set(document) - {"databases", "fleets"}
    if unknown:
        problems.append(
            f"{where}: unknown table(s) {', '.join(sorted(unknown))}; declare databases as "
            "[databases.<name>] or [fleets.<name>]"
        )
    found = []
    for kind in ("databases", "fleets"):
        tables = document.get(kind, {})
        if not isinstance(tables, dict):
            problems.append(f"{where}: {kind}: expected tables [{kind}.<name>]")
            continue
        found += [(kind, name, table) for name, table in tables.items()]
    return found


def _database(where: str, name: str, table: Any, base: Settings, databases: list[DatabaseConfig]) -> list[str]:
    if not NAME.match(name):
        return [f"{where}: a database name is {NAME_RULE} (it is part of every URL under /db/<name>/)"]
    if not isinstance(table, dict):
        return [f"{where}: expected a table of settings"]
    values, problems = table_settings(where, name, table, base)
    if not problems:
        databases.append(DatabaseConfig(name, values))
    return problems
