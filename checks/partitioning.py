"""Partition checks: what partitioning an application table costs (uniqueness only within a partition), whether a
purge can drop its partitions whole, may delete from each, and whether they are made ahead of time.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg import sql

from idemdash.checks import shared_reads
from idemdash.checks.finding import FAIL, WARN, Check, qualified
from idemdash.checks.purging import RETENTION
from idemdash.core.formatting import duration
from idemdash.core.settings import Settings
from idemdash.queries import Tables, partitions
from idemdash.queries.app_schema import PARTITION_UNIQUE_COLUMNS, fix_create_time_partitions

# Partitions ready ahead of now below this: inserts are about to find no partition for their row.
AHEAD_WARN = timedelta(days=1)


def check_partitioning(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """What a range-partitioned application table costs, and whether its partitions can go whole and are ready."""
    findings = []
    now = datetime.now(timezone.utc)
    for table in ("keys", "inbox", "outbox"):
        parts = shared_reads.table_partitions(conn, tables, table)
        if not parts:
            continue
        name = qualified(tables, table)
        ranged = [(p.bound_from, p.bound_to) for p in parts if p.bound_from is not None and p.bound_to is not None]
        width = max((bound_to - bound_from for bound_from, bound_to in ranged), default=None)
        findings.append(_uniqueness(table, name, width, config))
        droppable = [p for p in parts if p.droppable_by(table)]
        if not droppable:
            key = parts[0].key_column or "an expression"
            findings.append(
                Check(
                    f"partition.drops.{table}",
                    WARN,
                    f"{name} is partitioned, but by {key}: purged row by row",
                    "A purge drops a partition whole only when the table is range-partitioned by one timestamptz "
                    "column "
                    f"that says when its rows are due ({', '.join(partitions.DROP_COLUMNS[table])}); otherwise it "
                    "deletes in batches, partition by partition.",
                )
            )
        elif any(p.is_default for p in parts):
            findings.append(
                Check(
                    f"partition.default.{table}",
                    WARN,
                    f"{name} has a default partition: partitions are detached under a brief exclusive lock",
                    "DETACH PARTITION ... CONCURRENTLY is not allowed while a default partition exists, so the purge "
                    "detaches inside the transaction that checks and drops the partition, holding an ACCESS EXCLUSIVE "
                    "lock on the whole table for as long as the check reads the partition (application reads and "
                    "writes "
                    "wait). Without the default partition the detach runs concurrently.",
                )
            )
        elif not all(p.owned for p in droppable):
            findings.append(
                Check(
                    f"partition.owner.{table}",
                    WARN,
                    f"{name}: idemdash's role does not own it, so its partitions are purged row by row",
                    "Detaching a partition needs the owner of the partitioned table, and dropping it the owner of the "
                    "partition. Without that the purge deletes an old partition's rows in batches (it still empties "
                    "it, at the cost of row-by-row deletes, WAL and vacuum). Run the purges as "
                    "the tables' owner (or a role that is a member of it) to drop whole partitions.",
                )
            )
        closed = [p for p in parts if not p.writable]
        if closed:
            findings.append(_partition_grants(table, name, closed, conn.info.user))
        newest = max((bound_to for _, bound_to in ranged), default=None)
        if newest is not None and not any(p.is_default for p in parts) and newest - now < AHEAD_WARN:
            findings.append(_no_partition_ahead(table, name, newest, now, tables))
    return findings


def _partition_grants(table: str, name: str, closed: list[partitions.Partition], role: str) -> Check:
    listed = ", ".join(p.qualified for p in closed[:5]) + (f" and {len(closed) - 5} more" if len(closed) > 5 else "")
    grantee = sql.Identifier(role).as_string(None)
    grants = "\n".join(f"GRANT SELECT, UPDATE, DELETE ON {p.qualified} TO {grantee};" for p in closed)
    return Check(
        f"partition.grants.{table}",
        FAIL,
        f"{name}: the purge may not delete from {len(closed)} of its partitions",
        "Purge batches lock and delete rows partition by partition, addressing each partition directly, and "
        f"privileges granted on the partitioned table do not reach its partitions that way: {listed}. The purge "
        "of this table fails at the first of them. Grant them (as the owner; the SQL below), and for partitions "
        "made later `ALTER DEFAULT PRIVILEGES FOR ROLE <owner> IN SCHEMA <schema> GRANT SELECT, UPDATE, DELETE ON "
        f"TABLES TO {grantee}`, or run the purges as the owner.",
        fix_sql=grants,
    )


def _uniqueness(table: str, name: str, width: timedelta | None, config: Settings) -> Check:
    unique = ", ".join(PARTITION_UNIQUE_COLUMNS.get(table, ["idempotency_scope", "idempotency_key"]))
    base = (
        f"A partitioned table's unique keys must include its partition column, so ({unique}) is unique only "
        "within one partition: a redelivery or retry whose row lands in a later partition than the first is not "
        "stopped by the key. The reference consume_message_once looks in every partition before it inserts, so "
        "there only two deliveries racing across a boundary both run; code that relies on INSERT ... ON CONFLICT "
        "alone deduplicates within one partition. "
    )
    if table not in RETENTION or width is None:
        return Check(
            f"partition.uniqueness.{table}",
            WARN,
            f"{name} is partitioned: uniqueness holds within a partition only",
            base + "Keep the idempotency-key table unpartitioned.",
        )
    retention = config.value(RETENTION[table]) * 86400
    window = retention - width.total_seconds()
    horizon = config.replay_horizon
    detail = (
        base + f"Counted in whole partitions of {duration(width.total_seconds())}, the window in which a "
        f"duplicate is caught is the retention minus one partition: {duration(max(window, 0))} "
        f"(IDEMDASH_{RETENTION[table]}={config.value(RETENTION[table])})."
    )
    if window < horizon:
        return Check(
            f"partition.uniqueness.{table}",
            WARN,
            f"{name}: deduplication window {duration(max(window, 0))} is shorter than the replay horizon "
            f"({duration(horizon)})",
            detail + " Raise the retention by at least one partition.",
            fix=f"IDEMDASH_{RETENTION[table]}={math.ceil((horizon + width.total_seconds()) / 86400)}",
        )
    return Check(
        f"partition.uniqueness.{table}",
        WARN,
        f"{name} is partitioned: uniqueness holds within a partition only",
        detail,
    )


def _no_partition_ahead(table: str, name: str, newest: datetime, now: datetime, tables: Tables) -> Check:
    late = newest <= now
    return Check(
        f"partition.ahead.{table}",
        FAIL if late else WARN,
        f"{name} has no partition for rows after {newest.isoformat(timespec='minutes')}",
        (
            "Rows arriving now find no partition and their inserts fail. "
            if late
            else f"In {duration((newest - now).total_seconds())} inserts start failing: no partition will take their "
            "rows. "
        )
        + "For the reference schema (init-app-schema --partitioned) the scheduler's partitions job makes them "
        "(IDEMDASH_PARTITIONS_SCHEDULE); is `idemdash scheduler` running? The SQL makes the next week's now.",
        fix_sql=fix_create_time_partitions(tables, table) if table in PARTITION_UNIQUE_COLUMNS else None,
    )
