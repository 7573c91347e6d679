"""Whole partitions instead of row-by-row deletes: a purge's first step on a table range-partitioned by time.

A partition is a candidate when the table is partitioned by one of the table's time columns
(``queries.partitions.DROP_COLUMNS``) and its range ends at or before the table's cutoff (keys: now; inbox and
outbox: now minus the retention), so no new row can arrive in it. A candidate is read first without locks: one
live row (not eligible for the purge) and it stays, purged in batches like any other partition. Otherwise:

- **concurrently** (PostgreSQL 14+, no default partition): ``DETACH PARTITION ... CONCURRENTLY`` (the application
  keeps reading and writing the table), recorded as 'detached'; then one transaction locks the detached table,
  checks every row again and drops it, or attaches it back when a live row got in meanwhile. A run that dies in
  between leaves the 'detached' record, and the next run of the table finishes the job first.
- **otherwise**: one transaction detaches (an ACCESS EXCLUSIVE lock on the parent, within the purge's
  ``lock_timeout``), checks every row and drops, or rolls back on a live row.

Either way the check that every row is eligible runs in the transaction that drops the partition, while nothing
else can reach it (``jobs/partition_detach.py``). A dry run lists the partitions it would drop with their row
counts and changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import psycopg
from psycopg import errors

from idemdash.jobs.failures import describe_error
from idemdash.jobs.partition_detach import (
    CHECK_TIMEOUT_FACTOR,
    PartitionEvent,
    detach_and_drop,
    detach_concurrently,
    record_event,
    settle_leftovers,
)
from idemdash.jobs.purge_batches import CANCELLED, RunContext
from idemdash.queries import partitions

log = logging.getLogger(__name__)


def drop_partitions(
    ctx: RunContext,
    connect: Callable[[], psycopg.Connection],
    on_partition: Callable[[PartitionEvent], None] | None = None,
) -> tuple[str | None, set[str]]:
    """Drop (dry run: list) every partition of the table whose rows are all eligible.

    Returns an outcome when the run must stop here ('budget_exhausted', 'cancelled'), else None, and the qualified
    names of
    the partitions batches need not visit: a dry run's would-drop partitions (their rows are counted), and
    partitions of the due column itself whose range starts at or after the cutoff (none of their rows can be due).
    """
    conn = ctx.work_conn
    parts = partitions.list_table_partitions(conn, ctx.tables, ctx.table)
    if not parts:
        return None, set()

    def report(event: PartitionEvent) -> None:
        log.info(
            "purge %s run %d: partition %s %s (%s rows)%s",
            ctx.table,
            ctx.run_id,
            event.partition,
            event.action,
            event.rows,
            f": {event.detail}" if event.detail else "",
        )
        if on_partition is not None:
            on_partition(event)

    if not ctx.dry_run:
        settle_leftovers(ctx, parts, connect, report)
        parts = partitions.list_table_partitions(conn, ctx.tables, ctx.table)
    s = ctx.settings
    cutoffs = partitions.get_purge_cutoffs(conn, s.inbox_retention_days, s.outbox_retention_days)
    cutoff = getattr(cutoffs, ctx.table)
    concurrent = conn.info.server_version >= partitions.CONCURRENT_DETACH_VERSION and not any(
        p.is_default for p in parts
    )
    accounted = {p.qualified for p in parts if p.nothing_due(ctx.table, cutoff)}
    not_owned = 0
    for part in parts:
        if not part.droppable_by(ctx.table) or part.bound_to is None or part.bound_to > cutoff or part.detach_pending:
            continue
        if not part.owned:  # only the owner may detach and drop: batches empty it (nothing read twice, no record)
            not_owned += 1
            continue
        if time.monotonic() >= ctx.deadline:
            return "budget_exhausted", accounted
        if ctx.cancelled_by() is not None:  # raises when the lock's connection is gone: stop before another partition
            return CANCELLED, accounted
        try:
            with conn.transaction():
                partitions.set_partition_timeouts(
                    conn, s.statement_timeout_ms * CHECK_TIMEOUT_FACTOR, s.lock_timeout_ms
                )
                rows = partitions.get_partition_rows(conn, ctx.table, part.identifiers()["partition"], s.predicate())
        except errors.QueryCanceled as exc:
            report(
                record_event(
                    ctx,
                    part,
                    None,
                    "kept",
                    f"checking its rows timed out ({describe_error(exc, '')}); purged in batches",
                )
            )
            continue
        if rows.live:
            report(record_event(ctx, part, rows.rows, "kept", f"{rows.live:,} live row(s); the rest purged in batches"))
            continue
        if ctx.dry_run:
            accounted.add(part.qualified)
            ctx.progress.rows += rows.rows
            report(record_event(ctx, part, rows.rows, "would_drop", None))
            continue
        if concurrent:
            detach_concurrently(ctx, part, connect, report)
        else:
            detach_and_drop(ctx, part, report)
    if not_owned:
        log.info(
            "purge %s run %d: %d partition(s) past the cutoff left to batches: only the owner of the table may "
            "drop them (/health: partition.owner.%s)",
            ctx.table,
            ctx.run_id,
            not_owned,
            ctx.table,
        )
    return None, accounted
