"""Property: a purge of DBOS's workflow_status (the ``dbos`` profile) deletes exactly the workflows DBOS's own rule
lets go, and with each, in the same statement, its rows of the tables that have no foreign key to it.

Hypothesis writes workflows in every status DBOS has (dbos/_sys_db.py's WorkflowStatusString), last updated minutes
on both sides of the cutoff, some the children of others (parent_workflow_id), each with or without steps
(operation_outputs), input and output (workflow_input, workflow_output), into the tables DBOS's own migrations
create (tests/library_ddl.py), and compares what is left with an ORACLE WRITTEN HERE from DBOS's rules, never from
queries/profile_states.sql:

- only terminal workflows go (SUCCESS, ERROR, CANCELLED, MAX_RECOVERY_ATTEMPTS_EXCEEDED): a PENDING, ENQUEUED or
  DELAYED one is still DBOS's to run or recover (dbos/_recovery.py);
- older than the retention and the replay horizon (a workflow ID called again within it returns its record);
- a child goes with its parent (DBOS.delete_workflow(delete_children=True) deletes the workflows a workflow started):
  never one below a workflow that stays;
- _sys_db.py's _delete_workflows deletes workflow_input, workflow_output and operation_outputs with the status row.
"""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idemdash.core import settings as idemdash_settings
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.migrate import migrate
from idemdash.queries.target import Target
from tests import library_ddl as ddl
from tests.test_detect import _create_case

pytestmark = pytest.mark.system

TERMINAL = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
STATUSES = ("PENDING", "ENQUEUED", "DELAYED") + TERMINAL
DAY = 24 * 60  # minutes
# minutes from now - retention: near the cutoff on both sides, and far
offsets = st.one_of(st.integers(2, 12 * 60), st.integers(12 * 60, 20 * DAY)).flatmap(lambda m: st.sampled_from([m, -m]))
workflow = st.fixed_dictionaries(
    {
        "status": st.sampled_from(STATUSES),
        "updated": offsets,
        "parent": st.none() | st.integers(0, 8),
        "steps": st.integers(0, 2),
        "input": st.booleans(),
        "output": st.booleans(),
    }
)
DEPENDENTS = ("operation_outputs", "workflow_input", "workflow_output")


def _oracle(rows: list[dict], cutoff_minutes: int) -> set[str]:
    """The workflows DBOS's rules let go; ``updated`` is minutes from now - retention, the cutoff is where both the
    retention and the replay horizon have passed (minutes from the same point)."""

    def own(i: int) -> bool:
        return rows[i]["status"] in TERMINAL and rows[i]["updated"] < cutoff_minutes

    def goes(i: int) -> bool:
        parent = rows[i]["parent"]
        return own(i) and (parent is None or goes(parent))

    return {f"wf-{i}" for i in range(len(rows)) if goes(i)}


def _write(conn: psycopg.Connection, rows: list[dict], retention_days: int) -> None:
    conn.execute(
        "TRUNCATE dbos.workflow_status, dbos.operation_outputs, dbos.workflow_input, dbos.workflow_output CASCADE"
    )
    now_ms = conn.execute("SELECT (extract(epoch FROM now()) * 1000)::bigint").fetchone()[0]
    base = now_ms - retention_days * DAY * 60_000
    with conn.cursor() as cur:
        for i, row in enumerate(rows):
            at = base + row["updated"] * 60_000
            cur.execute(
                "INSERT INTO dbos.workflow_status (workflow_uuid, status, name, executor_id,"
                " application_version, created_at, updated_at, parent_workflow_id) VALUES"
                " (%s, %s, 'w', 'local', 'v1', %s, %s, %s)",
                (f"wf-{i}", row["status"], at - 60_000, at, None if row["parent"] is None else f"wf-{row['parent']}"),
            )
            for step in range(row["steps"]):
                cur.execute(
                    "INSERT INTO dbos.operation_outputs (workflow_uuid, function_id, function_name)"
                    " VALUES (%s, %s, 's')",
                    (f"wf-{i}", step),
                )
            if row["input"]:
                cur.execute("INSERT INTO dbos.workflow_input (workflow_uuid, inputs) VALUES (%s, '[]')", (f"wf-{i}",))
            if row["output"]:
                cur.execute("INSERT INTO dbos.workflow_output (workflow_uuid, output) VALUES (%s, '1')", (f"wf-{i}",))


def _snapshot(conn: psycopg.Connection) -> dict[str, set[str]]:
    tables = ("workflow_status",) + DEPENDENTS
    return {
        t: {
            f"{w}"
            for (w,) in conn.execute(
                f"SELECT workflow_uuid || coalesce('#' || function_id, '') FROM dbos.{t}"
                if t == "operation_outputs"
                else f"SELECT workflow_uuid FROM dbos.{t}"
            )
        }
        for t in tables
    }


def test_a_dbos_purge_deletes_exactly_what_dbos_lets_go_with_its_steps_input_and_output(empty_database_url):
    url = empty_database_url
    _create_case(url, "dbos", [ddl.DBOS])
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    seen = {"deleted": 0, "kept": 0, "child kept": 0}

    @settings(
        max_examples=15,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        rows=st.lists(workflow, min_size=8, max_size=30),
        batch_size=st.integers(1, 3),
        retention_days=st.sampled_from([1, 3]),
        horizon_hours=st.sampled_from([1, 48, 24 * 5]),
    )
    def check(rows, batch_size, retention_days, horizon_hours):
        rows = [
            {**r, "parent": r["parent"] if r["parent"] is not None and r["parent"] < i else None}
            for i, r in enumerate(rows)
        ]
        # both cutoffs in minutes from now - retention: the earlier one decides
        cutoff = min(0, retention_days * DAY - horizon_hours * 60)
        if any(abs(r["updated"] - cutoff) < 2 for r in rows):
            return  # within a minute of the cutoff: the purge's own seconds could move it across
        with psycopg.connect(url, autocommit=True) as conn:
            _write(conn, rows, retention_days)
            before = _snapshot(conn)
        goes = _oracle(rows, cutoff)
        config = idemdash_settings.load(
            {},
            DATABASE_URL=url,
            PROFILE="dbos",
            PURGE_BATCH_SIZE=batch_size,
            PURGE_PAUSE_MS=0,
            INBOX_RETENTION_DAYS=retention_days,
            REPLAY_HORIZON=horizon_hours * 3600,
        )
        target = Target.from_settings(config)
        [dry] = run_library_purges(target, dry_run=True, started_by="property")
        with psycopg.connect(url) as conn:
            assert _snapshot(conn) == before
        [run] = run_library_purges(target, dry_run=False, started_by="property")
        assert (run.outcome, run.rows, run.error) == ("succeeded", len(goes), None)
        assert (dry.outcome, dry.rows) == ("succeeded", len(goes))
        with psycopg.connect(url) as conn:
            after = _snapshot(conn)
        assert after["workflow_status"] == before["workflow_status"] - goes
        for table in DEPENDENTS:
            assert after[table] == {r for r in before[table] if r.split("#")[0] not in goes}, table
        seen["deleted"] += len(goes)
        seen["kept"] += len(after["workflow_status"])
        seen["child kept"] += sum(
            1
            for i, r in enumerate(rows)
            if r["parent"] is not None and f"wf-{i}" not in goes and r["status"] in TERMINAL and r["updated"] < cutoff
        )

    check()
    assert seen["deleted"] and seen["kept"] and seen["child kept"], seen
