"""A fleet at scale under `idemdash serve` (gunicorn, 2 workers): 200 databases on the test server described as one
fleet by a pattern, plus hung hosts (a socket that accepts and never answers) and refusing hosts (a closed port).
Every live row's numbers equal a direct query of its database, the down hosts' rows say why, no request to
/databases waits for a hung host while the refresh fills the rows in, and at rest each worker holds no more
connections than IDEMDASH_FLEET_MAX_CONNECTIONS.

IDEMDASH_TEST_FLEET_SIZE=500 runs it with 500 databases (each a FILE_COPY clone of the test template, ~10 ms)."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

import psutil
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from idemdash.dashboard.all_databases import APPLICATION_NAME
from tests.conftest import _clone_as, _drop, _dsn_for
from tests.fleet import HungHost, closed_port, held_connections
from tests.test_keys import insert_key
from tests.test_outbox import Event, insert_events
from tests.test_serve import _free_port, _request, _running
from tests.waiting import wait_until

pytestmark = pytest.mark.system

SIZE = int(os.environ.get("IDEMDASH_TEST_FLEET_SIZE", "200"))
WORKERS = 2
THREADS = 4  # IDEMDASH_FLEET_REFRESH_THREADS per worker
BUDGET = 20  # IDEMDASH_FLEET_MAX_CONNECTIONS: 4 refresh + 1 metrics + 3 pools of 5
DOWN = 2  # hung hosts, and as many refusing ones
# members with numbers of their own (index: stuck keys, keys held for review, pending outbox rows); the rest are 0
DISTINCT = {0: (1, 0, 0), 7: (3, 1, 0), 42: (0, 0, 5), 99: (2, 2, 1), SIZE - 1: (4, 0, 2)}
# an upper bound, not a benchmark: half the hung hosts' 2 s connect deadline (a request takes milliseconds here)
SOON = 1.0

DIRECT = """
SELECT (SELECT count(*) FROM app.idempotency_request WHERE status = 'processing' AND locked_until < now()),
       (SELECT count(*) FROM app.idempotency_request WHERE status = 'processing'),
       (SELECT count(*) FROM app.idempotency_request
        WHERE status = 'processing' AND claimed_by = 'idemdash:needs_review'),
       (SELECT count(*) FROM app.outbox_event WHERE status = 'pending')
