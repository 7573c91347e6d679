"""Least privilege: what the role idemdash connects as may do, and which features a missing grant switches off.

Reading needs USAGE on the schemas and SELECT on the three tables and on idemdash's own; operators'
reclassifications need UPDATE on the keys table; each purge needs DELETE on its table, and UPDATE too, because
its row locks (``FOR UPDATE SKIP LOCKED``) need it; actions, purges and snapshots write idemdash's own tables.
Each finding carries the GRANT that fixes it (``queries.access``). A missing table is the table check's finding.
"""

from __future__ import annotations

import psycopg

from idemdash.checks.finding import FAIL, OK, WARN, Check
from idemdash.core.settings import Settings
from idemdash.queries import Tables
from idemdash.queries.access import (
    TableAccess,
    fix_grant_idemdash_tables,
    fix_grant_on_table,
    fix_grant_schema_usage,
    list_table_access,
)

WHAT = {"keys": "idempotency keys", "inbox": "inbox", "outbox": "outbox"}


def check_privileges(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    access = list_table_access(conn, tables)
    if not access:
        return []
    role = access[0].role_name
    grantee = role
    findings: list[Check] = []
    for row in (a for a in access if a.role != "idemdash" and a.present):
        findings += _app_table(row, grantee, config)
    findings += _own_tables([a for a in access if a.role == "idemdash"], grantee)
    if not any(f.status != OK for f in findings):
        findings = [
            Check(
                "privileges",
                OK,
                f"Role {role!r} has every privilege idemdash uses",
                "It may read the three tables and idemdash's own, update the keys table (reclassify), "
                "delete and lock rows for the purges, and write idemdash's schema.",
            )
        ]
    return findings


def _app_table(row: TableAccess, grantee: str, config: Settings) -> list[Check]:
    name, what, table_role = row.qualified, WHAT[row.role], row.role
    if not row.readable:
        grants = [] if row.schema_usage else [fix_grant_schema_usage(row.schema_name, grantee) + ";"]
        grants += [] if row.can_select else [_grant(row, ["SELECT"], grantee)]
        return [
            Check(
                f"privilege.{table_role}.select",
                FAIL,
                f"Role {row.role_name!r} may not read {name}",
                f"Every page, API answer and metric about the {what} table fails with 'permission denied'. "
                "A viewer-only deployment needs to read (SELECT) the three tables, with USAGE on their schema.",
                fix_sql="\n".join(grants),
            )
        ]
    findings = []
    if table_role == "keys" and not row.can_update:
        if config.read_only:
            findings.append(
                Check(
                    "privilege.keys.update",
                    OK,
                    f"Role {row.role_name!r} may not update {name}: none needed",
                    "IDEMDASH_READ_ONLY=1 switches reclassifying off anyway.",
                )
            )
        else:
            findings.append(
                Check(
                    "privilege.keys.update",
                    WARN,
                    f"Reclassifying keys is switched off: role {row.role_name!r} may not update {name}",
                    "Operators' reclassifications (single and bulk) fail with 'permission denied'. Grant it, or set "
                    "IDEMDASH_READ_ONLY=1 for a viewer-only deployment.",
                    fix_sql=_grant(row, ["UPDATE"], grantee),
                )
            )
    if not (row.can_delete and row.can_lock):
        missing = [p for p, ok in (("DELETE", row.can_delete), ("UPDATE", row.can_lock)) if not ok]
        findings.append(
            Check(
                f"privilege.{table_role}.purge",
                WARN,
                f"Purges of the {what} table fail: role {row.role_name!r} may not delete and lock rows of {name}",
                "The purge deletes rows and first locks them, and a row lock needs the privilege to update, so the "
                "scheduler's runs and Run now fail as this role. Fine if the scheduler connects as another role; "
                "otherwise the table grows without bound.",
                fix_sql=_grant(row, missing, grantee),
            )
        )
    return findings


def _grant(row: TableAccess, privileges: list[str], grantee: str) -> str:
    return fix_grant_on_table(row.schema_name, row.table_name, privileges, grantee) + ";"


def _own_tables(own: list[TableAccess], grantee: str) -> list[Check]:
    if not own:
        return []  # no idemdash schema: the migrations check says `idemdash migrate`
    role = own[0].role_name
    unreadable = [a.qualified for a in own if not a.readable]
    if unreadable:
        return [
            Check(
                "privilege.idemdash.select",
                FAIL,
                f"Role {role!r} may not read idemdash's own tables",
                f"It may not read {', '.join(unreadable)} (or use schema idemdash): the audit log, purge "
                "history, trends and the readiness probe fail.",
                fix_sql=fix_grant_idemdash_tables(grantee) + ";",
            )
        ]
    unwritable = [a.qualified for a in own if not (a.can_insert and a.can_update and a.can_delete)]
    if unwritable:
        return [
            Check(
                "privilege.idemdash.write",
                WARN,
                f"Role {role!r} may not write idemdash's own tables",
                f"It may not insert, update and delete in {', '.join(unwritable)}: reclassifications (their "
                "audit rows), purges (their history), notes, snapshots and rollups fail as this role. A "
                "viewer-only deployment with IDEMDASH_READ_ONLY=1 and no scheduler needs none of them.",
                fix_sql=fix_grant_idemdash_tables(grantee) + ";",
            )
        ]
    return []
