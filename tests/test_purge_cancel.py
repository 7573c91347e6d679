"""A running purge can be cancelled: from the API or the page (the run reads the request between batches) and by
Ctrl-C on `idemdash purge`. It stops after the batch in flight, is recorded as cancelled with who asked, and what
it had not reached goes at the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.jobs.purge_run import run_purge
from tests.test_purges import add_expired, make_target

ROOT = Path(__file__).resolve().parent.parent
DUE = 500_000


def run_row(conn, run_id: int) -> dict:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM idemdash.purge_run WHERE run_id = %s", (run_id,)).fetchone()


def keys_left(conn) -> int:
    return conn.execute("SELECT count(*) FROM app.idempotency_request").fetchone()[0]


def wait_for_progress(conn, timeout: float = 30) -> int:
    """The running keys run once it has committed a batch: its run_id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT run_id FROM idemdash.purge_run WHERE outcome = 'running' AND rows_deleted > 0"
        ).fetchone()
        if row:
            return row[0]
        time.sleep(0.05)
    raise AssertionError("no purge run made progress")


@pytest.mark.system
def test_cancelling_a_purge_of_500000_due_keys_stops_it_within_5_seconds(conn, database_url, make_app):
    add_expired(conn, DUE)
    results = []
    purge = threading.Thread(
        target=lambda: results.append(
            run_purge(make_target(database_url, PURGE_PAUSE_MS=5), "keys", dry_run=False, started_by="scheduler")
        )
    )
    purge.start()
    try:
        run_id = wait_for_progress(conn)
        client = make_app(database_url).test_client()
        asked_at = time.monotonic()
        answer = client.post(f"/api/v1/purges/{run_id}/cancel", json={"reason": "INC-8: commit latency doubled"})
        assert answer.status_code == 202, answer.get_json()
        assert answer.get_json()["cancel_requested_by"].startswith("anonymous@")
        purge.join(30)
        stopped_after = time.monotonic() - asked_at
    finally:
        purge.join(60)
    assert stopped_after <= 5, f"the run took {stopped_after:.1f} s to stop"
    [result] = results
    row = run_row(conn, run_id)
    assert result.outcome == row["outcome"] == "cancelled"
    assert row["cancel_requested_by"].startswith("anonymous@") and "cancelled by anonymous@" in row["error"]
    left = keys_left(conn)
    assert 0 < left < DUE and row["rows_deleted"] == DUE - left
    [audited] = conn.execute(
        "SELECT action, reason FROM idemdash.audit_log WHERE action LIKE 'purge-cancel:%'"
    ).fetchall()
    assert audited == ("purge-cancel:keys", "INC-8: commit latency doubled")
    # what is left goes at the next run
    again = run_purge(make_target(database_url), "keys", dry_run=False, started_by="scheduler")
    assert again.outcome == "succeeded" and again.rows == left and keys_left(conn) == 0


def test_a_run_that_is_not_running_cannot_be_cancelled(client, conn, database_url):
    add_expired(conn, 3)
    done = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    finished = client.post(f"/api/v1/purges/{done.run_id}/cancel", json={})
    assert finished.status_code == 409 and "ended succeeded" in finished.get_json()["error"]
    assert client.post("/api/v1/purges/999999/cancel", json={}).status_code == 404
    unknown = client.post(f"/api/v1/purges/{done.run_id}/cancel", json={"force": True})
    assert unknown.status_code == 400 and "force is not a field of this request" in unknown.get_json()["error"]
    assert run_row(conn, done.run_id)["cancel_requested_by"] is None


def test_the_page_offers_cancel_beside_a_running_run_and_then_says_it_is_cancelling(client, conn):
    # a run some scheduler is running right now (its row, as the runner writes it)
    run_id = conn.execute(
        "INSERT INTO idemdash.purge_run (table_name, started_by, batches, rows_deleted, dry_run) "
        "VALUES ('keys', 'scheduler', 4, 4000, false) RETURNING run_id"
    ).fetchone()[0]
    page = BeautifulSoup(client.get("/purges").data, "html.parser")
    form = page.select_one(f'[data-running-run="{run_id}"] form.cancel')
    assert form is not None and form["action"] == f"/purges/{run_id}/cancel"
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    assert client.post(form["action"], data=fields).status_code == 303
    assert run_row(conn, run_id)["cancel_requested_by"].startswith("anonymous@")
    page = BeautifulSoup(client.get("/purges").data, "html.parser")
    running = page.select_one(f'[data-running-run="{run_id}"]')
    assert running.select_one("[data-cancelling]") is not None and running.select_one("form.cancel") is None
    assert client.get(f"/api/v1/purges?run_id={run_id}").get_json()["items"][0]["cancel_requested_by"]


