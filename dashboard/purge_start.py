"""Starting a purge run from the dashboard: it runs in a daemon thread of this web process through the same
engine as the scheduler (``jobs.purge_run.run_purge``; ``jobs.library_purge`` for another library's tables), which
records it in ``idemdash.purge_run`` (and, started
by a person, in the audit log); the view waits only until the run has its id."""

from __future__ import annotations

import logging
import threading
from typing import Any

from idemdash.dashboard import one_model
from idemdash.dashboard.targets import get_target
from idemdash.jobs.library_purge import run_library_purges
from idemdash.jobs.purge_run import describe_error, run_purge
from idemdash.queries import purge_history

log = logging.getLogger(__name__)

# How long a view waits for a started run to get its id before answering without it.
START_WAIT_SECONDS = 10.0


class StartError(Exception):
    def __init__(self, status: int, message: str, run: purge_history.PurgeRun | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.run = run


class _Start:
    """What the view learns from the run's thread: its id as it starts, or how it ended, or what broke."""

    def __init__(self) -> None:
        self.known = threading.Event()
        self.run_id: int | None = None
        self.result: Any = None
        self.error: BaseException | None = None


def start_purge(table: str, *, dry_run: bool, started_by: str) -> purge_history.PurgeRun | None:
    """Start a run in a daemon thread and wait (briefly) for its id; the run as recorded, or None if slow.

    Raises StartError 409 when the engine skipped the run because another run of the table holds its lock,
    503 when the run could not start at all.
    """
    target = get_target()
    state = _Start()

    def on_start(run_id: int) -> None:
        state.run_id = run_id
        state.known.set()

    def work() -> None:
        try:
            if one_model.owns_tables(target.settings):
                state.result = run_purge(
                    target, table, dry_run=dry_run, started_by=started_by, by_person=True, on_start=on_start
                )
            else:  # another library's table, by its role: only what the library counts as finished and old
                results = run_library_purges(
                    target, dry_run=dry_run, started_by=started_by, by_person=True, roles=(table,), on_start=on_start
                )
                state.result = results[0] if results else None
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting view, and logged
            state.error = exc
            log.exception("purge of %s (dry run: %s) started from the dashboard failed", table, dry_run)
        finally:
            state.known.set()

    threading.Thread(target=work, name=f"idemdash-purge-{table}", daemon=True).start()
    state.known.wait(START_WAIT_SECONDS)
    if state.error is not None and state.run_id is None:
        raise StartError(
            503, f"the {table} purge could not start: {describe_error(state.error, target.dsn)}. Nothing was deleted."
        )
    result = state.result
    if state.run_id is None and result is not None and result.run_id is None:
        raise StartError(503, f"the {table} purge could not start: {result.error or 'no detail'}. Nothing was deleted.")
    run_id = state.run_id if state.run_id is not None else getattr(result, "run_id", None)
    if run_id is None:
        return None  # still starting after START_WAIT_SECONDS: the history shows it once it has its row
    db = get_target()
    with db.read(primary=True) as conn:
        run = purge_history.get_purge_run(conn, run_id)
    if run is not None and run.outcome == "skipped":
        raise StartError(
            409,
            f"a purge of {table} is already running, so this one was not started (recorded as "
            f"run {run.run_id}, outcome skipped): "
            f"{run.error or 'the table is locked by another run'}. Wait for the running one to "
            "finish.",
            run,
        )
    return run
