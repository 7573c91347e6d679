"""`/purges` and its JSON twin: each table's retention and schedule, runs in progress, the run history,
and "run now" (a dry run first on the page; scripts may purge directly through the API).

A run started here runs in this web process (dashboard/purge_start.py), through the scheduler's engine.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from flask import Blueprint, Response, abort, after_this_request, jsonify, redirect, request, url_for

from idemdash.core.statuses import PURGE_METHOD_WORDS
from idemdash.dashboard import contract, pacing_words, panels
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.purge_start import StartError, start_purge
from idemdash.dashboard.purge_tables import PurgeTables, purge_tables
from idemdash.dashboard.schemas import purges as schema
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import htmx_request, render
from idemdash.jobs.purges import SCHEDULE_SETTING, schedule_trigger
from idemdash.queries import partitions as partitions_queries
from idemdash.queries import purge_history

log = logging.getLogger(__name__)

bp = Blueprint("purges", __name__)
bp.add_app_template_filter(pacing_words.in_words, "pacing_words")
bp.add_app_template_filter(pacing_words.exact, "pacing_exact")

# A "Purge now" follows a dry run of the same table at most this old, with no real run in between.
DRY_RUN_FRESH = timedelta(hours=1)
POLL_RUNNING, POLL_IDLE = "3s", "15s"


@dataclass(frozen=True)
class TableStatus:
    table: str
    label: str
    schedule_of: str  # whose schedule setting it keeps: keys, inbox or outbox
    relation: str  # schema.table, as configured
    deletes: str
    retention: str
    retention_days: int | None
    schedule: str | None  # crontab line in UTC, 'off', or None when not configured
    next_run_at: datetime | None
    runs: purge_history.TableRuns
    running: list[purge_history.PurgeRun] = field(default_factory=list)
    dry_run_ready: purge_history.PurgeRun | None = None  # the dry run a "Purge now" follows, when there is one

    def answer(self) -> schema.TableStatus:
        return schema.TableStatus.model_validate(
            asdict(self)
            | {
                "last_run": self.runs.last_run,
                "last_dry_run": self.runs.last_dry_run,
                "last_success_at": self.runs.last_success.finished_at if self.runs.last_success else None,
                "running": self.running,
            }
        )


def next_run_at(config: Mapping[str, Any], table: str, now: datetime) -> datetime | None:
    """When the table's crontab schedule (UTC) fires next, computed here: this process may not run the scheduler."""
    trigger = schedule_trigger(config, table)
    return None if trigger is None else trigger.get_next_fire_time(None, now)


def _dry_run_ready(
    runs: purge_history.TableRuns, running: list[purge_history.PurgeRun], now: datetime
) -> purge_history.PurgeRun | None:
    dry = runs.last_dry_run
    if dry is None or running or dry.finished_at is None or now - dry.finished_at > DRY_RUN_FRESH:
        return None
    real = runs.last_real_run
    if real is not None and (real.started_at, real.run_id) > (dry.started_at, dry.run_id):
        return None  # a real purge ran since: the dry run's count is stale
    return dry


def _table_statuses(now: datetime, tables: PurgeTables) -> tuple[panels.Panel, panels.Panel, list[TableStatus]]:
    config = get_target().settings
    runs = panels.load(purge_history.list_purge_table_runs, tuple(t.history_name for t in tables.tables))
    running = panels.load(purge_history.list_running_purge_runs)
    statuses = []
    for t in tables.tables:
        table_runs = (runs.value or {}).get(t.history_name) or purge_history.TableRuns(t.history_name)
        table_running = [r for r in running.value or [] if r.table_name == t.history_name]
        statuses.append(
            TableStatus(
                table=t.table,
                label=t.label,
                schedule_of=t.schedule_of,
                relation=t.relation,
                deletes=t.deletes,
                retention=t.retention,
                retention_days=t.retention_days,
                schedule=config.get(SCHEDULE_SETTING[t.schedule_of]),
                next_run_at=next_run_at(config, t.schedule_of, now),
                runs=table_runs,
                running=table_running,
                dry_run_ready=_dry_run_ready(table_runs, table_running, now),
            )
        )
    return runs, running, statuses


