"""Maintenance checks: dead tuples, vacuum and analyze of the three tables."""

from __future__ import annotations

import psycopg

from idemdash.checks.finding import OK, WARN, Check, roles
from idemdash.core.formatting import ago
from idemdash.core.settings import Settings
from idemdash.queries import Tables, health, health_fixes

# Dead tuples: a table warns above max(DEAD_TUPLES_MIN, DEAD_TUPLES_SHARE of its live rows) ...
DEAD_TUPLES_MIN = 10_000
DEAD_TUPLES_SHARE = 0.2
# ... or when this many rows changed and it was never vacuumed (or never analyzed) since the statistics reset.
NEVER_VACUUMED_CHANGES = 100_000
# What the finding suggests for the keys table (every claim and completion updates a row): 2% instead of 20%.
KEYS_AUTOVACUUM_SCALE_FACTOR = 0.02


def check_vacuum(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(f) Dead tuples stay bounded and each busy table has been vacuumed and analyzed."""
    role_of = roles(tables)
    stats = health.list_table_vacuum_stats(conn, tables)
    findings = []
    for table in stats:
        reasons = []
        if table.dead_tuples > max(DEAD_TUPLES_MIN, DEAD_TUPLES_SHARE * table.live_tuples):
            reasons.append(f"{table.dead_tuples:,} dead tuples against {table.live_tuples:,} live")
        if table.changes > NEVER_VACUUMED_CHANGES and table.vacuumed is None:
            reasons.append(f"{table.changes:,} rows inserted, updated or deleted and never vacuumed")
        if table.changes_since_analyze > NEVER_VACUUMED_CHANGES and table.analyzed is None:
            reasons.append(f"{table.changes_since_analyze:,} rows changed and never analyzed")
        if not reasons:
            continue
        role = role_of[table.table_name]
        findings.append(
            Check(
                f"vacuum.{role}",
                WARN,
                f"{tables.schema}.{table.table_name} needs a vacuum: " + "; ".join(reasons),
                "Updates and deletes leave dead row versions (every claim, completion and purge makes some) that only "
                "VACUUM reclaims; until then they bloat the table and its indexes and slow every scan, and without "
                "ANALYZE the planner works from stale row counts. Autovacuum should keep up on its own: when it does "
                "not, something holds it back (a long or idle-in-transaction session: see the session findings) or its "
                f"settings are too lax for this table. {_vacuum_numbers(table)}; {_VACUUM_THRESHOLDS}",
                fix_sql=_fix_vacuum(tables, role, table),
            )
        )
    if stats and not findings:
        numbers = "; ".join(f"{tables.schema}.{t.table_name}: {_vacuum_numbers(t)}" for t in stats)
        findings.append(
            Check("vacuum", OK, "Dead tuples of the three tables are within bounds", f"{numbers}; {_VACUUM_THRESHOLDS}")
        )
    return findings


_VACUUM_THRESHOLDS = (
    f"counted since the statistics were last reset. A table warns above {DEAD_TUPLES_MIN:,} dead "
    f"tuples and {DEAD_TUPLES_SHARE:.0%} of its live rows, or when more than "
    f"{NEVER_VACUUMED_CHANGES:,} rows changed and it was never vacuumed or analyzed."
)


def _vacuum_numbers(table: health.VacuumStats) -> str:
    return (
        f"{table.live_tuples:,} live and {table.dead_tuples:,} dead tuples, last vacuumed {ago(table.vacuumed)}, "
        f"last analyzed {ago(table.analyzed)}"
    )


def _fix_vacuum(tables: Tables, role: str, table: health.VacuumStats) -> str:
    fix = health_fixes.fix_vacuum(tables, table.table_name)
    if role == "keys" and "autovacuum_vacuum_scale_factor" not in table.options:
        fix += (
            ";\n-- and have autovacuum visit this hot table after "
            f"{KEYS_AUTOVACUUM_SCALE_FACTOR:.0%} of its rows changed instead of the default 20%:\n"
            + health_fixes.fix_autovacuum_scale_factor(tables, table.table_name, KEYS_AUTOVACUUM_SCALE_FACTOR)
        )
    return fix
