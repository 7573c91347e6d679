"""How one partition goes whole, after ``jobs/partition_drops.py`` chose it: detached, every row checked again in
the transaction that drops it, and dropped (or kept, or attached back on a live row), each step recorded on the
run; and what an earlier run left half done (detach pending, detached but not dropped) finished first.

- **concurrently** (PostgreSQL 14+, no default partition): ``DETACH PARTITION ... CONCURRENTLY`` on a session of
  its own, recorded as 'detached'; then one transaction locks the detached table, checks and drops it;
- **otherwise**: one transaction detaches (ACCESS EXCLUSIVE on the parent, within the purge's ``lock_timeout``),
  checks every row and drops, or rolls back on a live row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from psycopg import errors

from idemdash.jobs.failures import describe_error
from idemdash.jobs.purge_batches import RunContext
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


def record_event(
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


def detach_and_drop(ctx: RunContext, part: partitions.Partition, report) -> None:
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
            event = record_event(ctx, part, rows.rows, "dropped", "detached and dropped in one transaction")
    except _LiveRow as live:
        event = record_event(
            ctx,
            part,
            live.rows.rows,
            "kept",
            f"{live.rows.live:,} live row(s) found while detaching: left attached, purged in batches",
        )
    except (errors.QueryCanceled, errors.LockNotAvailable, errors.InsufficientPrivilege) as exc:
        event = record_event(
            ctx, part, None, "kept", f"could not detach it ({describe_error(exc, '')}); purged in batches"
        )
    report(event)


def detach_concurrently(ctx: RunContext, part: partitions.Partition, connect, report) -> None:
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
                record_event(
                    ctx, part, None, "kept", f"could not detach it ({describe_error(exc, '')}); purged in batches"
                )
            )
            return
        # cancelled between its two transactions: finish it now, or the next run does
        report(record_event(ctx, part, None, "detached", f"detach pending after {describe_error(exc, '')}"))
        if not _finalize(ctx, part, connect, report):
            return
    else:
        record_event(ctx, part, None, "detached", None)
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
                return record_event(
                    ctx,
                    record,
                    rows.rows,
                    "attached_again",
                    f"{rows.live:,} live row(s) got in before it was detached: attached again, purged in batches",
                )
            partitions.drop_partition(conn, names)
            return record_event(ctx, record, rows.rows, "dropped", "detached concurrently, checked and dropped")
    except (errors.QueryCanceled, errors.LockNotAvailable) as exc:
        # stays 'detached': the next run of the table tries again before anything else
        return PartitionEvent(
            "detached", qualified(record), None, f"could not finish yet ({describe_error(exc, '')}); the next run does"
        )


def settle_leftovers(ctx: RunContext, parts: list[partitions.Partition], connect, report) -> None:
    """Finish what an earlier run left half done: partitions detach pending, and detached ones not yet dropped."""
    for part in parts:
        if part.detach_pending and _finalize(ctx, part, connect, report):
            record_event(ctx, part, None, "detached", "found detach pending; finalized")
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
