"""What /purges and its JSON twin show, read once for both: each table's retention, schedule and next run, the
runs in progress, the dry run a "Purge now" may follow, and the history with what each run did to partitions.
The routes are in dashboard/purges.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from flask import abort

from idemdash.core.settings import Settings
from idemdash.core.statuses import PURGE_METHOD_WORDS
from idemdash.dashboard import panels
from idemdash.dashboard.purge_tables import PurgeTables, purge_tables
from idemdash.dashboard.schemas import purges as schema
from idemdash.dashboard.targets import get_target
from idemdash.jobs.purges import SCHEDULE_SETTING, schedule_trigger
from idemdash.queries import partitions as partitions_queries
from idemdash.queries import purge_history

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


def next_run_at(config: Settings, table: str, now: datetime) -> datetime | None:
    """When the table's crontab schedule (UTC) fires next, computed here: this process may not run the scheduler."""
    trigger = schedule_trigger(config, table)
    return None if trigger is None else trigger.get_next_fire_time(None, now)


def dry_run_ready(
    runs: purge_history.TableRuns, running: list[purge_history.PurgeRun], now: datetime
) -> purge_history.PurgeRun | None:
    dry = runs.last_dry_run
    if dry is None or running or dry.finished_at is None or now - dry.finished_at > DRY_RUN_FRESH:
        return None
    real = runs.last_real_run
    if real is not None and (real.started_at, real.run_id) > (dry.started_at, dry.run_id):
        return None  # a real purge ran since: the dry run's count is stale
    return dry


def table_statuses(now: datetime, tables: PurgeTables) -> tuple[panels.Panel, panels.Panel, list[TableStatus]]:
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
                schedule=config.value(SCHEDULE_SETTING[t.schedule_of]),
                next_run_at=next_run_at(config, t.schedule_of, now),
                runs=table_runs,
                running=table_running,
                dry_run_ready=dry_run_ready(table_runs, table_running, now),
            )
        )
    return runs, running, statuses


def purges_data(
    flt: purge_history.PurgeRunFilter | None = None, after: str | None = None, limit: int = 50
) -> dict[str, Any]:
    now = datetime.now(timezone.utc)
    flt = flt or purge_history.PurgeRunFilter()
    tables = purge_tables()
    if flt.table is not None:
        chosen = tables.get(flt.table)
        if chosen is None:
            abort(400, unknown_table(flt.table, tables))
        flt = replace(flt, table=chosen.history_name)  # the history knows a library's table by schema.table
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        history = panels.load(purge_history.list_purge_runs, flt, after=after, limit=limit)
    except ValueError as exc:
        abort(400, str(exc))
    runs, running, statuses = table_statuses(now, tables)
    # The panels are separate reads: poll fast while any of them shows a run in progress.
    listed = panels.require(history).items if history.ok else []
    in_progress = bool(running.value) or any(r.outcome == "running" for r in listed)
    partitions = partitions_of(
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
        "chosen_table": table_key_of(flt.table, tables),
        "running": running,
        "tables": statuses,
        "poll": POLL_RUNNING if in_progress else POLL_IDLE,
        "partitions": partitions,
        "methods": PURGE_METHOD_WORDS,
    }


def partitions_of(run_ids: list[int]) -> dict[int, list[partitions_queries.PartitionRecord]]:
    """What each of these runs did with partitions (dropped, would drop, kept), by run."""
    found: dict[int, list[partitions_queries.PartitionRecord]] = {}
    panel = panels.load(partitions_queries.list_run_partitions, run_ids) if run_ids else None
    for record in (panel.value or []) if panel is not None else []:
        found.setdefault(record.run_id, []).append(record)
    return found


def unknown_table(table: object, tables: PurgeTables) -> str:
    keys = [repr(k) for k in tables.keys()]  # noqa: SIM118 (PurgeTables has keys(), no __iter__)
    if not keys:
        return (
            f"this database has no table to purge: none of its tables has rows its library counts as finished "
            f"and old (got {table!r})"
        )
    have = keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} or {keys[-1]}"
    return f"table must be one of {have}, the tables this database's purges empty (got {table!r})"


def table_key_of(history_name: str | None, tables: PurgeTables) -> str | None:
    return next((t.table for t in tables.tables if t.history_name == history_name), None)
