"""Which databases one idemdash serves: the one of IDEMDASH_DATABASE_URL, or each ``[databases.<name>]`` table of
the TOML file named by IDEMDASH_CONFIG.

A database's settings are the environment's (``core.settings.load``) with the keys of its table on top; a key
is a setting's name in lower case (``inbox_retention_days``), and ``url`` / ``read_url`` stand for
``DATABASE_URL`` / ``READ_DATABASE_URL``. Only settings that belong to one database may appear there
(``per_database`` in their declaration); anything else is a ConfigError naming the file, the database and the key.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemdash.core.profiles import register
from idemdash.core.profiles.custom import NAME as CUSTOM
from idemdash.core.profiles.custom import ShapeError, custom_profile
from idemdash.core.settings import BY_NAME, PER_DATABASE, ConfigError, library_action_mistakes, with_profile_defaults

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT = "default"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
ALIASES = {"url": "DATABASE_URL", "read_url": "READ_DATABASE_URL"}
@dataclass(frozen=True)
class DatabaseConfig:
    name: str
    settings: Mapping[str, Any]


def load_databases(settings: Mapping[str, Any]) -> list[DatabaseConfig]:
    """The databases to serve, in the file's order (the first is the one today's URLs mean)."""
    path = settings["CONFIG"]
    if not path:
        if not settings["DATABASE_URL"]:
            raise ConfigError("IDEMDASH_DATABASE_URL is not set: point it at the database that holds the "
                              "application's idempotency tables, or name a file of several in IDEMDASH_CONFIG")
        return [DatabaseConfig(DEFAULT, dict(settings))]
    return [DatabaseConfig(name, values) for name, values in _read(Path(path), settings)]


def _read(path: Path, base: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    where = f"IDEMDASH_CONFIG {path}"
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: the file does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    unknown = set(document) - {"databases"}
    if unknown:
        raise ConfigError(f"{where}: unknown table(s) {', '.join(sorted(unknown))}; declare databases as "
                          "[databases.<name>]")
    databases = document.get("databases")
    if not isinstance(databases, dict) or not databases:
        raise ConfigError(f"{where}: declares no database; add a [databases.<name>] table with a url")
    result = []
    for name, table in databases.items():
        here = f"{where}: [databases.{name}]"
        if not NAME.match(name):
            raise ConfigError(f"{here}: a database name is 1-63 lower-case letters, digits, '-' or '_' (it is "
                              "part of every URL under /db/<name>/)")
        if not isinstance(table, dict):
            raise ConfigError(f"{here}: expected a table of settings")
        result.append((name, _database_settings(here, name, table, base)))
    return result


def _database_settings(here: str, database: str, table: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    values = dict(base)
    allowed = sorted(ALIASES) + sorted(n.lower() for n in PER_DATABASE if n not in ALIASES.values()) + ["shape"]
    for key, raw in table.items():
        if key == "shape":
            continue  # a custom shape's tables, read below
        name = ALIASES.get(key, key.upper())
        if key != key.lower() or name not in PER_DATABASE:
            raise ConfigError(f"{here}: unknown key {key!r}; a database may set {', '.join(allowed)}")
        if name == "LIBRARY_ACTIONS" and isinstance(raw, list) and all(isinstance(r, str) for r in raw):
            raw = ",".join(raw)  # a list of names, or one string of them
        if isinstance(raw, (dict, list)):
            raise ConfigError(f"{here}: {key}: expected a single value")
        text = str(raw).lower() if isinstance(raw, bool) else str(raw)
        try:
            values[name] = BY_NAME[name].parse(text)
        except ValueError as exc:
            raise ConfigError(f"{here}: {key}: {exc}") from None
    if not table.get("url"):
        raise ConfigError(f"{here}: url is required (the database that holds this service's idempotency tables)")
    _custom_shape(here, database, table, values)
    # a library's profile: its own schema and table names where this table names none (not the environment's,
    # which describe the reference tables)
    values = with_profile_defaults(values, {ALIASES.get(key, key.upper()) for key in table})
    if mistakes := library_action_mistakes(values):
        raise ConfigError("\n".join(f"{here}: library_actions: {line}" for line in mistakes))
    return values


def _custom_shape(here: str, name: str, table: Mapping[str, Any], values: dict[str, Any]) -> None:
    """``profile = "custom"``: the shape the table describes becomes this database's profile (registered by name)."""
    shape = table.get("shape")
    if values["PROFILE"] != CUSTOM:
        if shape is not None:
            raise ConfigError(f"{here}: shape describes custom tables: it needs profile = \"custom\"")
        return
    if not isinstance(shape, dict):
        raise ConfigError(f"{here}: profile = \"custom\" needs a [databases.{name}.shape.<role>] table describing "
                          "the tables (see docs/profiles.md, Custom shapes)")
    try:
        described = custom_profile(name, shape)
    except ShapeError as exc:
        raise ConfigError("\n".join(f"{here}: {line}" for line in str(exc).splitlines())) from None
    register(described)
    values["PROFILE"] = described.name
