"""One database's settings from its table of IDEMDASH_CONFIG (a ``[databases.<name>]`` table, or what a
``[fleets.<name>]`` table gives each of its members): the environment's settings with the table's keys on top.

A key is a setting's name in lower case (``inbox_retention_days``), and ``url`` / ``read_url`` stand for
``DATABASE_URL`` / ``READ_DATABASE_URL``. Only settings that belong to one database may appear (``per_database`` in
their declaration). Every mistake is one line naming the file, the table and the key; all of a table's mistakes are
returned together, so one start lists everything to fix.

The freeze rule: IDEMDASH_READ_ONLY=1 in the environment freezes every database, whatever its table says; a table's
``read_only = true`` freezes that one database when the environment does not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from idemdash.core.profiles import register
from idemdash.core.profiles.custom import NAME as CUSTOM
from idemdash.core.profiles.custom import ShapeError, custom_profile
from idemdash.core.settings import (
    BY_NAME,
    PER_DATABASE,
    Settings,
    library_action_mistakes,
    with_profile_defaults,
)

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
NAME_RULE = "1-63 lower-case letters, digits, '-' or '_'"
ALIASES = {"url": "DATABASE_URL", "read_url": "READ_DATABASE_URL"}


def allowed_keys() -> list[str]:
    return sorted(ALIASES) + sorted(n.lower() for n in PER_DATABASE if n not in ALIASES.values()) + ["shape"]


def table_settings(
    here: str,
    database: str,
    table: Mapping[str, Any],
    base: Settings,
    *,
    shape_name: str | None = None,
    url_required: bool = True,
) -> tuple[Settings, list[str]]:
    """The settings of the database ``table`` describes, and one line per mistake in it (``here`` starts each).
    ``shape_name``: the name a custom shape is registered under (a fleet's members share their fleet's)."""
    values: dict[str, Any] = {}  # the table's settings, by name, on top of base's
    problems: list[str] = []
    for key, raw in table.items():
        if key == "shape":
            continue  # a custom shape's tables, read below
        name = ALIASES.get(key, key.upper())
        if key != key.lower() or name not in PER_DATABASE:
            problems.append(f"{here}: unknown key {key!r}; a database may set {', '.join(allowed_keys())}")
            continue
        if name == "LIBRARY_ACTIONS" and isinstance(raw, list) and all(isinstance(r, str) for r in raw):
            raw = ",".join(raw)  # a list of names, or one string of them
        if isinstance(raw, (dict, list)):
            problems.append(f"{here}: {key}: expected a single value")
            continue
        text = str(raw).lower() if isinstance(raw, bool) else str(raw)
        try:
            values[name] = BY_NAME[name].parse(text)
        except ValueError as exc:
            problems.append(f"{here}: {key}: {exc}")
    if base.read_only:
        values["READ_ONLY"] = True  # the freeze rule: a global freeze is not lifted by one database's table
    if url_required and not table.get("url"):
        problems.append(f"{here}: url is required (the database that holds this service's idempotency tables)")
    if problems:
        return base.with_values(values), problems
    problems += _custom_shape(here, shape_name or database, table, values, base.profile)
    settings = base.with_values(values)
    if problems:
        return settings, problems
    # a library's profile: its own schema and table names where this table names none (not the environment's,
    # which describe the reference tables)
    settings = with_profile_defaults(settings, {ALIASES.get(key, key.upper()) for key in table})
    problems += [f"{here}: library_actions: {line}" for line in library_action_mistakes(settings)]
    return settings, problems


def _custom_shape(
    here: str, name: str, table: Mapping[str, Any], values: dict[str, Any], base_profile: str
) -> list[str]:
    """``profile = "custom"``: the shape the table describes becomes this database's profile (registered by name)."""
    shape = table.get("shape")
    if values.get("PROFILE", base_profile) != CUSTOM:
        if shape is not None:
            return [f'{here}: shape describes custom tables: it needs profile = "custom"']
        return []
    if not isinstance(shape, dict):
        table_name = here.rsplit("[", 1)[-1].rstrip("]")
        return [
            f'{here}: profile = "custom" needs a [{table_name}.shape.<role>] table describing '
            "the tables (see docs/profiles.md, Custom shapes)"
        ]
    try:
        described = custom_profile(name, shape)
    except ShapeError as exc:
        return [f"{here}: {line}" for line in str(exc).splitlines()]
    register(described)
    values["PROFILE"] = described.name
    return []
