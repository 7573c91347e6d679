"""Ready to serve: idemdash's schema is installed and current, and the three application tables exist and can be
read. What `/readyz`, `idemdash serve` and `idemdash scheduler` ask before anything else; each problem is one
line naming the cause and the fix (``core.diagnosis``)."""

from __future__ import annotations

import psycopg

from idemdash.checks.schema import TABLE_SETTING
from idemdash.core.diagnosis import IDEMDASH_SCHEMA, NO_TABLE, PRIVILEGE, Cause
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.remedies import idemdash_schema_missing, privilege_missing, quote_role, table_missing
from idemdash.core.settings import Settings
from idemdash.queries import Tables
from idemdash.queries.access import get_database_access, list_table_access
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.health import list_applied_migrations
from idemdash.queries.migrate import list_migrations


def readiness(conn: psycopg.Connection, tables: Tables, settings: Settings | None = None) -> list[Cause]:
    """Every reason the dashboard cannot work on this database yet (none: ready). With the database's ``settings``
    of another library's profile: its tables where the configuration points (idemdash reads them, and needs no
    schema of its own there)."""
    if settings is not None and settings.profile != DEFAULT_PROFILE:
        try:
            find_configured(conn, settings)
        except ShapeNotFound as exc:
            return [Cause(NO_TABLE, str(exc), False)]
        return []
    database = get_database_access(conn)
    access = list_table_access(conn, tables)
    problems: list[Cause] = []
    own = [a for a in access if a.role == "idemdash"]
    if not database.idemdash_schema_present or not any(a.table_name == "schema_migration" for a in own):
        problems.append(Cause(IDEMDASH_SCHEMA, idemdash_schema_missing(), False))
    elif not all(a.readable for a in own):
        names = ", ".join(a.qualified for a in own if not a.readable)
        problems.append(
            Cause(
                PRIVILEGE,
                f"role {database.role_name!r} may not read idemdash's own tables ({names}): "
                f"GRANT USAGE ON SCHEMA idemdash TO {quote_role(database.role_name)}; "
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA idemdash TO "
                f"{quote_role(database.role_name)};",
                False,
            )
        )
    else:
        applied = {m.version for m in list_applied_migrations(conn)}
        pending = [f"{m.version:04d}_{m.name}" for m in list_migrations() if m.version not in applied]
        if pending:
            problems.append(
                Cause(
                    IDEMDASH_SCHEMA,
                    f"idemdash's schema is behind this version ({len(pending)} "
                    f"migration(s) pending: {', '.join(pending)}): run `idemdash "
                    "migrate`.",
                    False,
                )
            )
    for table in (a for a in access if a.role != "idemdash"):
        if not table.present:
            setting = f"IDEMDASH_APP_SCHEMA and {TABLE_SETTING[table.role]}"
            problems.append(Cause(NO_TABLE, f"table {table_missing(table.qualified, setting)}", False))
        elif not table.readable:
            fix = privilege_missing(table.role_name, "SELECT", table.qualified)
            if not table.schema_usage:
                fix = (
                    f"role {table.role_name!r} may not use schema {table.schema_name}: GRANT USAGE ON SCHEMA "
                    f"{table.schema_name} TO {quote_role(table.role_name)}; then " + fix
                )
            problems.append(Cause(PRIVILEGE, fix, False))
    return problems
