"""`/purges` and its JSON twin: each table's retention and schedule, runs in progress, the run history,
and "run now" (a dry run first on the page; scripts may purge directly through the API).

A run started here runs in this web process (dashboard/purge_start.py), through the scheduler's engine. What the
page shows is read in dashboard/purge_status.py.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from flask import Blueprint, Response, abort, after_this_request, jsonify, redirect, request, url_for

from idemdash.dashboard import contract, pacing_words, panels, purge_status
from idemdash.dashboard.auth import current_user, json_action, operator_required
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.purge_start import StartError, start_purge
from idemdash.dashboard.purge_tables import purge_tables
from idemdash.dashboard.schemas import purges as schema
from idemdash.dashboard.web import htmx_request, render
from idemdash.queries import partitions as partitions_queries
from idemdash.queries import purge_history

log = logging.getLogger(__name__)

bp = Blueprint("purges", __name__)
bp.add_app_template_filter(pacing_words.in_words, "pacing_words")
bp.add_app_template_filter(pacing_words.exact, "pacing_exact")


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
        raise StartError(400, purge_status.unknown_table(value, tables))
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
            return render("purges.html", "purges_panel", **purge_status.purges_data(), page_args={}, message=message)
        return render("purges.html", None, **purge_status.purges_data(), page_args={}, message=message), exc.status
    if not htmx:
        return redirect(url_for("purges.page", started=run.run_id if run else 0), code=303)
    return render(
        "purges.html",
        "purges_panel",
        **purge_status.purges_data(),
        page_args={},
        message=_started_message(run, table, dry_run),
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
    runs, running, statuses = purge_status.table_statuses(now, purge_tables())
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
        **purge_status.purges_data(flt, after, limit),
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
    data = purge_status.purges_data(flt, after, limit)
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
