"""The ``dbos`` profile against DBOS itself: a real DBOS application (tests/dbos_app.py, its own process each time)
fills the test database through DBOS's own migrations and workflows, succeeding, failing, cancelled, waiting in a
queue, and left PENDING by a process killed mid-step (SIGKILL) under an application version since deployed away and
under the current one. idemdash's counts equal DBOS's own ``list_workflows``; an idemdash purge deletes only
terminal, old workflows (a child only with its parent) with their steps, inputs and outputs in the same statement;
then DBOS, launched again, recovers and finishes its PENDING workflows and replays a retained workflow ID from its
record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dbos
import psycopg
import pytest

from idemdash.core import settings as idemdash_settings
from idemdash.core.profiles.detect import detect
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.catalog import find_configured
from idemdash.queries.migrate import migrate
from idemdash.queries.profile_states import count_configured_states
from idemdash.queries.target import Target

APP = Path(__file__).with_name("dbos_app.py")
DAY_MS = 86_400_000
# DBOS's own meaning of each idemdash state of workflow_status (the mapping)
DBOS_STATUSES = {
    "pending": ["ENQUEUED", "DELAYED"],
    "in progress": ["PENDING"],
    "done": ["SUCCESS"],
    "failed": ["ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"],
}
ORPHANS = """
SELECT 'operation_outputs', workflow_uuid FROM dbos.operation_outputs o
 WHERE NOT EXISTS (SELECT 1 FROM dbos.workflow_status s WHERE s.workflow_uuid = o.workflow_uuid)
UNION ALL SELECT 'workflow_input', workflow_uuid FROM dbos.workflow_input i
 WHERE NOT EXISTS (SELECT 1 FROM dbos.workflow_status s WHERE s.workflow_uuid = i.workflow_uuid)
UNION ALL SELECT 'workflow_output', workflow_uuid FROM dbos.workflow_output w
 WHERE NOT EXISTS (SELECT 1 FROM dbos.workflow_status s WHERE s.workflow_uuid = w.workflow_uuid)
