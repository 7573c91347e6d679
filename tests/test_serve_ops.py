"""`idemdash serve` as operators run it: it refuses to start on a database it cannot use (one line, no traceback),
starts and says so once when the database is merely down, and its /metrics add up across workers."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.test_databases import write_config
from tests.test_serve import ROOT, _children, _env, _free_port, _request, _running, _written_bytes
from tests.waiting import wait_until

pytestmark = pytest.mark.system  # see docs/development.md, Tests


def _serve(port: int, workers: int = 1) -> list[str]:
    return [sys.executable, "-m", "idemdash", "serve", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]


def test_serve_refuses_a_database_it_cannot_use_in_one_line(pg_server_dsn, tmp_path):
    params = conninfo_to_dict(pg_server_dsn)
    params["dbname"] = "no_such_orders"
    result = subprocess.run(
        _serve(_free_port()),
        env=_env(make_conninfo(**params), tmp_path),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [line for line in result.stderr.splitlines() if line.strip()], result.stderr
    assert "the web server not started: database 'no_such_orders' does not exist" in errors[0]
    assert "Traceback" not in result.stderr


def test_serve_over_several_databases_starts_without_the_one_it_cannot_use(database_url, pg_server_dsn, tmp_path):
    params = conninfo_to_dict(pg_server_dsn)
    params["dbname"] = "no_such_orders"
    config = write_config(
        tmp_path / "idemdash.toml", {"alpha": {"url": database_url}, "beta": {"url": make_conninfo(**params)}}
    )
    port, log = _free_port(), tmp_path / "serve.log"
    env = _env("", tmp_path, CONFIG=config)
    env.pop("IDEMDASH_DATABASE_URL")
    with _running(_serve(port), env, log, port):
        assert _request(port, "GET", "/db/alpha/readyz")[0] == 200
        status, _, body = _request(port, "GET", "/db/beta/readyz")
        assert status == 503 and "database 'no_such_orders' does not exist" in body
    output = log.read_text()
    assert output.count("database beta cannot be used yet; the web server starts with the others") == 1, output
    assert "Traceback" not in output


def test_serve_starts_while_the_database_is_down_and_says_why_once(tmp_path):
    port, db_port = _free_port(), _free_port()
    log = tmp_path / "serve.log"
    url = f"postgresql://idemdash:s3cret-pw@127.0.0.1:{db_port}/orders?connect_timeout=1"
    cause = f"connection refused by 127.0.0.1 port {db_port}: no PostgreSQL is listening there"
    with _running(_serve(port), _env(url, tmp_path, POOL_TIMEOUT_SECONDS="1"), log, port):
        status, _, body = _request(port, "GET", "/readyz")
        assert status == 503 and cause in body
        before = log.read_text().count(cause)
        for _ in range(5):  # requests and probes, and the pool's own retries meanwhile
            assert _request(port, "GET", "/api/v1/overview")[0] == 503
            assert _request(port, "GET", "/readyz")[0] == 503
        time.sleep(2)
        output = log.read_text()
    # the command's warning as it starts, the worker's when its pool first fails: never once per request or retry
    assert output.count(cause) == before <= 2, output
    assert "starting the web server although the database is unreachable right now" in output
    assert "error connecting in" not in output  # psycopg_pool's line per retry
    assert "Traceback" not in output and "s3cret-pw" not in output


def _counters(text: str) -> dict[tuple, float]:
    """Every sample of every counter and histogram (they may only grow)."""
    found = {}
    for family in text_string_to_metric_families(text):
        if family.type in ("counter", "histogram"):
            for sample in family.samples:
                found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_two_workers_metrics_add_up_and_never_go_backwards(database_url, tmp_path):
    port = _free_port()
    log = tmp_path / "serve.log"
    with _running(_serve(port, workers=2), _env(database_url, tmp_path), log, port) as server:
        workers = wait_until(lambda: pids if len(pids := _children(server.pid)) == 2 else None, what="two workers")
        written = {pid: _written_bytes(pid) for pid in workers}
        seen: dict[tuple, float] = {}
        sent = 0
        for _ in range(6):
            for _ in range(8):  # a fresh connection each: either worker may answer
                assert _request(port, "GET", "/api/v1/overview")[0] == 200
                sent += 1
            for _ in range(2):  # consecutive scrapes, each answered by whichever worker
                status, _, body = _request(port, "GET", "/metrics")
                assert status == 200
                now = _counters(body)
                went_back = {k: (seen[k], v) for k, v in now.items() if k in seen and v < seen[k]}
                assert not went_back, went_back
                assert set(seen) <= set(now), "a series disappeared"
                seen = now
        # both workers answered some requests (the kernel hands a connection to whichever worker accepts first: on
        # a busy machine one may take a long run of them, so more are sent until both have answered), and every
        # request is counted whichever worker scraped
        for _ in range(300):
            if all(_written_bytes(pid) > written[pid] for pid in workers):
                break
            assert _request(port, "GET", "/api/v1/overview")[0] == 200
            sent += 1
        assert all(_written_bytes(pid) > written[pid] for pid in workers), written
        status, _, body = _request(port, "GET", "/metrics")
        seen = _counters(body)
        count = (
            "idemdash_http_request_duration_seconds_count",
            (("database", "default"), ("endpoint", "overview.api"), ("method", "GET"), ("status", "200")),
        )
        assert seen[count] == sent, (seen[count], sent)
