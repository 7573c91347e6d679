"""Purge checks: what makes a purge cost what is due rather than what is stored (issue 13).

- which index lets each table's purge read only its due rows (without one, every run walks the primary key);
- the server settings that decide how much WAL deletes write (``wal_compression``, checkpoint spacing).

What partitioning a table costs, and whether its partitions can go whole: ``checks/partitioning.py``.
"""

from __future__ import annotations

import psycopg

from idemdash.checks import shared_reads
from idemdash.checks.finding import OK, WARN, Check, qualified
from idemdash.core.formatting import duration
from idemdash.core.settings import Settings
from idemdash.queries import Tables, partitions, purges
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


def check_purge_indexes(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """How each table's purge would take its rows now, decided as a run decides it (``choose_order``, each
    partition); without an index of due rows, the index that would let it read only those."""
    findings = []
    states = {
        status.advice.name: status.state
        for status in list_index_status(conn, tables, shared_reads.app_indexes(conn, tables))
    }
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
            if shared_reads.table_partitions(conn, tables, table)
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


def _seconds(s: purges.ServerSetting) -> int:
    factor = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "d": 86400}.get(s.unit or "s", 1)
    return int(float(s.setting) * factor)


def _megabytes(s: purges.ServerSetting) -> int:
    factor = {"kB": 1 / 1024, "8kB": 8 / 1024, "MB": 1, "GB": 1024}.get(s.unit or "MB", 1)
    return int(float(s.setting) * factor)