@pytest.mark.system
def test_ctrl_c_on_idemdash_purge_cancels_after_the_current_batch(conn, database_url):
    add_expired(conn, DUE)
    env = {**os.environ, "IDEMDASH_PURGE_PAUSE_MS": "5"}
    child = subprocess.Popen(
        [sys.executable, "-m", "idemdash", "purge", "--table", "keys", "--database-url", database_url],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        run_id = wait_for_progress(conn)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, err
    assert "stopping after the current batch" in err
    row = run_row(conn, run_id)
    assert row["outcome"] == "cancelled" and "(Ctrl-C)" in row["error"] and row["error"].startswith("cancelled by cli")
    assert "cancelled" in out
    assert 0 < keys_left(conn) < DUE


def _small_batches(database_url: str, **overrides):
    """Batches of 100 rows in due order (most rows are not due), a pause of 0.2-0.6 s after each, no probing."""
    return make_target(database_url, PURGE_BATCH_SIZE=100, PURGE_LATENCY_BUDGET=0.0, **overrides)


@pytest.mark.system  # pauses of 0.2-0.6 s between batches
def test_a_cancel_that_arrives_between_batches_stops_the_run_before_the_next_one(conn, database_url, make_app):
    add_expired(conn, 1000)
    add_expired(conn, 1500, scope="live", status="processing")  # never due: the batches go in due order
    client = make_app(database_url).test_client()
    committed: list[tuple[int, int]] = []  # (batches, rows) after each committed batch
    asked: dict = {}

    def cancel_in_the_pause(run_id: int) -> None:
        time.sleep(0.1)  # the run is pausing after its second batch (0.2 s at least)
        answer = client.post(f"/api/v1/purges/{run_id}/cancel", json={"reason": "INC-9: replica lag"})
        asked.update(answer.get_json(), status=answer.status_code, batches_then=committed[-1])

    def on_batch(batches: int, rows: int) -> None:
        committed.append((batches, rows))
        if batches == 2:
            threading.Thread(target=cancel_in_the_pause, args=(run_ids[0],)).start()

    run_ids: list[int] = []
    result = run_purge(
        _small_batches(database_url, PURGE_PAUSE_MS=400),
        "keys",
        dry_run=False,
        started_by="scheduler",
        on_start=run_ids.append,
        on_batch=on_batch,
    )
    assert asked["status"] == 202, asked
    assert asked["batches_then"] == (2, 200)  # the cancel came in the pause after the second batch
    row = run_row(conn, result.run_id)
    assert result.outcome == row["outcome"] == "cancelled"
    # no batch after the cancel: the history's numbers are what had been deleted when it came, and are what went
    assert committed == [(1, 100), (2, 200)] and (row["batches"], row["rows_deleted"]) == (2, 200)
    assert (result.batches, result.rows) == (2, 200) and keys_left(conn) == 2500 - 200
    assert row["error"].startswith("cancelled by anonymous@") and "after 2 batches and 200 rows" in row["error"]
    assert row["cancel_requested_by"].startswith("anonymous@")


def test_a_cancel_that_arrives_once_no_batch_is_left_is_said_in_the_history(conn, database_url, make_app):
    add_expired(conn, 150)
    add_expired(conn, 400, scope="live", status="processing")
    client = make_app(database_url).test_client()
    run_ids: list[int] = []
    answers: list[int] = []

    def on_batch(batches: int, rows: int) -> None:
        if batches == 2:  # the last batch (50 rows of 100) has committed: the run has nothing left to stop
            answers.append(client.post(f"/api/v1/purges/{run_ids[0]}/cancel", json={}).status_code)

    result = run_purge(
        _small_batches(database_url),
        "keys",
        dry_run=False,
        started_by="scheduler",
        on_start=run_ids.append,
        on_batch=on_batch,
    )
    assert answers == [202]
    row = run_row(conn, result.run_id)
    assert row["outcome"] == "succeeded" and (row["batches"], row["rows_deleted"]) == (2, 150)
    assert row["error"].startswith("the cancel asked by anonymous@") and "came after the last batch" in row["error"]
    item = client.get(f"/api/v1/purges?run_id={result.run_id}").get_json()["items"][0]
    assert item["outcome"] == "succeeded" and "came after the last batch" in item["error"]
    page = BeautifulSoup(client.get("/purges").data, "html.parser")
    assert "came after the last batch" in page.select_one(f'tr[data-run-id="{result.run_id}"]').get_text()
