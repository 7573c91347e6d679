"""`idemdash demo` as a new user runs it: up, numbers within 60 s, Ctrl-C leaves no PostgreSQL behind."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.system  # see the Tests section of the README

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
    demo = subprocess.Popen([sys.executable, "-m", "idemdash", "demo", "--port", str(port), "--rate", "20"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
    database = next(line.split(":", 1)[1].strip() for line in output.splitlines() if line.strip().startswith("database:"))
    assert database.startswith("postgresql://") and "idemdash_demo" in database
    assert any(line.strip().startswith("psql:") and f"psql '{database}'" in line for line in output.splitlines())
    assert "embedded PostgreSQL shut down" in output
    time.sleep(0.5)
    assert _postgres_processes(data_dir) == []


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "idemdash", "demo", "--port", str(port)], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert f"idemdash demo --port {port + 1}" in result.stderr
    assert "Traceback" not in result.stderr
    # nothing was started: no PostgreSQL data directory, no backfill
    assert not (tmp_path / "data" / "idemdash" / "demo-pgdata").exists()
    assert "starting embedded PostgreSQL" not in result.stdout
    assert time.monotonic() - started < 30
