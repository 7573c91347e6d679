"""Every setting idemdash reads, as one typed object: ``Settings``, read from the environment by ``load``.

Settings come from environment variables named ``IDEMDASH_<NAME>`` and are read as attributes
(``settings.default_lease_seconds``), so a misspelled one is a type error. Each is declared once, with its default,
parser and meaning, in the module of its concern (``setting_database.py``, ``setting_access.py``,
``setting_pages.py``, ``setting_process.py``, ``setting_jobs.py``); docs/settings.md is generated from them.
A database of IDEMDASH_CONFIG gets its own ``Settings``: these with its table's keys on top (core/database_table.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from idemdash.core.parsers import split_list as split_list
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.profiles import profile, setting_defaults
from idemdash.core.profiles.custom import NAME as CUSTOM
from idemdash.core.setting import PREFIX as PREFIX  # part of this module's interface
from idemdash.core.setting import Setting as Setting
from idemdash.core.setting import declared
from idemdash.core.setting_access import AccessSettings
from idemdash.core.setting_database import DatabaseSettings
from idemdash.core.setting_jobs import JobSettings
from idemdash.core.setting_pages import PageSettings
from idemdash.core.setting_process import ProcessSettings


# A dataclass's fields come from its bases last to first: the database's settings first, the jobs' last (the order
# of docs/settings.md).
@dataclass(frozen=True)
class Settings(JobSettings, ProcessSettings, PageSettings, AccessSettings, DatabaseSettings):
    """Every setting's value; ``Settings()`` is every default."""

    def value(self, name: str) -> Any:
        """The setting called ``name`` (``"INBOX_RETENTION_DAYS"``), for names that come from data, such as the
        retention setting a profile's table names; code that knows which setting it wants reads the attribute."""
        return getattr(self, BY_NAME[name].attribute)

    def with_values(self, values: Mapping[str, Any]) -> Settings:
        """These settings with ``values`` (by setting name, already parsed) on top."""
        unknown = set(values) - set(BY_NAME)
        if unknown:
            raise ConfigError(f"unknown settings: {', '.join(sorted(unknown))}")
        return replace(self, **{BY_NAME[name].attribute: value for name, value in values.items()})


SETTINGS: tuple[Setting, ...] = declared(Settings)
BY_NAME = {s.name: s for s in SETTINGS}
PER_DATABASE = frozenset(s.name for s in SETTINGS if s.per_database)


class ConfigError(ValueError):
    pass


def load(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Read every setting from ``environ`` (default: os.environ).

    ``overrides`` use the bare setting names (``DATABASE_URL=...``) and win over
    the environment; they are how tests and the demo configure the app.
    """
    environ = os.environ if environ is None else environ
    values = read_values(environ, **overrides)
    given = {s.name for s in SETTINGS if s.env in environ} | set(overrides)
    settings = with_profile_defaults(Settings(**{name.lower(): value for name, value in values.items()}), given)
    if mistakes := library_action_mistakes(settings):
        raise ConfigError("\n".join(f"IDEMDASH_LIBRARY_ACTIONS: {line}" for line in mistakes))
    return settings


def read_values(environ: Mapping[str, str], **overrides: Any) -> dict[str, Any]:
    """Every declared setting's value by name: its override, else its variable's (parsed), else its default."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.name in overrides:
            values[setting.name] = overrides.pop(setting.name)
            continue
        raw = environ.get(setting.env)
        if raw is None and setting.legacy is not None and PREFIX + setting.legacy[0] in environ:
            raw = setting.legacy[1](environ[PREFIX + setting.legacy[0]])
        if raw is None:
            values[setting.name] = setting.default
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{setting.env}: {exc}") from None
    if overrides:
        raise ConfigError(f"unknown settings: {', '.join(sorted(overrides))}")
    return values


def with_profile_defaults(settings: Settings, given: set[str]) -> Settings:
    """``settings`` with a library profile's own schema and table names wherever ``given`` (the names the
    configuration set) has none: a Spring Modulith database is ``public.event_publication`` unless told otherwise."""
    if settings.profile == CUSTOM:
        raise ConfigError(
            "IDEMDASH_PROFILE=custom needs the tables' shape: describe it in a [databases.<name>.shape] "
            "table of IDEMDASH_CONFIG (docs/profiles.md, Custom shapes)"
        )
    if settings.profile == DEFAULT_PROFILE:
        return settings
    own = setting_defaults(settings.profile)
    # a table no setting names (DBOS's own tables besides its workflow status) keeps the library's name anyway
    return settings.with_values({name: value for name, value in own.items() if name in BY_NAME and name not in given})


def library_actions(settings: Settings) -> tuple[str, ...]:
    """The library actions a database enables (its LIBRARY_ACTIONS), by name."""
    return tuple(split_list(settings.library_actions))


def library_action_mistakes(settings: Settings) -> list[str]:
    """One line for each name in LIBRARY_ACTIONS that the database's profile does not document: empty when all
    are known."""
    chosen = profile(settings.profile)
    known = [a.name for a in chosen.actions]
    offered = (
        f"its actions are {', '.join(known)}"
        if known
        else f"{chosen.library} documents no action idemdash may do in its place"
    )
    return [
        f"{name!r} is not an action of profile {chosen.name!r} ({offered})"
        for name in library_actions(settings)
        if name not in known
    ]
