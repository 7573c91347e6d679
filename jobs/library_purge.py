"""Purges of another library's tables (a database of a library's profile, core/profiles): only the rows the
library itself counts as finished and old (the table's ``purgeable`` state, queries/profile_states.sql), in the
same way as the reference tables' purges (jobs/purge_run.py): one runner per table across every replica (a
session advisory lock), every run recorded in ``idemdash.purge_run`` under the table's qualified name (and audited
when a person started it), short batches with ``SET LOCAL`` timeouts that leave rows another transaction holds
(``SKIP LOCKED``) and check the condition again as each row is deleted, paced, and stopped at the time budget.

A table whose library defines no purgeable state (Debezium's outbox, whose rows a replication slot reads; a
library's in-progress or unfinished rows, which its own cleaner may delete by age but idemdash never does) has
no purge. The database needs idemdash's own schema for the history (`idemdash migrate`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import psycopg
from psycopg import errors

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found
from idemdash.core.profiles.shape import PURGEABLE, State
from idemdash.jobs.failures import describe_error
from idemdash.jobs.job_ids import job_id
from idemdash.jobs.pacing import Pacer
from idemdash.jobs.purge_batches import make_pacer, record_pacing_safely
from idemdash.jobs.purge_run import PurgeResult
from idemdash.jobs.purge_settings import PurgeSettings
from idemdash.jobs.purges import schedule_trigger
from idemdash.queries import purges
from idemdash.queries.catalog import find_configured
from idemdash.queries.library_purges import (
    delete_library_batch,
    delete_library_batch_in_order,
    record_library_dry_run,
)
from idemdash.queries.profile_states import params_for
from idemdash.queries.target import Target

log = logging.getLogger(__name__)


def purgeable_states(found: Found) -> list[State]:
    """The purgeable state of each of the found tables whose library defines one, in the profile's order."""
    present = dict(found.tables)
    return [s for s in profile(found.profile).states_of(found.version) if s.meaning == PURGEABLE and s.table in present]


def history_name(found: Found, role: str) -> str:
    """The table's name in idemdash.purge_run (and its lock): schema-qualified, never one of the reference names."""
    return f"{found.schema}.{found.table(role)}"