def _purges(
    flt: purge_history.PurgeRunFilter | None = None, after: str | None = None, limit: int = 50
) -> dict[str, Any]:
    now = datetime.now(timezone.utc)
    flt = flt or purge_history.PurgeRunFilter()
    tables = purge_tables()
    if flt.table is not None:
        chosen = tables.get(flt.table)
        if chosen is None:
            abort(400, _unknown_table(flt.table, tables))
        flt = replace(flt, table=chosen.history_name)  # the history knows a library's table by schema.table
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        history = panels.load(purge_history.list_purge_runs, flt, after=after, limit=limit)
    except ValueError as exc:
        abort(400, str(exc))
    runs, running, statuses = _table_statuses(now, tables)
    # The panels are separate reads: poll fast while any of them shows a run in progress.
    listed = panels.require(history).items if history.ok else []
    in_progress = bool(running.value) or any(r.outcome == "running" for r in listed)
    partitions = _partitions(
        [r.run_id for r in panels.require(history).items if r.partitions_dropped or r.dry_run] if history.ok else []
    )
    return {
        "as_of": now,
        "history": history,
        "flt": flt,
        "after": after,
        "limit": limit,
        "table_runs": runs,
        "tables_problem": tables.problem,
        "chosen_table": _key_of(flt.table, tables),
        "running": running,
        "tables": statuses,
        "poll": POLL_RUNNING if in_progress else POLL_IDLE,
        "partitions": partitions,
        "methods": PURGE_METHOD_WORDS,
    }


def _partitions(run_ids: list[int]) -> dict[int, list[partitions_queries.PartitionRecord]]:
    """What each of these runs did with partitions (dropped, would drop, kept), by run."""
    found: dict[int, list[partitions_queries.PartitionRecord]] = {}
    panel = panels.load(partitions_queries.list_run_partitions, run_ids) if run_ids else None
    for record in (panel.value or []) if panel is not None else []:
        found.setdefault(record.run_id, []).append(record)
    return found


def _unknown_table(table: object, tables: PurgeTables) -> str:
    keys = [repr(k) for k in tables.keys()]  # noqa: SIM118 (PurgeTables has keys(), no __iter__)
    if not keys:
        return (
            f"this database has no table to purge: none of its tables has rows its library counts as finished "
            f"and old (got {table!r})"
        )
    have = keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} or {keys[-1]}"
    return f"table must be one of {have}, the tables this database's purges empty (got {table!r})"


def _key_of(history_name: str | None, tables: PurgeTables) -> str | None:
    return next((t.table for t in tables.tables if t.history_name == history_name), None)


def _page_args(flt: purge_history.PurgeRunFilter, after: str | None, limit: int) -> dict[str, Any]:
    return {
        k: v
        for k, v in {
            "table": flt.table,
            "run_id": flt.run_id,
            "outcome": flt.outcome,
            "started_by": flt.started_by,
            "cursor": after,
            "limit": limit if limit != 50 else None,
        }.items()
        if v is not None
    }


def _table_arg(value: Any) -> str:
    tables = purge_tables()
    if not isinstance(value, str) or tables.get(value) is None:
        raise StartError(400, _unknown_table(value, tables))
    return value


def _status_url(run_id: int | None, table: str) -> str:
    return url_for("purges.api", run_id=run_id) if run_id is not None else url_for("purges.api", table=table)


@bp.post("/api/v1/purges/run")
@json_action
@contract.operation(
    "Start a purge of one table now (a dry run counts what would go); follow it at status_url",
    body=schema.RunBody,
    ok=schema.RunStarted,
    status=202,
    conflict=schema.RunConflict,
    errors=(400, 401, 403, 409, 415, 503),
)
def run_api() -> Any:
    try:
        body = contract.body(schema.RunBody)
        run = start_purge(_table_arg(body.table), dry_run=body.dry_run, started_by=current_user().name)
    except ActionError as exc:
        return exc.json()
    except StartError as exc:
        if exc.run is None:
            return ActionError(exc.status, exc.message).json()
        conflict = schema.RunConflict.model_validate(
            {
                "error": exc.message,
                "run_id": exc.run.run_id,
                "outcome": exc.run.outcome,
                "status_url": _status_url(exc.run.run_id, exc.run.table_name),
            }
        )
        return jsonify(conflict.model_dump(exclude_none=True)), exc.status
    run_id = run.run_id if run else None
    location = _status_url(run_id, body.table)

    @after_this_request
    def _location(response: Response) -> Response:
        response.headers["Location"] = location
        return response

    return schema.RunStarted.model_validate(
        {
            "run_id": run_id,
            "table": body.table,
            "dry_run": body.dry_run,
            "outcome": run.outcome if run else "running",
            "status_url": location,
        }
    )


