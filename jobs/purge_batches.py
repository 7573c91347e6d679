"""The batches of one purge run: which tables they run on, in which order, and the loop that paces them.

A plain table is one unit; a partitioned one is purged leaf partition by leaf partition (after whole partitions
were dropped, ``jobs.partition_drops``). Each unit's batches go in due order when an index delivers it
(``queries.purge_batches.due_index``) and along the primary key otherwise, one short transaction each with
``SET LOCAL`` timeouts, paced by ``jobs.pacing.Pacer``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Set
from dataclasses import dataclass, field

import psycopg
from psycopg import errors, sql

from idemdash.core.formatting import plural
from idemdash.jobs.failures import describe_error
from idemdash.jobs.pacing import Pacer
from idemdash.jobs.probe import ApplicationWatch
from idemdash.jobs.purge_settings import PurgeSettings
from idemdash.queries import Tables, partitions, purge_batches, purge_probe, purges
from idemdash.queries.purge_probe import Pacing

log = logging.getLogger(__name__)

# A timed-out batch halves the batch size down to this floor (or the configured size, if smaller) ...
MIN_BATCH_SIZE = 100
# ... and a run whose batches still time out this many times in a row at the floor gives up as failed.
TIMEOUTS_AT_FLOOR = 3


@dataclass
class Progress:
    batches: int = 0
    rows: int = 0
    partitions_dropped: int = 0


@dataclass
class RunContext:
    """What every part of one run shares."""

    table: str
    tables: Tables
    settings: PurgeSettings
    run_id: int
    dry_run: bool
    work_conn: psycopg.Connection
    lock_conn: psycopg.Connection
    deadline: float
    on_batch: Callable[[int, int], None] | None = None
    # who asked, in this process, to stop after the current batch (Ctrl-C on `idemdash purge`); None: nobody
    cancel: Callable[[], str | None] | None = None
    # a connection for the watch on the application (jobs.probe); None: no watching
    connect_probe: Callable[[], psycopg.Connection] | None = None
    progress: Progress = field(default_factory=Progress)
    pacer: Pacer = field(init=False)

    def __post_init__(self) -> None:
        self.pacer = make_pacer(
            self.settings,
            self.run_id,
            None if self.dry_run else self.connect_probe,
            [self.work_conn.info.backend_pid, self.lock_conn.info.backend_pid],
        )

    def pause(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self.deadline - time.monotonic())))

    def cancelled_by(self) -> str | None:
        """Who asked to cancel the run: in this process, or through the database (the dashboard, the API). The
        database is asked on the lock-holding connection, which also proves that connection and its lock live."""
        local = self.cancel() if self.cancel is not None else None
        return local or purges.get_purge_cancel(self.lock_conn, self.run_id)


def make_pacer(
    s: PurgeSettings,
    run_id: int,
    connect_probe: Callable[[], psycopg.Connection] | None,
    purge_pids: list[int] | None = None,
) -> Pacer:
    """A run's pacer: the configured batch size and duty cycle, and the latency budget when it may watch the
    application (``purge_pids``: the run's own backends, which are not the application)."""
    factory = None
    if connect_probe is not None and s.latency_budget:
        probe_connect, pids = connect_probe, list(purge_pids or [])

        def factory() -> ApplicationWatch:
            return ApplicationWatch(probe_connect, run_id, pids)

    return Pacer(
        s.batch_size,
        min(MIN_BATCH_SIZE, s.batch_size),
        s.duty_cycle,
        s.pause_ms,
        latency_budget=s.latency_budget,
        probe_factory=factory,
    )


def record_pacing_safely(conn: psycopg.Connection, run_id: int, pacing: Pacing) -> None:
    """What the run's pacer measured, on its row; a failure to write it (idemdash's schema behind) never keeps the
    run's outcome from being recorded."""
    try:
        purge_probe.record_pacing(conn, run_id, pacing)
    except psycopg.Error as exc:
        log.warning("purge run %d: what its pacer measured was not recorded: %s", run_id, describe_error(exc, ""))


CANCELLED = "cancelled"


def cancelled_error(by: str, progress: Progress) -> str:
    return (
        f"cancelled by {by} after {plural(progress.batches, 'batch')} and {plural(progress.rows, 'row')}; what is "
        "left goes at the next run"
    )


@dataclass(frozen=True)
class Unit:
    """One table the batches run on: the configured one (relation None) or one leaf partition of it."""

    relation: sql.Identifier | None
    name: str | None
    order: str
    heap: purge_batches.HeapShape | None = None  # heap order: the table's pages when the run began


def plan_units(ctx: RunContext, skip: Set[str] = frozenset()) -> list[Unit]:
    """The tables to run batches on, each with the order its indexes and its share of due rows call for; ``skip``:
    qualified names of partitions batches need not visit (``jobs.partition_drops.drop_partitions`` says which)."""
    if not partitions.list_table_partitions(ctx.work_conn, ctx.tables, ctx.table):
        return [_unit(ctx, None, None)]
    return [
        _unit(ctx, leaf.identifier, leaf.partition_name)
        for leaf in partitions.list_leaf_partitions(ctx.work_conn, ctx.tables, ctx.table)
        if leaf.identifier.as_string(None) not in skip
    ]


def _unit(ctx: RunContext, relation: sql.Identifier | None, name: str | None) -> Unit:
    """The order ``purge_batches.choose_order`` decides (what /health says too); the primary key when the planner
    could not be asked in time (planning waits for a table lock like a batch, and a batch then says why)."""
    s = ctx.settings
    try:
        with ctx.work_conn.transaction():
            purges.set_purge_timeouts(ctx.work_conn, s.statement_timeout_ms, s.lock_timeout_ms)
            chosen = purge_batches.choose_order(
                ctx.work_conn,
                ctx.tables,
                ctx.table,
                limit=s.batch_size,
                relation=relation,
                relation_name=name,
                **s.predicate(),
            )
    except (errors.QueryCanceled, errors.LockNotAvailable):
        return Unit(relation, name, purge_batches.BY_KEY)
    return Unit(relation, name, chosen.order, chosen.heap)


def _batch(ctx: RunContext, unit: Unit, size: int, after: purge_batches.Cursor | None) -> purge_batches.Batch:
    s = ctx.settings
    if unit.heap is None:
        return purge_batches.run_batch(
            ctx.work_conn,
            ctx.tables,
            ctx.table,
            dry_run=ctx.dry_run,
            order=unit.order,
            run_id=ctx.run_id,
            limit=size,
            after=after,
            relation=unit.relation,
            **s.predicate(),
        )
    # heap order: as many pages as hold a batch's rows on average
    pages = max(1, round(size / (unit.heap.rows_per_page or 1)))
    first = int(after[0]) if after is not None and after[0] is not None else 0  # type: ignore[arg-type]
    return purge_batches.run_heap_batch(
        ctx.work_conn,
        ctx.tables,
        ctx.table,
        dry_run=ctx.dry_run,
        run_id=ctx.run_id,
        first_page=first,
        pages=pages,
        end_page=unit.heap.pages,
        relation=unit.relation,
        **s.predicate(),
    )


def run_batches(ctx: RunContext, units: list[Unit]) -> tuple[str, str | None]:
    """Every unit's batches in turn; the run's outcome and error."""
    for unit in units:
        outcome, error = _unit_batches(ctx, unit)
        if outcome != "succeeded":
            return outcome, error
    return "succeeded", None


def _unit_batches(ctx: RunContext, unit: Unit) -> tuple[str, str | None]:
    s, pacer, progress = ctx.settings, ctx.pacer, ctx.progress
    where = f"{ctx.table}{f' ({unit.name})' if unit.name else ''}"
    after = None
    timeouts_at_floor = 0
    while True:
        # right before each batch (after the pause, when a cancel most often arrives): a cancel seen stops the run
        # here, so no batch starts after it; raises when the lock's connection is gone
        by = ctx.cancelled_by()
        if by is not None:
            return CANCELLED, cancelled_error(by, progress)
        if time.monotonic() >= ctx.deadline:
            return "budget_exhausted", None
        size = pacer.size
        started = time.monotonic()
        pacer.batch_started()
        try:
            with ctx.work_conn.transaction():
                purges.set_purge_timeouts(ctx.work_conn, s.statement_timeout_ms, s.lock_timeout_ms)
                batch = _batch(ctx, unit, size, after)
        except (errors.QueryCanceled, errors.LockNotAvailable) as exc:
            # statement_timeout (or a cancel) or lock_timeout: nothing of this batch committed
            pacer.batch_ended()
            what = "lock_timeout" if isinstance(exc, errors.LockNotAvailable) else "statement_timeout"
            if pacer.after_timeout():
                log.warning("purge %s run %d: a batch hit %s; batch size now %d", where, ctx.run_id, what, pacer.size)
            else:
                timeouts_at_floor += 1
                if timeouts_at_floor >= TIMEOUTS_AT_FLOOR:
                    return "failed", (
                        f"{TIMEOUTS_AT_FLOOR} batches of {size} rows in a row hit {what} "
                        f"({s.statement_timeout_ms} ms statement, {s.lock_timeout_ms} ms "
                        f"lock): {describe_error(exc, '')}"
                    )
                log.warning("purge %s run %d: a batch of %d (the floor) hit %s", where, ctx.run_id, size, what)
            ctx.pause(pacer.after_batch(time.monotonic() - started, 0))
            continue
        seconds = time.monotonic() - started
        pacer.batch_ended()
        timeouts_at_floor = 0
        progress.batches += 1
        progress.rows += batch.rows
        if ctx.on_batch is not None:
            ctx.on_batch(progress.batches, progress.rows)
        if batch.after is None or (unit.heap is None and batch.taken < size):
            return "succeeded", None  # the end of the pages or the key range, or no more due rows (due order)
        after = batch.after
        ctx.pause(pacer.after_batch(seconds, batch.taken))
