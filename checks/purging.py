"""Purge checks: what makes a purge cost what is due rather than what is stored (issue 13).

- which index lets each table's purge read only its due rows (without one, every run walks the primary key);
- the server settings that decide how much WAL deletes write (``wal_compression``, checkpoint spacing);
- what partitioning a table costs (uniqueness only within a partition) and whether its partitions can be dropped
  whole and are made ahead of time.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg import sql

from idemdash.checks.finding import FAIL, OK, WARN, Check, qualified
from idemdash.core.formatting import duration
from idemdash.core.settings import Settings
from idemdash.queries import Tables, partitions, purges
from idemdash.queries.app_schema import PARTITION_UNIQUE_COLUMNS, fix_create_time_partitions
from idemdash.queries.indexes import ADVICE, list_index_status
from idemdash.queries.indexes import OK as OK_STATE
from idemdash.queries.purge_batches import DUE as DUE_ORDER
from idemdash.queries.purge_batches import HEAP, choose_order, run_method

# The recommended index that gives each table's purge its due order.
PURGE_INDEX = {"keys": "index_keys_due", "inbox": "index_inbox_processed", "outbox": "index_outbox_published"}
RETENTION = {"inbox": "INBOX_RETENTION_DAYS", "outbox": "OUTBOX_RETENTION_DAYS"}
DUE = {
    "keys": "terminal keys in the order they expire (expires_at)",
    "inbox": "rows by processed_at",
    "outbox": "published rows by published_at",
}
# Checkpoints closer than this (with max_wal_size at most CHECKPOINT_WAL_MB) make most deleted rows log a full page.
CHECKPOINT_SECONDS = 900
CHECKPOINT_WAL_MB = 2048
# Partitions ready ahead of now below this: inserts are about to find no partition for their row.
AHEAD_WARN = timedelta(days=1)


def check_purge_indexes(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """How each table's purge would take its rows now, decided as a run decides it (``choose_order``, each
    partition); without an index of due rows, the index that would let it read only those."""
    findings = []
    states = {status.advice.name: status.state for status in list_index_status(conn, tables)}
    for table, advice_name in PURGE_INDEX.items():
        advice = ADVICE[advice_name]
        name = qualified(tables, table)
        predicate = (
            {"replay_horizon_seconds": config.replay_horizon}
            if table == "keys"
            else {"retention_days": config.value(RETENTION[table])}
        )
        leaves = (
            partitions.list_leaf_partitions(conn, tables, table)
            if partitions.list_table_partitions(conn, tables, table)
            else [None]
        )
        chosen = [
            choose_order(
                conn,
                tables,
                table,
                limit=config.purge_batch_size,
                relation=leaf.identifier if leaf else None,
                relation_name=leaf.partition_name if leaf else None,
                **predicate,
            )
            for leaf in leaves
        ]
        method = run_method([c.order for c in chosen])
        index = next((c.index for c in chosen if c.index), None)
        check_id = f"purge.index.{table}"
        if method == DUE_ORDER:
            findings.append(
                Check(
                    check_id,
                    OK,
                    f"The {table} purge reads only due rows",
                    f"Its batches take {DUE[table]} through {index} and stop where the due rows end, so a run costs "
                    "what is due, not what is stored.",
                )
            )
        elif method == HEAP:
            findings.append(
                Check(
                    check_id,
                    OK,
                    f"The {table} purge goes page by page: most of {name} is due",
                    "With most rows due, one pass over the table's pages deletes them for less than reading each "
                    "through an index; a run says so on /purges.",
                )
            )
        elif states.get(advice_name) == OK_STATE:
            findings.append(
                Check(
                    check_id,
                    OK,
                    f"The {table} purge walks the primary key for now",
                    f"{advice.index_name(tables)} exists, but at this table's size the planner does not read the due "
                    "rows through it, so a run walks the primary key (and /purges says so): it costs little on a "
                    "small table, or one not yet analysed. Once the table grows and is analysed, runs take the index "
                    "and read only what is due.",
                )
            )
        else:
            findings.append(
                Check(
                    check_id,
                    WARN,
                    f"The {table} purge reads all of {name} to find what is due",
                    f"No index gives the purge {DUE[table]}, so every run walks the whole primary key and reads every "
                    "row to test it (about 225,000 rows a second: some 45 s a run at 10 million rows, however little "
                    "is due), and its deletes land on pages all over the table. With this index a run reads only the "
                    "due rows, in the order they became due, which sit together in the table. The statement does not "
                    "block writes (run it outside a transaction block).",
                    fix_sql=advice.as_text(tables),
                )
            )
    return findings


def check_delete_settings(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """The server settings that decide how much WAL a purge writes per deleted row."""
    found = purges.list_delete_settings(conn)
    findings = []
    compression = found.get("wal_compression")
    if compression is not None and compression.setting == "off":
        best = next((c for c in ("lz4", "zstd", "pglz", "on") if c in compression.choices), "on")
        findings.append(
            Check(
                "purge.wal_compression",
                WARN,
                "wal_compression is off: deletes write whole pages to the WAL",
                "The first change to a table page after each checkpoint writes the whole 8 kB page to the WAL (a full "
                "page image). A purge changes many pages, so most of its WAL is such images, and an application's "
                "commit waits behind them to reach the disk. Compressing them cut the WAL a purge wrote by about a "
                "third in idemdash's benchmark (pglz, 356 to 248 bytes per deleted key), for CPU time: lz4 or zstd, "
                "where the server has them, cost less than pglz. It needs no restart.",
                fix_sql=purges.fix_wal_compression(best),
            )
        )
    timeout = found.get("checkpoint_timeout")
    wal = found.get("max_wal_size")
    if timeout is not None and wal is not None:
        seconds = _seconds(timeout)
        megabytes = _megabytes(wal)
        if seconds < CHECKPOINT_SECONDS and megabytes <= CHECKPOINT_WAL_MB:
            findings.append(
                Check(
                    "purge.checkpoints",
                    WARN,
                    f"Checkpoints come every {duration(seconds)} or {megabytes:,} MB of WAL: a purge rewrites many "
                    "pages "
                    "whole",
                    "After every checkpoint the first change to each page is logged as a full page image, so the "
                    "closer "
                    "checkpoints are, the more of a purge's deletes (and of the application's writes) cost a whole "
                    f"page of WAL. {duration(CHECKPOINT_SECONDS)} between checkpoints and a max_wal_size that lets "
                    "them "
                    "come by time rather than by volume cut that; crash recovery takes longer in proportion. Neither "
                    "needs a restart.",
                    fix_sql=purges.fix_checkpoint_spacing(
                        f"{CHECKPOINT_SECONDS // 60}min", f"{max(4096, 2 * megabytes)}MB"
                    ),
                )
            )
    if not findings:
        findings.append(
            Check(
                "purge.server",
                OK,
                "The server's WAL settings suit batched deletes",
                f"wal_compression {compression.setting if compression else '?'}, checkpoint_timeout "
                f"{timeout.setting if timeout else '?'}{timeout.unit or '' if timeout else ''}, "
                f"max_wal_size {wal.setting if wal else '?'}{wal.unit or '' if wal else ''}.",
            )
        )
    return findings


def check_partitioning(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """What a range-partitioned application table costs, and whether its partitions can go whole and are ready."""
    findings = []
    now = datetime.now(timezone.utc)
    for table in ("keys", "inbox", "outbox"):
        parts = partitions.list_table_partitions(conn, tables, table)
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


def _seconds(s: purges.ServerSetting) -> int:
    factor = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "d": 86400}.get(s.unit or "s", 1)
    return int(float(s.setting) * factor)


def _megabytes(s: purges.ServerSetting) -> int:
    factor = {"kB": 1 / 1024, "8kB": 8 / 1024, "MB": 1, "GB": 1024}.get(s.unit or "MB", 1)
    return int(float(s.setting) * factor)