@bp.post("/purges/run")
@operator_required
def run_form():
    """The page's buttons. Without htmx: 303 to the page (4xx with the page and the message on refusal).
    With htmx: the panel, refusals included, with 200 (htmx swaps no 4xx answer, so the message would be lost)."""
    form = request.form
    htmx = bool(htmx_request())
    try:
        table = _table_arg(form.get("table"))
        if form.get("dry_run") not in ("1", "0"):
            raise StartError(400, "dry_run must be 1 (count only) or 0 (delete)")
        dry_run = form.get("dry_run") == "1"
        if not dry_run:
            _check_dry_run_first(table, form.get("after_dry_run", ""))
        run = start_purge(table, dry_run=dry_run, started_by=current_user().name)
    except StartError as exc:
        if exc.status == 400 and not htmx:
            abort(400, exc.message)
        message = ("error", exc.message)
        if htmx:
            return render("purges.html", "purges_panel", **_purges(), page_args={}, message=message)
        return render("purges.html", None, **_purges(), page_args={}, message=message), exc.status
    if not htmx:
        return redirect(url_for("purges.page", started=run.run_id if run else 0), code=303)
    return render(
        "purges.html", "purges_panel", **_purges(), page_args={}, message=_started_message(run, table, dry_run)
    )


def _started_message(run: purge_history.PurgeRun | None, table: str, dry_run: bool) -> tuple[str, str]:
    kind = "Dry run" if dry_run else "Purge"
    if run is None:
        return "ok", f"{kind} of {table} started; it has not reported its run id yet: it appears in the history below."
    if run.outcome == "running":
        return "ok", f"{kind} of {table} started (run {run.run_id}); its progress shows below."
    return "ok", f"{kind} of {table} (run {run.run_id}) already finished: {run.outcome}."


def _check_dry_run_first(table: str, after_dry_run: str) -> None:
    """The page's rule: a real purge follows a fresh dry run of the same table, and no real run since."""
    try:
        dry_id = int(after_dry_run)
    except ValueError:
        raise StartError(400, "after_dry_run must be the run id of the dry run this purge follows") from None
    now = datetime.now(timezone.utc)
    runs, running, statuses = _table_statuses(now, purge_tables())
    status = next(s for s in statuses if s.table == table)
    if status.running:
        raise StartError(409, f"a purge of {table} is running (run {status.running[0].run_id}): wait for it to finish")
    ready = status.dry_run_ready
    if ready is None or ready.run_id != dry_id:
        raise StartError(
            409,
            f"the dry run you saw (run {dry_id}) is no longer the latest fresh dry run of {table} "
            "(another run happened since, or it is over an hour old): run a dry run again, then "
            "purge.",
        )


# -- pages ----------------------------------------------------------------------------------------------------


def _read_args(args: schema.PurgesQuery) -> tuple[purge_history.PurgeRunFilter, str | None, int]:
    flt = purge_history.PurgeRunFilter(
        table=args.table, run_id=args.run_id, outcome=args.outcome, started_by=args.started_by
    )
    return flt, args.cursor, args.limit


@bp.get("/purges")
def page():
    args = contract.query(schema.PurgesPageQuery)
    flt, after, limit = _read_args(args)
    message = None
    started = args.started
    if started is not None:
        message = (
            "ok",
            f"Run {started} started; its progress and result show below."
            if started
            else "The run started; it appears in the history below.",
        )
    return render(
        "purges.html",
        "purges_panel",
        **_purges(flt, after, limit),
        page_args=_page_args(flt, after, limit),
        message=message,
    )


@bp.get("/api/v1/purges")
@contract.operation(
    "The purge history (newest first), the runs in progress, and each table's retention, schedule and latest runs",
    query=schema.PurgesQuery,
    ok=schema.PurgeHistory,
)
def api() -> schema.PurgeHistory:
    flt, after, limit = _read_args(contract.query(schema.PurgesQuery))
    data = _purges(flt, after, limit)
    history = panels.require(data["history"])
    panels.require(data["table_runs"])
    panels.require(data["running"])
    partitions = data["partitions"]
    return schema.PurgeHistory(
        items=[
            schema.HistoryRun.model_validate(
                asdict(run) | {"partitions": [_partition(p) for p in partitions.get(run.run_id, [])]}
            )
            for run in history.items
        ],
        next_cursor=history.next_cursor,
        as_of=data["as_of"],
        running=data["running"].value,
        tables=[t.answer() for t in data["tables"]],
    )


def _partition(record: partitions_queries.PartitionRecord) -> schema.PartitionRecord:
    return schema.PartitionRecord.model_validate(
        {
            "partition": f"{record.partition_schema}.{record.partition_name}",
            "action": record.action,
            "rows": record.rows,
            "from": record.bound_from,
            "to": record.bound_to,
            "detail": record.detail,
        }
    )
