"""/health for a database of another library's profile: its tables where the configuration points, the indexes
idemdash advises for its pages, whether idemdash's own schema is there for the purge history, and where the
library's own cleaner deletes rows it has not finished (which idemdash never does)."""

from __future__ import annotations

from typing import Any

import psycopg

from idemdash.checks.finding import FAIL, OK, WARN, Check
from idemdash.core.profiles import profile
from idemdash.core.settings import Settings
from idemdash.queries.access import get_database_access
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.profile_indexes import list_profile_index_status
from idemdash.queries.replication import LogicalSlot, list_logical_slots


def check_library(conn: psycopg.Connection, settings: Settings) -> list[Check]:
    chosen = profile(settings.profile)
    try:
        found = find_configured(conn, settings)
    except ShapeNotFound as exc:
        return [
            Check(
                "profile.tables",
                FAIL,
                f"The {chosen.library} tables are not where the configuration points",
                str(exc),
                fix="idemdash detect (it prints the [databases.<name>] lines to paste)",
            )
        ]
    version = f" ({found.version})" if found.version else ""
    checks = [
        Check(
            "profile.tables",
            OK,
            f"The {chosen.library} tables{version} are in schema {found.schema}",
            ", ".join(f"{name} ({role})" for role, name in found.tables) + ": idemdash reads them and changes "
            "none of their rows but what their purge deletes.",
        )
    ]
    for status in list_profile_index_status(conn, found):
        if status.missing:
            checks.append(
                Check(
                    f"profile.index.{status.advice.purpose}",
                    WARN,
                    f"{status.index_name} is {status.state} on {status.table}",
                    status.advice.why + ".",
                    fix_sql=status.create_sql + ";",
                    fix="idemdash check --apply-indexes (with the table owner's database URL)",
                )
            )
        else:
            checks.append(
                Check(
                    f"profile.index.{status.advice.purpose}",
                    OK,
                    f"{status.index_name} is in place",
                    status.advice.why + ".",
                )
            )
    if not get_database_access(conn).idemdash_schema_present:
        checks.append(
            Check(
                "profile.purges",
                WARN,
                "idemdash's own schema is not in this database",
                "The purges of these tables are recorded in idemdash.purge_run: until it exists every "
                "purge run fails, and nothing is deleted.",
                fix="idemdash migrate",
            )
        )
    if chosen.reads_wal:
        checks.append(_slots_check(list_logical_slots(conn), chosen.library))
    if chosen.unfinished_cleanup:
        checks.append(
            Check(
                "profile.cleanup",
                OK,
                "The library's own cleaner deletes unfinished rows; idemdash does not",
                chosen.unfinished_cleanup + " idemdash's purge deletes only rows the library counts as finished.",
            )
        )
    return checks


def _slots_check(slots: list[LogicalSlot], library: str) -> Check:
    """The logical slots that read the outbox from the WAL: none is a failure (nothing publishes), a slot without a
    reader a warning (its rows wait, and it keeps WAL on disk)."""
    if not slots:
        return Check(
            "profile.wal_reader",
            FAIL,
            "No logical replication slot reads this database",
            f"The {library} publishes the outbox's rows by reading them from the write-ahead log through a "
            "logical replication slot; this database has none, so no row is published.",
            fix="start the connector (it creates its slot), or check its database.dbname",
        )
    idle = [s for s in slots if not s.active]

    def behind(s: Any) -> str:
        return "never confirmed" if s.never_confirmed else f"{(s.bytes_behind or 0) / 2**20:,.1f} MiB behind"

    lines = "; ".join(
        f"{s.slot_name} ({s.plugin}, {'connected' if s.active else 'no reader'}, {behind(s)})" for s in slots
    )
    if idle:
        return Check(
            "profile.wal_reader",
            WARN,
            f"{len(idle)} of {len(slots)} logical slot(s) have no reader",
            f"{lines}. A slot without a reader publishes nothing and keeps its WAL on disk until one connects.",
            fix="start the connector, or drop a slot nothing will read again with pg_drop_replication_slot",
        )
    return Check("profile.wal_reader", OK, "The outbox is read from the WAL", lines + ".")
