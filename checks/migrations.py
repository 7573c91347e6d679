"""The migrations check: idemdash's own schema has every migration this version ships, unedited."""

from __future__ import annotations

import psycopg

from idemdash.checks.finding import FAIL, OK, WARN, Check
from idemdash.core.settings import Settings
from idemdash.queries import Tables, health
from idemdash.queries.migrate import list_migrations


def check_migrations(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(a) idemdash's own schema has every migration this version ships, unedited."""
    known = list_migrations()
    if not health.get_migration_table(conn):
        return [
            Check(
                "migrations",
                FAIL,
                "idemdash's own schema is not installed",
                "The idemdash schema (audit log, purge runs, metric snapshots) does not exist in this database, "
                "so purges cannot be recorded and actions cannot be audited. Run `idemdash migrate` (safe to "
                "run while other replicas start: it takes an advisory lock).",
                fix="idemdash migrate",
            )
        ]
    applied = {m.version: m for m in health.list_applied_migrations(conn)}
    findings = []
    edited = [m for m in known if m.version in applied and applied[m.version].checksum != m.checksum]
    if edited:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in edited)
        findings.append(
            Check(
                "migrations.edited",
                FAIL,
                f"Migration changed after it was applied: {names}",
                "Migrations are append-only; this idemdash ships a different text for a migration the "
                "database already ran, so `idemdash migrate` refuses to continue. Install the released "
                "idemdash version, which has the original files.",
            )
        )
    pending = [m for m in known if m.version not in applied]
    if pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        findings.append(
            Check(
                "migrations",
                FAIL,
                f"{len(pending)} migration{'s' if len(pending) != 1 else ''} pending: {names}",
                "This idemdash expects tables or columns those migrations create; pages that need them "
                "fail until you run `idemdash migrate`.",
                fix="idemdash migrate",
            )
        )
    newer = sorted(v for v in applied if v > (known[-1].version if known else 0))
    if newer:
        findings.append(
            Check(
                "migrations.newer",
                WARN,
                "The database was migrated by a newer idemdash",
                f"Migration{'s' if len(newer) != 1 else ''} {', '.join(f'{v:04d}' for v in newer)} "
                "are unknown to this version. Upgrade this idemdash to match the others.",
                fix="upgrade idemdash",
            )
        )
    if not findings:
        last = known[-1]
        findings.append(
            Check(
                "migrations",
                OK,
                "idemdash's schema is up to date",
                f"{len(known)} migrations applied, the latest {last.version:04d}_{last.name}.",
            )
        )
    return findings
