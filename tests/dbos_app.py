"""A real DBOS application, run as its own process by tests/test_dbos_profile.py (DBOS is one per process): its
workflows succeed, fail, are cancelled, start children, or crash mid-step, against the test database.

    python tests/dbos_app.py populate|crash|recover

Environment: DBOS_URL (the system database), DBOS_VERSION (application version), DBOS_EXECUTOR (executor id),
STEP_LOG (a file each step appends its name and workflow ID to), DBOS_IDS (crash: the workflow ID; recover: the IDs
to wait for, comma-separated), DBOS_REPLAY (recover: a finished workflow ID to call again).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from dbos import DBOS, DBOSConfig, SetWorkflowID

LOG = os.environ.get("STEP_LOG", os.devnull)


def _log(what: str) -> None:
    with open(LOG, "a", encoding="utf-8") as out:
        out.write(f"{what} {DBOS.workflow_id}\n")


@DBOS.step()
def remember(what: str) -> str:
    _log(what)
    return what.upper()


@DBOS.step()
def slow_step() -> str:
    _log("second")
    if os.environ.get("DBOS_HANG"):  # crash: the test kills the process here, mid-step
        time.sleep(120)
    return "second"


@DBOS.workflow()
def greet(name: str) -> str:
    return remember(name) + "!"


@DBOS.workflow()
def boom(name: str) -> str:
    remember(name)
    raise RuntimeError(f"boom: {name}")


@DBOS.workflow()
def waits() -> str:
    remember("waiting")
    return str(DBOS.recv("go", timeout_seconds=60))


@DBOS.workflow()
def parent(name: str) -> str:
    remember("parent")
    return greet(name + "-child")


@DBOS.workflow()
def two_steps(name: str) -> str:
    first = remember("first")
    return first + slow_step()


def _launch() -> None:
    config: DBOSConfig = {
        "name": "idemdash-test",
        "system_database_url": os.environ["DBOS_URL"],
        "application_version": os.environ.get("DBOS_VERSION", "v1"),
        "executor_id": os.environ.get("DBOS_EXECUTOR", "local"),
        "notification_listener_polling_interval_sec": 0.05,
    }
    DBOS(config=config)
    DBOS.launch()


def populate() -> None:
    for i in range(3):
        with SetWorkflowID(f"ok-{i}"):
            greet(f"n{i}")
    with SetWorkflowID("fails"), contextlib.suppress(RuntimeError):
        boom("x")
    with SetWorkflowID("cancelled"):
        handle = DBOS.start_workflow(waits)
    while not Path(LOG).read_text(encoding="utf-8").count("waiting cancelled"):
        time.sleep(0.05)
    DBOS.cancel_workflow(handle.workflow_id)
    with SetWorkflowID("parent"):
        parent("p")


def crash() -> None:
    with SetWorkflowID(os.environ["DBOS_IDS"]):
        two_steps("c")


def recover() -> None:
    results = {}
    for wid in filter(None, os.environ.get("DBOS_IDS", "").split(",")):
        results[wid] = DBOS.retrieve_workflow(wid).get_result()
    if replay := os.environ.get("DBOS_REPLAY"):
        with SetWorkflowID(replay):
            results[replay] = greet("again")
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    _launch()
    try:
        {"populate": populate, "crash": crash, "recover": recover}[sys.argv[1]]()
    finally:
        DBOS.destroy(workflow_completion_timeout_sec=0)
    os._exit(0)  # the cancelled workflow's thread may still wait in recv: DBOS has recorded everything
