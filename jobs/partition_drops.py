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
else can reach it. A dry run lists the partitions it would drop with their row counts and changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import errors

from idemdash.jobs.failures import describe_error
from idemdash.jobs.purge_batches import CANCELLED, RunContext
from idemdash.queries import partitions

log = logging.getLogger(__name__)

# Reading a whole partition to check it may take longer than one batch may: this many times the batch timeout.
CHECK_TIMEOUT_FACTOR = 10
# DETACH ... CONCURRENTLY waits for every transaction that may still see the partition; waiting blocks no one.
DETACH_WAIT_MS = 60_000


@dataclass(frozen=True)
class PartitionEvent:
    action: str  # dropped, would_drop, kept, attached_again, detached
    partition: str  # schema-qualified
    rows: int | None
    detail: str | None = None


class _LiveRow(Exception):
    def __init__(self, rows: partitions.PartitionRows) -> None:
        super().__init__(f"{rows.live:,} live row(s)")
        self.rows = rows


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
        _settle_leftovers(ctx, parts, connect, report)
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
                _record(
                    ctx,
                    part,
                    None,
                    "kept",
                    f"checking its rows timed out ({describe_error(exc, '')}); purged in batches",
                )
            )
            continue
        if rows.live:
            report(_record(ctx, part, rows.rows, "kept", f"{rows.live:,} live row(s); the rest purged in batches"))
            continue
        if ctx.dry_run:
            accounted.add(part.qualified)
            ctx.progress.rows += rows.rows
            report(_record(ctx, part, rows.rows, "would_drop", None))
            continue
        if concurrent:
            _detach_concurrently(ctx, part, connect, report)
        else:
            _detach_and_drop(ctx, part, report)
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


def _record(
    ctx: RunContext,
    part: partitions.Partition | partitions.PartitionRecord,
    rows: int | None,
    action: str,
    detail: str | None,
) -> PartitionEvent:
    partitions.insert_purge_partition(ctx.work_conn, ctx.run_id, ctx.table, part, rows, action, detail)
    if action == "dropped":
        ctx.progress.partitions_dropped += 1
        ctx.progress.rows += rows or 0
    return PartitionEvent(action, qualified(part), rows, detail)


def qualified(part: partitions.Partition | partitions.PartitionRecord) -> str:
    return partitions.Leaf(part.partition_schema, part.partition_name).identifier.as_string(None)


def _detach_and_drop(ctx: RunContext, part: partitions.Partition, report) -> None:
    """One transaction: detach (ACCESS EXCLUSIVE on the parent), check every row, drop; a live row rolls back."""
    conn, s = ctx.work_conn, ctx.settings
    names = part.identifiers()
    try:
        with conn.transaction():
            partitions.set_partition_timeouts(conn, s.statement_timeout_ms * CHECK_TIMEOUT_FACTOR, s.lock_timeout_ms)
            partitions.detach_partition(conn, names)
            rows = partitions.get_partition_rows(conn, ctx.table, names["partition"], s.predicate())
            if rows.live:
                raise _LiveRow(rows)
            partitions.drop_partition(conn, names)
            event = _record(ctx, part, rows.rows, "dropped", "detached and dropped in one transaction")
    except _LiveRow as live:
        event = _record(
            ctx,
            part,
            live.rows.rows,
            "kept",
            f"{live.rows.live:,} live row(s) found while detaching: left attached, purged in batches",
        )
    except (errors.QueryCanceled, errors.LockNotAvailable, errors.InsufficientPrivilege) as exc:
        event = _record(ctx, part, None, "kept", f"could not detach it ({describe_error(exc, '')}); purged in batches")
    report(event)


