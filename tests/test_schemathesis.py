"""The JSON API fuzzed by a tool nobody here wrote: schemathesis, with all of its checks, against the app as
`idemdash serve` runs it (gunicorn, its config, two workers) on seeded data (every operation has real ids to find:
the document's examples name them), over several databases of an IDEMDASH_CONFIG file so that the per-database
routes are exercised too. Zero failures; the number of cases run is printed. gunicorn, not the test server: its
request-line limit once refused (414) the long cursors and TRACE requests the document allows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests import world
from tests.test_databases import write_config
from tests.test_outbox import Event, insert_events, now_of
from tests.test_serve import _env, _free_port, _running

pytestmark = [pytest.mark.system, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent
# the document's example ids (dashboard/openapi.py, PATH_EXAMPLES): the seeded data holds each
EXAMPLE_OUTBOX_ID = "6b0e4c55-0d1f-4c43-9d8a-2f2a4a8d1e01"
MAX_EXAMPLES = int(os.environ.get("IDEMDASH_SCHEMATHESIS_EXAMPLES", "25"))


def _cursors(base: str) -> dict[str, list[str]]:
    """A real cursor of each list, as a client of the server gets one (limit=1 and a next page)."""
    found = {}
    for listing, url in (
        ("keys", "/api/v1/keys?limit=1"),
        ("audit", "/api/v1/audit?limit=1"),
        ("outbox", "/api/v1/outbox?limit=1"),
        ("poison", "/api/v1/outbox/poison?limit=1"),
        ("purges", "/api/v1/purges?limit=1"),
        ("table-rows", "/api/v1/tables/outbox?state=pending&limit=1"),
    ):
        with urllib.request.urlopen(base + url, timeout=30) as answer:
            body = json.load(answer)
        assert body.get("next_cursor"), (url, body)
        found[listing] = [body["next_cursor"]]
    return found


def test_schemathesis_finds_no_failure(make_app, database_url, conn, tmp_path):
    config = write_config(
        tmp_path / "idemdash.toml",
        {
            "orders": {"url": database_url},
            "billing": {"url": database_url},
            "archive": {"url": database_url, "environment": "staging"},
        },
    )
    app = make_app(CONFIG=config, AUTH="none")
    client = app.test_client()
    world.seed(conn, client)
    now = now_of(conn)
    insert_events(
        conn,
        [
            Event(
                "order.created",
                "pending",
                now,
                attempt_count=4,
                scope="create_order",
                key="done-2",
                outbox_id=uuid.UUID(EXAMPLE_OUTBOX_ID),
            )
        ],
    )
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted,
                        dry_run, outcome, started_by)
                    VALUES ('inbox', now() - interval '2 hours', now() - interval '119 minutes', 1, 50, true,
                            'succeeded', 'alice')""")
    for i in range(3):  # a second page in every list
        insert_events(
            conn, [Event("invoice.sent", "pending", now, attempt_count=5 + i, scope="refund", key=f"retry-{i}")]
        )
    port = _free_port()
    serve = [sys.executable, "-m", "idemdash", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "2"]
    serve_env = _env("", tmp_path, CONFIG=config, AUTH="none")  # the databases are the config file's
    with _running(serve, serve_env, tmp_path / "serve.log", port):
        base = f"http://127.0.0.1:{port}"
        result = _fuzz(base, tmp_path)
    output = result.stdout + result.stderr
    cases = re.findall(r"(\d[\d,]*) (?:generated|test cases)", output)
    (tmp_path / "schemathesis.txt").write_text(output)
    print(output)
    print(f"schemathesis: {cases[-1] if cases else '?'} cases, exit {result.returncode}")
    assert result.returncode == 0, f"schemathesis found failures: {tmp_path / 'schemathesis.txt'}"


def _fuzz(base: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
        "PYTHONPATH": str(ROOT),
        "IDEMDASH_TEST_CURSORS": json.dumps(_cursors(base)),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(ROOT / "tests" / "schemathesis.toml"),
            "run",
            f"{base}/api/v1/openapi.json",
            "--checks",
            "all",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            "27",
            "--generation-deterministic",
            "--no-color",
            "--report",
            "junit",
            "--report-junit-path",
            str(tmp_path / "junit.xml"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
