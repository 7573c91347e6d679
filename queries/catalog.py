"""The catalog as `idemdash detect` reads it: every table's columns and types, matched against the table-shape
profiles of ``core.profiles``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone

import psycopg
from psycopg import sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.custom import NAME as CUSTOM
from idemdash.core.profiles.custom_fit import implausible_epoch, misfits
from idemdash.core.profiles.detect import Found, detect
from idemdash.core.profiles.shape import EPOCH_MS, EXACT, Table
from idemdash.core.settings import BY_NAME, Settings
from idemdash.queries import statement
from idemdash.queries.transactions import select_all, select_one


@dataclass(frozen=True)
class CatalogColumn:
    schema_name: str
    table_name: str
    column_name: str
    data_type: str


def list_catalog_columns(conn: psycopg.Connection) -> list[CatalogColumn]:
    return select_all(conn, statement("list_catalog_columns"), None, CatalogColumn)


def find_shapes(conn: psycopg.Connection) -> list[Found]:
    """Every known table shape in the database, by schema."""
    return detect((c.schema_name, c.table_name, c.column_name, c.data_type) for c in list_catalog_columns(conn))


class ShapeNotFound(Exception):
    """The database has no tables of the configured profile where the configuration points (the message says what
    it found instead)."""


def find_configured(conn: psycopg.Connection, settings: Settings) -> Found:
    """The tables of the database's configured profile (``PROFILE``), in ``APP_SCHEMA``, under the configured table
    names: a name as the library spells it matches under any naming convention the profile allows (and any endpoint
    prefix for NServiceBus), a name of the user's own matches exactly."""
    chosen = profile(settings.profile)
    tables = tuple(_as_configured(settings, table) for table in chosen.tables)
    schema = settings.app_schema
    columns = [c for c in list_catalog_columns(conn) if c.schema_name == schema]
    found = detect(
        ((c.schema_name, c.table_name, c.column_name, c.data_type) for c in columns), [replace(chosen, tables=tables)]
    )
    custom = chosen.name.startswith(f"{CUSTOM}:")
    if len(found) == 1:
        if custom:
            _check_epoch_units(conn, found[0], tables)
        return found[0]
    if custom:
        _check_columns(tables, columns)
    wanted = ", ".join(f"{t.name} ({t.role})" for t in tables if not t.optional)
    if found:
        names = "; ".join(", ".join(name for _, name in f.tables) for f in found)
        raise ShapeNotFound(
            f"schema {schema} holds {len(found)} sets of {chosen.library} tables ({names}): name "
            f"the one to read with its table key ({', '.join(sorted({t.setting for t in tables}))})"
        )
    elsewhere = [f for f in find_shapes(conn) if f.profile == chosen.name]
    hint = (
        f"; `idemdash detect` finds them in schema {', '.join(sorted({f.schema for f in elsewhere}))} (set app_schema)"
        if elsewhere
        else "; `idemdash detect` lists the shapes this database holds"
    )
    raise ShapeNotFound(f"no {chosen.library} tables ({wanted}) with the library's columns in schema {schema}{hint}")


@dataclass(frozen=True)
class Sample:
    newest: float | None


def _check_columns(tables: tuple[Table, ...], columns: list[CatalogColumn]) -> None:
    """A custom shape whose tables are there but whose columns are not as it says: ShapeNotFound naming each."""
    wrong = [
        line
        for table in tables
        for line in misfits(table, {c.column_name: c.data_type for c in columns if c.table_name == table.name})
        if any(c.table_name == table.name for c in columns)
    ]
    if wrong:
        raise ShapeNotFound("the custom shape does not fit its tables: " + "; ".join(wrong))


def _check_epoch_units(conn: psycopg.Connection, found: Found, tables: tuple[Table, ...]) -> None:
    """A custom shape's epoch-milliseconds columns must hold milliseconds: the newest of a bounded sample of each,
    read so, is a plausible time (seconds read as milliseconds would make every done row look decades old)."""
    wrong = []
    for table in tables:
        name = found.table(table.role)
        epochs = [t.column for t in table.times if t.unit == EPOCH_MS]
        if name is None or not epochs:
            continue
        for column in epochs:
            sample = select_one(
                conn,
                statement(
                    "sample_newest_number",
                    None,
                    table=sql.Identifier(found.schema, name),
                    column=sql.Identifier(column),
                ),
                None,
                Sample,
            )
            if sample is not None and sample.newest is not None:
                wrong.append(implausible_epoch(table, column, sample.newest, datetime.now(timezone.utc)))
    if any(wrong):
        raise ShapeNotFound("the custom shape does not fit its tables: " + "; ".join(w for w in wrong if w))


def _as_configured(settings: Settings, table: Table) -> Table:
    """``table`` under the name the configuration gives it, matched exactly; as the library names it where the
    configuration gives none (or no setting names it: DBOS's tables but the first)."""
    setting = table.setting.upper()
    configured = settings.value(setting) if setting in BY_NAME else None
    return table if configured in (None, "", table.name) else replace(table, name=configured, match=EXACT)