def _detach_concurrently(ctx: RunContext, part: partitions.Partition, connect, report) -> None:
    names = part.identifiers()
    try:
        with connect() as detacher:  # its own session: DETACH ... CONCURRENTLY runs outside a transaction block
            partitions.set_detach_timeouts(detacher, DETACH_WAIT_MS, DETACH_WAIT_MS)
            partitions.detach_partition_concurrently(detacher, names)
    except (
        errors.QueryCanceled,
        errors.LockNotAvailable,
        errors.ObjectNotInPrerequisiteState,
        errors.FeatureNotSupported,
        errors.InsufficientPrivilege,
    ) as exc:
        state = partitions.get_relation_state(ctx.work_conn, part.partition_schema, part.partition_name)
        if not state.detach_pending:
            report(
                _record(ctx, part, None, "kept", f"could not detach it ({describe_error(exc, '')}); purged in batches")
            )
            return
        # cancelled between its two transactions: finish it now, or the next run does
        report(_record(ctx, part, None, "detached", f"detach pending after {describe_error(exc, '')}"))
        if not _finalize(ctx, part, connect, report):
            return
    else:
        _record(ctx, part, None, "detached", None)
    assert part.bound_to is not None  # drop_partitions passes only partitions with an upper bound past the cutoff
    record = partitions.PartitionRecord(
        ctx.run_id,
        ctx.table,
        part.partition_schema,
        part.partition_name,
        part.parent_schema,
        part.parent_name,
        part.bound_from,
        part.bound_to,
        None,
        "detached",
        None,
    )
    report(finish_detached(ctx, record))


def _finalize(ctx: RunContext, part: partitions.Partition | partitions.PartitionRecord, connect, report) -> bool:
    try:
        with connect() as detacher:
            partitions.set_detach_timeouts(detacher, DETACH_WAIT_MS, DETACH_WAIT_MS)
            partitions.finalize_detach_partition(detacher, part.identifiers())
        return True
    except (errors.QueryCanceled, errors.LockNotAvailable) as exc:
        log.warning(
            "purge %s run %d: partition %s is still detach pending (%s); the next run finishes it",
            ctx.table,
            ctx.run_id,
            qualified(part),
            describe_error(exc, ""),
        )
        return False


def finish_detached(ctx: RunContext, record: partitions.PartitionRecord) -> PartitionEvent:
    """The last step for a detached partition: lock it, check every row, drop it, or attach it back."""
    conn, s = ctx.work_conn, ctx.settings
    names = record.identifiers()
    try:
        with conn.transaction():
            partitions.set_partition_timeouts(conn, s.statement_timeout_ms * CHECK_TIMEOUT_FACTOR, s.lock_timeout_ms)
            partitions.lock_detached_partition(conn, names)
            rows = partitions.get_partition_rows(conn, ctx.table, names["partition"], s.predicate())
            if rows.live:
                partitions.attach_partition(conn, names, record.bound_from, record.bound_to)
                return _record(
                    ctx,
                    record,
                    rows.rows,
                    "attached_again",
                    f"{rows.live:,} live row(s) got in before it was detached: attached again, purged in batches",
                )
            partitions.drop_partition(conn, names)
            return _record(ctx, record, rows.rows, "dropped", "detached concurrently, checked and dropped")
    except (errors.QueryCanceled, errors.LockNotAvailable) as exc:
        # stays 'detached': the next run of the table tries again before anything else
        return PartitionEvent(
            "detached", qualified(record), None, f"could not finish yet ({describe_error(exc, '')}); the next run does"
        )


def _settle_leftovers(ctx: RunContext, parts: list[partitions.Partition], connect, report) -> None:
    """Finish what an earlier run left half done: partitions detach pending, and detached ones not yet dropped."""
    for part in parts:
        if part.detach_pending and _finalize(ctx, part, connect, report):
            _record(ctx, part, None, "detached", "found detach pending; finalized")
    for record in partitions.list_detached_partitions(ctx.work_conn, ctx.table):
        state = partitions.get_relation_state(ctx.work_conn, record.partition_schema, record.partition_name)
        mine = record.run_id == ctx.run_id
        if not state.present:
            event = PartitionEvent("dropped", qualified(record), None, "already gone")
            partitions.settle_detached_partition(
                ctx.work_conn, record, "dropped", "gone before a later run could drop it"
            )
        elif state.is_partition and not state.detach_pending:
            event = PartitionEvent("attached_again", qualified(record), None, "attached again by someone else")
            partitions.settle_detached_partition(ctx.work_conn, record, "attached_again", "found attached again")
        elif state.detach_pending:
            continue  # could not be finalized above; the next run tries again
        else:
            event = finish_detached(ctx, record)
            if not mine and event.action in ("dropped", "attached_again"):
                partitions.settle_detached_partition(
                    ctx.work_conn, record, event.action, f"finished by run {ctx.run_id}"
                )
        report(event)
