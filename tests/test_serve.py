"""Real gunicorn processes: `idemdash serve` shares one secret among its workers and counts repeated
identity headers; a gunicorn started by hand without a secret refuses to start."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import psutil
import pytest
from bs4 import BeautifulSoup

from tests.waiting import wait_until

pytestmark = pytest.mark.system  # see docs/development.md, Tests

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent  # the checkout under test, whatever the current directory


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(database_url: str, home: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDEMDASH_") and k != "SERVER_SOFTWARE"}
    env["HOME"] = str(home)  # gunicorn may put a control socket under ~/.gunicorn
    env["IDEMDASH_DATABASE_URL"] = database_url
    env.update({f"IDEMDASH_{k}": v for k, v in settings.items()})
    return env


def _request(
    port: int, method: str, path: str, *, body: str | None = None, headers: list[tuple[str, str]] = ()
) -> tuple[int, dict[str, str], str]:
    """One request on a fresh connection (so gunicorn may hand it to any worker); headers may repeat."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        connection.putrequest(method, path)
        for name, value in headers:
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body.encode())))
        connection.endheaders(body.encode() if body is not None else None)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def _answers(port: int) -> bool:
    try:
        return _request(port, "GET", "/healthz")[0] == 200
    except OSError:
        return False


@contextmanager
def _running(args: list[str], env: dict[str, str], log: Path, port: int):
    """Start a server process, wait until it answers /healthz, and always stop it."""
    with log.open("wb") as out:
        process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        wait_until(lambda: process.poll() is not None or _answers(port), timeout=30, what="the server to answer")
        assert process.poll() is None, log.read_text()
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _children(pid: int) -> list[int]:
    return [child.pid for child in psutil.Process(pid).children()]


def _written_bytes(pid: int) -> int:
    """What a worker wrote with write(2): its access-log lines (an idle worker writes nothing)."""
    return psutil.Process(pid).io_counters().write_chars


def test_serve_without_a_secret_shares_one_key_among_its_workers(database_url, tmp_path):
    port = _free_port()
    log = tmp_path / "serve.log"
    args = [sys.executable, "-m", "idemdash", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "2"]
    with _running(args, _env(database_url, tmp_path), log, port) as server:
        workers = wait_until(lambda: pids if len(pids := _children(server.pid)) == 2 else None, what="two workers")
        status, headers, page = _request(port, "GET", "/purges")
        assert status == 200, page[:300]
        cookie = headers["Set-Cookie"].split(";", 1)[0]
        form = next(
            f
            for f in BeautifulSoup(page, "html.parser").select('form[action="/purges/run"]')
            if f.select_one('input[name="dry_run"]')["value"] == "1"
        )
        fields = {i["name"]: i["value"] for i in form.select("input[type=hidden]")}
        assert fields["csrf_token"] and fields["table"]

        def finished() -> bool:
            code, _, body = _request(port, "GET", "/api/v1/purges", headers=[("Cookie", cookie)])
            return code == 200 and json.loads(body)["running"] == []

        written = {pid: _written_bytes(pid) for pid in workers}
        for attempt in range(20):
            status, _, text = _request(
                port,
                "POST",
                "/purges/run",
                body=urlencode(fields),
                headers=[("Cookie", cookie), ("Content-Type", "application/x-www-form-urlencoded")],
            )
            # 303: started; 400 would be the token refused by a worker with a key of its own
            assert status == 303, (attempt, status, text[:500])
            wait_until(finished, what="the dry run to finish")  # else the next one is skipped as concurrent
        # both workers answered some of these requests (each wrote access-log lines)
        assert all(_written_bytes(pid) > written[pid] for pid in workers), written
    output = log.read_text()
    assert output.count("IDEMDASH_SECRET_KEY is not set: made one key for all 2 workers") == 1, output
    assert "end when the server restarts" in output
    assert "using a random key for this process only" not in output


