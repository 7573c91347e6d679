"""The tables `/purges` lists for the database it shows: the reference tables' three (keys, inbox, outbox), or,
on a database of another library's profile, each of its tables that has a state the library counts as finished
and old (``jobs/library_purge.py``), under its role (``outbox``, ``archive``, ...) as the page, the API and
``idemdash purge --table`` call it."""

from __future__ import annotations

from dataclasses import dataclass

from idemdash.core.profiles import profile
from idemdash.core.setting import PREFIX
from idemdash.core.settings import Settings
from idemdash.dashboard import one_model, panels
from idemdash.dashboard.targets import get_target
from idemdash.jobs.library_purge import history_name, purgeable_states, schedule_of
from idemdash.jobs.purge_run import RETENTION_SETTING
from idemdash.jobs.purge_run import TABLES as REFERENCE_TABLES
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.profile_states import binds, retention_setting

DELETES = {
    "keys": "Terminal idempotency keys (succeeded, failed_final) whose expires_at has passed; never processing "
    "or failed_retryable keys.",
    "inbox": "Inbox rows whose processed_at is older than the retention.",
    "outbox": "Published outbox rows whose published_at is older than the retention; never pending rows.",
}
LABELS = {"keys": "Idempotency keys", "inbox": "Inbox", "outbox": "Outbox"}


@dataclass(frozen=True)
class PurgeTable:
    table: str  # keys, inbox, outbox; or a library table's role
    label: str
    relation: str  # schema.table, as configured or found
    history_name: str  # its name in idemdash.purge_run: the role for the reference tables, else schema.table
    deletes: str
    retention: str
    retention_days: int | None
    schedule_of: str  # whose schedule its scheduled purge keeps: keys, inbox or outbox (PURGE_*_SCHEDULE)


@dataclass(frozen=True)
class PurgeTables:
    tables: tuple[PurgeTable, ...]
    problem: str | None = None  # the library's tables were not found where the configuration points

    def keys(self) -> tuple[str, ...]:
        return tuple(t.table for t in self.tables)

    def get(self, table: str) -> PurgeTable | None:
        return next((t for t in self.tables if t.table == table), None)


def _days(days: int) -> str:
    return f"{days} day{'' if days == 1 else 's'}"


def _reference(config: Settings) -> PurgeTables:
    tables = get_target().tables
    found = []
    for table in REFERENCE_TABLES:
        setting = RETENTION_SETTING[table]
        if setting is None:
            retention, days = "each key's own expires_at (the application sets it when it claims the key)", None
        else:
            days = config.value(setting)
            retention = f"{_days(days)} after {'processed_at' if table == 'inbox' else 'published_at'}"
        found.append(
            PurgeTable(
                table,
                LABELS.get(table, table),
                f"{tables.schema}.{getattr(tables, table)}",
                table,
                DELETES.get(table, ""),
                retention,
                days,
                table,
            )
        )
    return PurgeTables(tuple(found))


def _library(config: Settings) -> PurgeTables:
    chosen = profile(config.profile)
    try:
        found = panels.require(panels.load(find_configured, config))
    except ShapeNotFound as exc:
        return PurgeTables((), str(exc))
    tables = []
    for state in purgeable_states(found):
        setting = retention_setting(state.table)
        if binds(state, "retention") or binds(state, "before_epoch_ms"):
            days: int | None = config.value(setting)
            retention = f"{_days(config.value(setting))} after {chosen.library} finished the row ({PREFIX}{setting})"
        else:
            days, retention = None, f"each row's own expiry, as {chosen.library} writes it"
        note = f" ({state.note})" if state.note else ""
        deletes = (
            f"Rows {chosen.library} itself counts as finished and old{note}; never a row it still has to "
            "send, handle or retry."
        )
        name = found.table(state.table) or state.table
        tables.append(
            PurgeTable(
                state.table,
                f"{state.table.replace('_', ' ').capitalize()}: {name}",
                history_name(found, state.table),
                history_name(found, state.table),
                deletes,
                retention,
                days,
                schedule_of(state.table),
            )
        )
    return PurgeTables(tuple(tables))


def purge_tables() -> PurgeTables:
    """The tables the current database's purges empty, as its profile says."""
    config = get_target().settings
    return _reference(config) if one_model.owns_tables(config) else _library(config)
