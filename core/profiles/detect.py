"""Which known shapes a database holds: a catalog listing (schema, table, column, type) matched against every
profile, in every schema, under each naming convention the profile allows.

A table is claimed only when every required column of its profile table is there with an accepted type; a shape
is found when all its non-optional tables are claimed in one schema (at least one table in all). The version is
the first of the profile's versions whose marker columns fit.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from idemdash.core.profiles import PROFILES
from idemdash.core.profiles.shape import ANY_NAME, AS_IS, SNAKE_CASE, SUFFIX, Profile, Table

Columns = Mapping[str, str]  # column name -> catalog type


@dataclass(frozen=True)
class Found:
    profile: str
    version: str | None
    schema: str
    naming: str
    tables: tuple[tuple[str, str], ...]  # (role, table name in the database), in the profile's order

    def table(self, role: str) -> str | None:
        return dict(self.tables).get(role)


def snake_case(name: str) -> str:
    """EFCore.NamingConventions' snake case: InboxState -> inbox_state, LastSequenceNumber -> last_sequence_number."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def named(name: str, naming: str) -> str:
    return snake_case(name) if naming == SNAKE_CASE else name


def detect(
    catalog: Iterable[tuple[str, str, str, str]], profiles: Iterable[Profile] = PROFILES.values()
) -> list[Found]:
    """Every shape found in ``catalog`` rows of (schema, table, column, type), by schema, then profile order."""
    schemas: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for schema, table, column, data_type in catalog:
        schemas[schema][table][column] = data_type
    found: list[Found] = []
    for schema in sorted(schemas):
        for profile in profiles:
            for naming in profile.namings:
                found.extend(_in_schema(profile, naming, schema, schemas[schema]))
    return found


def _in_schema(profile: Profile, naming: str, schema: str, tables: Mapping[str, Columns]) -> list[Found]:
    results = []
    for prefix in _prefixes(profile, naming, tables):
        claimed: list[tuple[str, str]] = []
        complete = True
        for table in profile.tables:
            names = _candidates(table, naming, prefix, tables)
            match = next((n for n in names if _fits(table, naming, tables[n])), None)
            if match is not None:
                claimed.append((table.role, match))
            elif not table.optional:
                complete = False
                break
        if complete and claimed:
            results.append(
                Found(profile.name, _version(profile, naming, dict(claimed), tables), schema, naming, tuple(claimed))
            )
    return results


def _prefixes(profile: Profile, naming: str, tables: Mapping[str, Columns]) -> list[str]:
    """One candidate per endpoint prefix of a SUFFIX table (NServiceBus), per table for an ANY_NAME one, else one."""
    if any(t.match == ANY_NAME for t in profile.tables):  # each table of any name is a candidate of its own
        return sorted(tables)
    suffixed = [t for t in profile.tables if t.match == SUFFIX]
    if not suffixed:
        return [""]
    suffix = named(suffixed[0].name, naming)
    return sorted({name[: -len(suffix)] for name in tables if name.endswith(suffix)})


def _candidates(table: Table, naming: str, prefix: str, tables: Mapping[str, Columns]) -> list[str]:
    if table.match == ANY_NAME:
        return [prefix]
    name = (prefix if table.match == SUFFIX else "") + named(table.name, naming)
    return [name] if name in tables else []


def _fits(table: Table, naming: str, columns: Columns) -> bool:
    for column in table.columns:
        data_type = columns.get(named(column.name, naming))
        if data_type is None or (column.types and data_type not in column.types):
            return False
    return True


def _version(profile: Profile, naming: str, claimed: Mapping[str, str], tables: Mapping[str, Columns]) -> str | None:
    for version in profile.versions:
        name = claimed.get(version.table)
        if name is None:
            continue
        columns = tables[name]
        if all(named(c, naming) in columns for c in version.present) and not any(
            named(c, naming) in columns for c in version.absent
        ):
            return version.name
    return None


__all__ = ["AS_IS", "Found", "detect", "named", "snake_case"]