@pytest.mark.parametrize("options", [["-w", "2"], ["-w", "1"]])
def test_a_hand_started_gunicorn_without_a_secret_refuses_to_start(database_url, tmp_path, options):
    # one worker too: gunicorn replaces a worker (a timeout, --max-requests), and the new one would make a new key
    port = _free_port()
    started = time.monotonic()
    result = subprocess.run(
        [str(BIN / "gunicorn"), *options, "-b", f"127.0.0.1:{port}", "idemdash.dashboard:create_app()"],
        env=_env(database_url, tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    output = result.stdout + result.stderr
    # gunicorn's "App failed to load" (4); with two workers refused at once, gunicorn's arbiter may reap the second
    # while halting on the first and end on its own traceback (1): either way it never serves
    assert result.returncode in (1, 4) and "App failed to load" in output, output
    assert time.monotonic() - started < 15
    # the refusal is one line of ours (once for each worker that got to it), never a traceback through idemdash
    assert "IDEMDASH_SECRET_KEY is not set, and under gunicorn each worker builds its own app" in output, output
    assert "dashboard/__init__.py" not in output, output


def test_a_hand_started_gunicorn_with_a_secret_starts(database_url, tmp_path):
    port = _free_port()
    log = tmp_path / "gunicorn.log"
    args = [str(BIN / "gunicorn"), "-w", "2", "-b", f"127.0.0.1:{port}", "idemdash.dashboard:create_app()"]
    with _running(args, _env(database_url, tmp_path, SECRET_KEY="hand-started"), log, port):
        status, _, body = _request(port, "GET", "/api/v1/overview")
        assert status == 200, body[:300]
    output = log.read_text()
    assert "IDEMDASH_SECRET_KEY is not set" not in output and "random key" not in output, output


def test_serve_refuses_identity_headers_sent_twice(database_url, tmp_path):
    port = _free_port()
    log = tmp_path / "serve.log"
    args = [sys.executable, "-m", "idemdash", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    operator = [("X-Forwarded-User", "alice@example.com"), ("X-Forwarded-Groups", "sre")]
    with _running(args, _env(database_url, tmp_path, AUTH="proxy", SECRET_KEY="s3cret"), log, port):
        # the client's line, then the proxy's: gunicorn would join them into "idemdash-operators,sre"
        status, _, body = _request(
            port, "GET", "/api/v1/audit", headers=[("X-Forwarded-Groups", "idemdash-operators"), *operator]
        )
        assert status == 400 and "send exactly one X-Forwarded-Groups header" in json.loads(body)["error"]
        status, _, body = _request(port, "GET", "/audit", headers=[("X-Forwarded-User", "mallory"), *operator])
        assert status == 400 and "send exactly one X-Forwarded-User header" in body
        # one line each, with a comma-separated list, is what the proxy should send
        status, _, body = _request(
            port,
            "GET",
            "/api/v1/audit",
            headers=[("X-Forwarded-User", "alice@example.com"), ("X-Forwarded-Groups", "sre,idemdash-operators")],
        )
        assert status == 200, body[:300]
        # the note is the server's alone: a copy the client sent is dropped
        status, _, body = _request(
            port, "GET", "/api/v1/audit", headers=[*operator, ("X-Idemdash-Repeated-Headers", "X-FORWARDED-GROUPS")]
        )
        assert status == 200, body[:300]


def test_serve_takes_the_longest_urls_the_api_document_allows(database_url, tmp_path):
    """gunicorn's own request-line limit (4,094 bytes by default) answered 414 to URLs the document allows: a cursor
    of 8,192 characters, a key of thousands; and a TRACE with such a URL 414 instead of 405."""
    port = _free_port()
    args = [sys.executable, "-m", "idemdash", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    with _running(args, _env(database_url, tmp_path, AUTH="none"), tmp_path / "serve.log", port):
        status, _, body = _request(port, "GET", "/api/v1/keys?cursor=" + "A" * 8192)
        assert status == 400 and "cursor" in json.loads(body)["error"]  # the app's answer: not a cursor it made
        status, _, body = _request(port, "GET", "/api/v1/key?" + urlencode({"scope": "refund", "key": "k" * 20_000}))
        assert status == 404 and "no key" in json.loads(body)["error"], body[:300]
        status, _, _ = _request(port, "TRACE", "/api/v1/keys?cursor=" + "A" * 8192)
        assert status == 405