"""


@pytest.fixture
def shop(pg_server_dsn, pg_templates, tmp_path):
    """SIZE clones named <prefix>_<i>, those of DISTINCT seeded; DOWN hung and DOWN refusing hosts; the config."""
    prefix = f"shop{os.getpid()}"
    names = [f"{prefix}_{i:03d}" for i in range(SIZE)]
    hung = [HungHost() for _ in range(DOWN)]
    made: list[str] = []
    try:
        for name in names:
            _clone_as(pg_server_dsn, name, pg_templates["enum"])
            made.append(name)
        for i, (stuck, review, outbox) in DISTINCT.items():
            with psycopg.connect(_dsn_for(pg_server_dsn, names[i]), autocommit=True) as conn:
                for k in range(stuck):
                    insert_key(conn, "orders", f"stuck-{k}")
                for k in range(review):
                    insert_key(
                        conn, "orders", f"held-{k}", claimed_by="idemdash:needs_review", locked_until=timedelta(days=30)
                    )
                now = conn.execute("SELECT now()").fetchone()[0]
                insert_events(
                    conn, [Event("order.created", "pending", now - timedelta(minutes=k + 1)) for k in range(outbox)]
                )
        lines = []
        for i, host in enumerate(hung):
            lines += [
                f"[databases.hung{i}]",
                f'url = "postgresql://idemdash@127.0.0.1:{host.port}/hung?connect_timeout=2&sslmode=disable"',
            ]
        for i in range(DOWN):
            lines += [f"[databases.refusing{i}]", f'url = "postgresql://idemdash@127.0.0.1:{closed_port()}/gone"']
        lines += ["[fleets.shop]", f'url = "{pg_server_dsn}"', f'databases = "{prefix}_*"']
        config = tmp_path / "fleet.toml"
        config.write_text("\n".join(lines) + "\n")
        yield {"config": str(config), "names": names, "hung": hung, "server": pg_server_dsn}
    finally:
        for host in hung:
            host.close()
        for name in made:
            _drop(pg_server_dsn, name)


def direct_numbers(server: str, names: list[str]) -> dict[str, tuple[int, int, int, int]]:
    numbers = {}
    for name in names:
        with psycopg.connect(_dsn_for(server, name), autocommit=True) as conn:
            numbers[f"shop/{name}"] = tuple(conn.execute(DIRECT).fetchone())
    return numbers


def sessions(server: str, application_name: str) -> int:
    with psycopg.connect(server, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application_name,)
        ).fetchone()[0]


def test_a_fleet_of_200_under_gunicorn_every_number_right_no_wait_for_hung_hosts_within_the_budget(shop, tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDEMDASH_") and k != "SERVER_SOFTWARE"}
    env |= {
        "HOME": str(tmp_path),
        "IDEMDASH_CONFIG": shop["config"],
        "IDEMDASH_SECRET_KEY": "fleet-at-scale",
        "IDEMDASH_FLEET_REFRESH_THREADS": str(THREADS),
        "IDEMDASH_FLEET_REFRESH_SECONDS": "120",
        "IDEMDASH_FLEET_MAX_CONNECTIONS": str(BUDGET),
        "IDEMDASH_POOL_TIMEOUT_SECONDS": "3",
    }
    args = [sys.executable, "-m", "idemdash", "serve", "--bind", f"127.0.0.1:{port}", "--workers", str(WORKERS)]
    expected = direct_numbers(shop["server"], shop["names"])
    assert sum(any(n) for n in expected.values()) == len(DISTINCT)  # the seeded ones differ, the rest are 0
    with _running(args, env, tmp_path / "serve.log", port) as server:
        workers = wait_until(
            lambda: pids if len(pids := [c.pid for c in psutil.Process(server.pid).children()]) == WORKERS else None,
            what="the workers",
        )
        # while the refresh fills the rows in: every request answers at once; done when both workers have every
        # row (a fresh connection each, so either worker answers: several answers running with none pending)
        slowest, complete, answers = 0.0, 0, []
        deadline = time.monotonic() + 60 + SIZE * 0.2
        while complete < 8:
            assert time.monotonic() < deadline, f"rows still pending after {60 + SIZE * 0.2:.0f} s"
            for path in ("/databases", "/api/v1/databases"):
                started = time.perf_counter()
                status, _, body = _request(port, "GET", path)
                slowest = max(slowest, time.perf_counter() - started)
                assert status == 200, body[:500]
            items = json.loads(body)["items"]
            pending = any(item["pending"] for item in items)
            complete = 0 if pending else complete + 1
            if not pending:
                answers.append(items)
        # the hung hosts' connect deadline is 2 s: a request that waited for one could not answer this soon
        assert slowest < SOON, slowest

        for items in answers[-8:]:
            rows = {item["name"]: item for item in items}
            assert sorted(name for name in rows if name.startswith("shop/")) == sorted(expected)  # worst first
            for name, (stuck, processing, review, outbox) in expected.items():
                row = rows[name]
                assert row["reachable"] and not row["problem"], row
                assert (row["stuck"], row["processing"], row["needs_review"], row["outbox_pending"]) == (
                    stuck,
                    processing,
                    review,
                    outbox,
                ), (name, row)
            for i, host in enumerate(shop["hung"]):
                row = rows[f"hung{i}"]
                assert not row["reachable"] and "stuck" not in row and row["failures"] >= 1, row
                assert f"no answer from 127.0.0.1 port {host.port} within the connect timeout" in row["problem"]
            for i in range(DOWN):
                row = rows[f"refusing{i}"]
                assert not row["reachable"] and "connection refused" in row["problem"], row

        # one database's overview opens its pool: more databases than the budget holds pools, each still right
        for name in list(expected)[:12] + [f"shop/{shop['names'][i]}" for i in DISTINCT]:
            status, _, body = _request(port, "GET", f"/api/v1/db/{name}/overview")
            assert status == 200, body[:500]
            assert json.loads(body)["keys"]["stuck"] == expected[name][0], name

        # at rest (the refresh between rounds): each worker within its budget, counted from the sockets it holds,
        # and together what pg_stat_activity says of the app's sessions
        socket_dir = conninfo_to_dict(shop["server"])["host"]
        wait_until(lambda: sessions(shop["server"], APPLICATION_NAME) == 0, timeout=10, what="the refresh to rest")

        def settled():
            before = sessions(shop["server"], "idemdash")
            held = held_connections(workers, socket_dir)
            return held if sum(held.values()) == before == sessions(shop["server"], "idemdash") else None

        held = wait_until(settled, timeout=10, what="the sockets and pg_stat_activity to agree")
        assert all(count <= BUDGET for count in held.values()), held
        assert sum(held.values()) >= 1, held  # the pools just used keep their idle connections: the count sees them