"""


def _sqlalchemy_url(dsn: str) -> str:
    """The test database's libpq conninfo as the URL DBOS takes (SQLAlchemy's; a socket directory as ``host``)."""
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import URL

    params = conninfo_to_dict(dsn)
    query = {k: str(params[k]) for k in ("host", "port") if k in params}
    return URL.create(
        "postgresql",
        username=params.get("user"),
        password=params.get("password"),
        database=params.get("dbname"),
        query=query,
    ).render_as_string(hide_password=False)


def _env(url: str, log: Path, version: str, executor: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DBOS", "IDEMDASH"))}
    return {
        **env,
        "DBOS_URL": _sqlalchemy_url(url),
        "STEP_LOG": str(log),
        "DBOS_VERSION": version,
        "DBOS_EXECUTOR": executor,
        **extra,
    }


def _run(url: str, log: Path, mode: str, version: str, executor: str, **extra: str) -> str:
    errors = log.with_name(f"{mode}.err")
    with errors.open("w") as err:
        try:
            done = subprocess.run(
                [sys.executable, str(APP), mode],
                env=_env(url, log, version, executor, **extra),
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                timeout=40,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"DBOS {mode} did not finish: {errors.read_text()[-3000:]}")
    assert done.returncode == 0, errors.read_text()[-3000:]
    return done.stdout


def _crash(url: str, log: Path, workflow_id: str, version: str, executor: str) -> None:
    """A process killed (SIGKILL) inside the second step of ``workflow_id``, its first step recorded."""
    errors = log.with_name(f"crash-{workflow_id}.err")
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(APP), "crash"],
            env=_env(url, log, version, executor, DBOS_IDS=workflow_id, DBOS_HANG="1"),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 30
        while f"second {workflow_id}" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None, errors.read_text()[-3000:]
            assert time.monotonic() < deadline, "the crash workflow never reached its second step"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


def _settings(url: str, **extra):
    return idemdash_settings.load(
        {},
        DATABASE_URL=url,
        PROFILE="dbos",
        APP_SCHEMA="dbos",
        PURGE_PAUSE_MS=0,
        INBOX_RETENTION_DAYS=30,
        DEFAULT_LEASE_SECONDS=1,
        **extra,
    )


def _idemdash_counts(url: str, settings) -> dict[str, int | None]:
    with psycopg.connect(url) as conn:
        found = find_configured(conn, settings)
        return {
            state.meaning: count
            for state, count in count_configured_states(conn, found, settings)
            if state.table == "keys"
        }


def _dbos_counts(url: str) -> dict[str, int]:
    client = dbos.DBOSClient(system_database_url=_sqlalchemy_url(url))
    try:
        listed = client.list_workflows(load_input=False, load_output=False)
    finally:
        client.destroy()
    return {meaning: sum(1 for w in listed if w.status in statuses) for meaning, statuses in DBOS_STATUSES.items()}


def _ids(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {w for (w,) in conn.execute("SELECT workflow_uuid FROM dbos.workflow_status")}


def _age(url: str, ids: list[str], days: int) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(
            "UPDATE dbos.workflow_status SET created_at = created_at - %(ms)s, updated_at = updated_at - "
            "%(ms)s WHERE workflow_uuid = ANY(%(ids)s)",
            {"ms": days * DAY_MS, "ids": ids},
        )


def _pages_tell_why_and_what_to_run(client) -> None:
    """The row pages of the two stuck workflows say why each is stuck, their last completed step and DBOS's own
    commands; /metrics and /health read the profile like any other."""
    old = client.get("/api/v1/tables/keys/row", query_string={"id": '["crash-old"]'}).get_json()
    facts = {f["label"]: f["text"] for f in old["facts"]}
    assert facts["Why it is stuck"].startswith("application version 'v1' is no longer the latest ('v2')")
    assert facts["Last completed step"].startswith("remember (step 1), completed ")
    assert [c["command"] for c in old["commands"]] == [
        f'dbos workflow {verb} crash-old -s "$DBOS_SYSTEM_DATABASE_URL" --schema dbos' for verb in ("resume", "cancel")
    ]
    new = client.get("/api/v1/tables/keys/row", query_string={"id": '["crash-new"]'}).get_json()
    why = {f["label"]: f["text"] for f in new["facts"]}["Why it is stuck"]
    assert why.startswith("executor 'executor-2' silent since ")
    done = client.get("/api/v1/tables/keys/row", query_string={"id": '["ok-2"]'}).get_json()
    assert [f["label"] for f in done["facts"]] == ["Last completed step"] and done["commands"] == []
    page = client.get("/tables/keys/row", query_string={"id": '["crash-old"]'}).get_data(as_text=True)
    assert "no longer the latest" in page and "dbos workflow resume crash-old" in page
    metrics = client.get("/metrics").get_data(as_text=True)
    for state, count in (("stuck", 2), ("in progress", 2), ("pending", 2), ("done", 5), ("failed", 2)):
        assert (
            f'idemdash_profile_rows{{database="default",profile="dbos",role="keys",state="{state}",'
            f'table="workflow_status"}} {count}.0'
        ) in metrics
    # the names every profile shares: DBOS keeps no outbox, so no outbox series
    assert 'idemdash_stuck{database="default",profile="dbos"} 2.0' in metrics
    assert 'idemdash_in_progress{database="default",profile="dbos"} 2.0' in metrics
    assert 'idemdash_outbox_pending{database="default"' not in metrics
    assert 'idemdash_outbox_lag_seconds{database="default"' not in metrics
    health = {i["id"]: i for i in client.get("/api/v1/health/schema").get_json()["items"]}
    assert health["profile.tables"]["status"] == "ok", health["profile.tables"]


@pytest.mark.system
def test_dbos_itself_counts_purge_and_recovery(empty_database_url, tmp_path, make_app):
    url, log = empty_database_url, tmp_path / "steps.log"
    _run(url, log, "populate", "v1", "executor-1")
    client = dbos.DBOSClient(system_database_url=_sqlalchemy_url(url))
    try:
        for i in range(2):
            client.enqueue(
                {"workflow_name": "greet", "queue_name": "nobody-serves-it", "workflow_id": f"queued-{i}"}, f"q{i}"
            )
    finally:
        client.destroy()
    _crash(url, log, "crash-old", "v1", "executor-1")  # its version is deployed away just below
    _crash(url, log, "crash-new", "v2", "executor-2")  # the current version, its executor gone
    time.sleep(1.2)  # past DEFAULT_LEASE_SECONDS=1: executor-2 is silent
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        [child] = [
            c
            for (c,) in conn.execute(
                "SELECT workflow_uuid FROM dbos.workflow_status WHERE parent_workflow_id = 'parent'"
            )
        ]
        catalog = conn.execute(
            "SELECT table_schema, table_name, column_name, data_type FROM "
            "information_schema.columns WHERE table_schema = 'dbos'"
        ).fetchall()
    assert [f.profile for f in detect(catalog)] == ["dbos"]

    settings = _settings(url)
    counts, theirs = _idemdash_counts(url, settings), _dbos_counts(url)
    assert theirs == {"pending": 2, "in progress": 2, "done": 5, "failed": 2}
    assert {m: counts[m] for m in DBOS_STATUSES} == theirs
    assert counts["stuck"] == 2 and counts["purgeable"] == 0

    _pages_tell_why_and_what_to_run(
        make_app(url, PROFILE="dbos", APP_SCHEMA="dbos", DEFAULT_LEASE_SECONDS=1).test_client()
    )

    # old: two successes, the failure, the cancellation, the child (not its parent), and every unfinished workflow
    _age(url, ["ok-0", "ok-1", "fails", "cancelled", child, "queued-0", "crash-old", "crash-new"], 40)
    before = _ids(url)
    target = Target.from_settings(settings)
    [run] = run_library_purges(target, dry_run=False, started_by="test")
    assert (run.outcome, run.rows) == ("succeeded", 4), run.error
    assert before - _ids(url) == {"ok-0", "ok-1", "fails", "cancelled"}
    with psycopg.connect(url) as conn:
        assert conn.execute(ORPHANS).fetchall() == []
        # operation_outputs has no foreign key in DBOS 3.4: the purge itself deleted the steps, no cascade did
        assert conn.execute(
            "SELECT count(*) FROM pg_constraint WHERE conrelid = 'dbos.operation_outputs'::regclass AND contype = 'f'"
        ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid = 'ok-2'").fetchone() == (
            1,
        )
    _age(url, ["parent"], 40)  # now the child follows its parent
    [again] = run_library_purges(target, dry_run=False, started_by="test")
    assert (again.outcome, again.rows) == ("succeeded", 2), again.error
    assert before - _ids(url) == {"ok-0", "ok-1", "fails", "cancelled", "parent", child}
    assert {"queued-0", "queued-1", "crash-old", "crash-new", "ok-2"} <= _ids(url)

    # DBOS launched again recovers its own PENDING workflows and replays a retained ID from its record
    out = json.loads(
        _run(url, log, "recover", "v2", "executor-2", DBOS_IDS="crash-new", DBOS_REPLAY="ok-2").strip().splitlines()[-1]
    )
    assert out == {"crash-new": "FIRSTsecond", "ok-2": "N2!"}
    out = json.loads(_run(url, log, "recover", "v1", "executor-1", DBOS_IDS="crash-old").strip().splitlines()[-1])
    assert out == {"crash-old": "FIRSTsecond"}
    steps = log.read_text().splitlines()
    assert steps.count("first crash-new") == 1 and steps.count("second crash-new") == 2
    assert steps.count("first crash-old") == 1 and steps.count("second crash-old") == 2
    assert steps.count("n2 ok-2") == 1 and not any(s.startswith("again") for s in steps)
    with psycopg.connect(url) as conn:
        assert conn.execute(ORPHANS).fetchall() == []
    counts = _idemdash_counts(url, _settings(url))
    assert (
        {m: counts[m] for m in DBOS_STATUSES}
        == _dbos_counts(url)
        == {"pending": 2, "in progress": 0, "done": 3, "failed": 0}
    )
    assert counts["stuck"] == 0
