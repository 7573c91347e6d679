"""`idemdash demo --profile dbos` runs a real DBOS application (workload/dbos_app.py, one executor process at a time,
workload/dbos_demo.py): DBOS creates its own tables, an older version's executor leaves workflows PENDING inside a
step, the current version's executors run orders step by step and are killed mid-step now and then; what they leave
reads as stuck on /tables, with the executor's name; stopping the demo stops the executor."""

from __future__ import annotations

import time

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli.workload import demo
from idemdash.workload import dbos_demo
from idemdash.workload.library_demo import set_up, workload

LIVE = "workflow_uuid NOT LIKE 'wf-%%'"  # the history's workflows are wf-1, wf-2, ...; DBOS names its own


def _live_counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute(f"SELECT status, count(*) FROM dbos.workflow_status WHERE {LIVE} GROUP BY 1"))


def _checkouts_succeeded(url: str) -> int:
    """The orders finished (what the test counts below; refunds and reports succeed too)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM dbos.workflow_status WHERE {LIVE} AND name = 'checkout' AND status = 'SUCCESS'"
        ).fetchone()
        return int(row[0]) if row else 0


def test_without_dbos_the_dbos_demo_says_how_to_install_it_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(dbos_demo, "available", lambda: False)
    result = CliRunner().invoke(demo, ["--profile", "dbos", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "pip install 'idemdash[demo]'" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "PG_VERSION").exists()  # nothing started


@pytest.mark.system
def test_the_dbos_demo_runs_dbos_and_its_killed_executors_leave_stuck_workflows(make_app, empty_database_url):
    url = empty_database_url
    schema = set_up(url, "dbos", backfill_days=10)
    with psycopg.connect(url) as conn:
        # DBOS's own migrations made the tables (its migration record is there), and the older version's executor
        # left its orders PENDING inside their second step: the first step recorded by DBOS, the second never
        assert conn.execute("SELECT count(*) FROM dbos.dbos_migrations").fetchone()[0] == 1
        leftovers = conn.execute(
            f"SELECT workflow_uuid, executor_id FROM dbos.workflow_status WHERE {LIVE} AND application_version = 'v1'"
            " AND status = 'PENDING'"
        ).fetchall()
        assert len(leftovers) == 3
        steps = conn.execute(
            "SELECT function_name, count(*) FROM dbos.operation_outputs WHERE workflow_uuid = ANY(%s) GROUP BY 1",
            ([w for w, _ in leftovers],),
        ).fetchall()
        assert steps == [("reserve_stock", 3)]
    client = make_app(url, PROFILE="dbos", APP_SCHEMA=schema, DEFAULT_LEASE_SECONDS=1).test_client()
    old = client.get("/api/v1/tables/keys/row", query_string={"id": f'["{leftovers[0][0]}"]'}).get_json()
    why = {f["label"]: f["text"] for f in old["facts"]}
    assert why["Why it is stuck"].startswith("application version 'v1' is no longer the latest ('v2')")
    assert why["Last completed step"].startswith("reserve_stock (step 1), completed ")

    live = workload(url, "dbos", schema)
    assert isinstance(live, dbos_demo.DbosWorkload)
    live.crash_every = 4.0
    live.start()
    try:  # until an executor was killed with workflows under way and orders finished (slower on a loaded machine)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            counts = _live_counts(url)
            under_way = counts.get("ERROR", 0) + counts.get("PENDING", 0)
            if live.killed and under_way and _checkouts_succeeded(url) >= 10:
                with psycopg.connect(url) as conn:
                    orphaned = conn.execute(
                        f"SELECT workflow_uuid, executor_id FROM dbos.workflow_status WHERE {LIVE} AND status = "
                        "'PENDING' AND executor_id = ANY(%s) AND application_version = 'v2'",
                        (live.killed,),
                    ).fetchall()
                if orphaned:
                    break
            time.sleep(0.5)
        else:
            pytest.fail(f"no killed executor left PENDING work: {live.executors} {live.killed} {counts}")
    finally:
        live.stop()
    assert not live.is_alive() and live._proc is not None and live._proc.poll() is not None
    assert len(live.executors) == len(live.killed) + 1 and len(set(live.executors)) == len(live.executors)

    with psycopg.connect(url) as conn:
        # every finished order ran DBOS's three steps, recorded in operation_outputs by DBOS
        finished = conn.execute(
            f"SELECT count(*) FILTER (WHERE n = 3), count(*) FROM (SELECT s.workflow_uuid, count(o.function_id) AS n"
            f" FROM dbos.workflow_status s JOIN dbos.operation_outputs o USING (workflow_uuid)"
            f" WHERE s.{LIVE} AND s.name = 'checkout' AND s.status = 'SUCCESS' GROUP BY 1) AS w"
        ).fetchone()
        assert finished[0] == finished[1] >= 10
    time.sleep(1.2)  # past DEFAULT_LEASE_SECONDS: the killed executor is silent
    stuck = {
        i["row"]["workflow_uuid"]
        for i in client.get("/api/v1/tables/keys", query_string={"state": "stuck", "limit": 500}).get_json()["items"]
    }
    assert {w for w, _ in orphaned} | {w for w, _ in leftovers} <= stuck
    workflow, executor = orphaned[0]
    row = client.get("/api/v1/tables/keys/row", query_string={"id": f'["{workflow}"]'}).get_json()
    assert {f["label"]: f["text"] for f in row["facts"]}["Why it is stuck"].startswith(
        f"executor '{executor}' silent since "
    )
    tables = client.get("/api/v1/tables").get_json()["tables"]
    keys = {s["meaning"]: s["count"] for t in tables if t["role"] == "keys" for s in t["states"]}
    assert keys["done"] >= _live_counts(url)["SUCCESS"] and keys["stuck"] >= len(stuck) > 0