def run_library_purges(
    target: Target,
    *,
    dry_run: bool,
    started_by: str,
    by_person: bool = False,
    roles: tuple[str, ...] = (),
    cancel: Callable[[], str | None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> list[PurgeResult]:
    """A run for each purgeable table of the database's profile (only ``roles``, when given); ``on_start(run_id)``
    as each run's ``idemdash.purge_run`` row exists (a skipped run's too)."""
    with target.connect("idemdash-purge-find") as conn:
        found = find_configured(conn, target.settings)
    return [
        run_library_purge(
            target,
            found,
            state,
            dry_run=dry_run,
            started_by=started_by,
            by_person=by_person,
            cancel=cancel,
            on_start=on_start,
        )
        for state in purgeable_states(found)
        if not roles or state.table in roles
    ]


def run_library_purge(
    target: Target,
    found: Found,
    state: State,
    *,
    dry_run: bool,
    started_by: str,
    by_person: bool = False,
    cancel: Callable[[], str | None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> PurgeResult:
    """One run of the table of ``state`` (a purgeable one); never raises for database trouble."""
    name = history_name(found, state.table)
    settings = PurgeSettings.from_config(target.settings, "outbox")
    params = params_for(state, target.settings)
    started = time.monotonic()
    batches = rows = 0
    run_id: int | None = None
    lock_conn: psycopg.Connection | None = None
    pacer: Pacer | None = None
    outcome, error = "succeeded", None
    try:
        lock_conn = target.connect(f"idemdash-purge-{state.table}"[:63])
        if not purges.try_purge_lock(lock_conn, name):
            skipped = purges.insert_skipped_purge_run(
                lock_conn, name, dry_run=dry_run, started_by=started_by, audited=by_person
            )
            if on_start is not None:
                on_start(skipped.run_id)
            return PurgeResult(skipped.run_id, name, "skipped", 0, 0, dry_run, skipped.error)
        run_id = purges.insert_purge_run(lock_conn, name, dry_run=dry_run, started_by=started_by, audited=by_person)
        if on_start is not None:
            on_start(run_id)
        purges.fail_dead_purge_runs(lock_conn, name, run_id)
        purges.delete_old_purge_runs(lock_conn, name, settings.history_retention_days)
        held, run = lock_conn, run_id

        def asked() -> str | None:  # in this process, or through the database (POST /api/v1/purges/<id>/cancel)
            return (cancel() if cancel is not None else None) or purges.get_purge_cancel(held, run)

        if dry_run:
            rows = record_library_dry_run(lock_conn, found, state, params, run_id=run_id)
        else:
            pacer = make_pacer(
                settings,
                run_id,
                lambda: target.connect(f"idemdash-purge-{state.table}-probe"[:63]),
                [lock_conn.info.backend_pid],
            )
            outcome, error, batches, rows = _batches(
                target,
                found,
                state,
                params,
                settings,
                run_id,
                pacer=pacer,
                deadline=started + settings.time_budget_seconds,
                cancel=asked,
            )
    except Exception as exc:  # a purge never takes the scheduler or a request down with it
        outcome, error = "failed", describe_error(exc, target.dsn)
        log.error("purge %s%s failed: %s", name, f" run {run_id}" if run_id else "", error)
    finally:
        pacing = pacer.finish() if pacer is not None else None  # stops watching the application
        if lock_conn is not None:
            if run_id is not None and not lock_conn.closed:
                try:
                    if pacing is not None:
                        record_pacing_safely(lock_conn, run_id, pacing)
                    purges.finish_purge_run(lock_conn, run_id, outcome, error)
                    purges.release_purge_lock(lock_conn, name)
                except psycopg.Error as exc:
                    log.error("purge %s run %d: could not record outcome %s: %s", name, run_id, outcome, exc)
            lock_conn.close()
    log.info(
        "purge %s: run %s %s: %d batch(es), %d row(s)%s in %.1fs",
        name,
        run_id,
        outcome,
        batches,
        rows,
        " counted" if dry_run else " deleted",
        time.monotonic() - started,
    )
    return PurgeResult(run_id, name, outcome, batches, rows, dry_run, error)


def _batches(
    target: Target,
    found: Found,
    state: State,
    params: dict,
    settings: PurgeSettings,
    run_id: int,
    *,
    pacer: Pacer,
    deadline: float,
    cancel: Callable[[], str | None],
) -> tuple[str, str | None, int, int]:
    """Batches until none is left, the budget is spent, or someone cancels, paced like the reference tables' purges
    (``jobs.pacing.Pacer``: the duty cycle, smaller batches after slow ones or a timeout); (outcome, error, batches,
    rows)."""
    batches = rows = 0
    after: str | None = None  # along the state's indexed time column, where the last batch stopped
    with target.connect(f"idemdash-purge-{state.table}-batches"[:63]) as conn:
        while True:
            if by := cancel():
                return "cancelled", f"cancelled by {by} after {batches} batch(es), {rows} row(s)", batches, rows
            if time.monotonic() > deadline:
                return "budget_exhausted", None, batches, rows
            size, began = pacer.size, time.monotonic()
            pacer.batch_started()
            try:
                with conn.transaction():
                    purges.set_purge_timeouts(conn, settings.statement_timeout_ms, settings.lock_timeout_ms)
                    if state.order:
                        deleted, stopped = delete_library_batch_in_order(
                            conn, found, state, params, run_id=run_id, batch_size=size, order=state.order, after=after
                        )
                    else:
                        deleted, stopped = (
                            delete_library_batch(conn, found, state, params, run_id=run_id, batch_size=size),
                            None,
                        )
            except (errors.QueryCanceled, errors.LockNotAvailable):
                pacer.batch_ended()
                if not pacer.after_timeout():
                    return (
                        "failed",
                        f"batches of {size} rows kept running past the "
                        f"{settings.statement_timeout_ms} ms statement timeout",
                        batches,
                        rows,
                    )
                continue
            pacer.batch_ended()
            batches += 1 if deleted else 0
            rows += deleted
            after = stopped or after
            if deleted < size:
                return "succeeded", None, batches, rows
            time.sleep(pacer.after_batch(time.monotonic() - began, deleted))


def schedule_of(role: str) -> str:
    """Whose schedule a library table's purge keeps: the keys', the inbox's, or (any other table) the outbox's."""
    return role if role in ("keys", "inbox") else "outbox"


def purge_library_table(target: Target, role: str) -> list[PurgeResult]:
    """The scheduled purge of one library table; never raises (a bad setting or a bug is one log line)."""
    try:
        return run_library_purges(target, dry_run=False, started_by="scheduler", roles=(role,))
    except Exception:  # the tables not found, a bug: the scheduler runs the other jobs
        log.exception("scheduled purge of %s (%s) could not run", role, target.name)
        return []


def register(scheduler, target: Target) -> list[str]:
    """A job per table whose library defines a purgeable state (known from the profile, without connecting), on
    the schedule of its kind of table (PURGE_KEYS/INBOX/OUTBOX_SCHEDULE); returns their ids."""
    chosen = profile(target.settings.profile)
    roles = [t.role for t in chosen.tables if any(s.table == t.role and s.meaning == PURGEABLE for s in chosen.states)]
    added = []
    for role in roles:
        trigger = schedule_trigger(target.settings, schedule_of(role))
        if trigger is None:
            continue
        ident = job_id(f"purge_{role}", target)
        scheduler.add_job(
            purge_library_table,
            trigger,
            args=[target, role],
            id=ident,
            name=f"retention purge of the {chosen.library} {role} table ({target.name})",
            replace_existing=True,
        )
        added.append(ident)
    return added
