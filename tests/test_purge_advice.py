"""What /health advises so that purges cost what is due: the index each purge reads, the server's WAL settings,
and what a partitioned table costs; and what /purges shows about how each run went."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.jobs.purge_run import run_purge
from idemdash.queries import Tables
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.indexes import ADVICE
from idemdash.queries.migrate import migrate
from tests.test_health import checks
from tests.test_purge_partitions import make_target

T = Tables()


# ---------------------------------------------------------------------------------------------------------------
# the index each purge reads its due rows through


def test_without_the_index_of_due_rows_health_names_it_and_its_fix_makes_the_purge_read_only_due_rows(
    client, conn, database_url
):
    items = checks(client)
    finding = items["purge.index.keys"]
    assert finding["status"] == "warn"
    assert finding["title"] == "The keys purge reads all of app.idempotency_request to find what is due"
    assert finding["fix_sql"] == ADVICE["index_keys_due"].as_text(T)
    assert {items["purge.index.inbox"]["status"], items["purge.index.outbox"]["status"]} == {"warn"}
    conn.execute(finding["fix_sql"])
    items = checks(client)
    assert items["purge.index.keys"]["status"] == "ok"
    assert "idempotency_request_due_idemdash_idx" in items["purge.index.keys"]["detail"]
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
        " created_at, expires_at) SELECT 's', 'k' || g, 'h', 'succeeded', now() - interval '3 days',"
        " now() - interval '2 days' + g * interval '1 second' FROM generate_series(1, 2000) g"
    )
    # most of the table not due (a table mostly due is purged in heap order instead: test_purge_heap_order.py)
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
        " created_at, expires_at) SELECT 's', 'live' || g, 'h', 'succeeded', now(), now() + interval '1 day'"
        " FROM generate_series(1, 6000) g"
    )
    conn.execute("ANALYZE app.idempotency_request")
    result = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows, result.method) == ("succeeded", 2000, "due_index")


@pytest.mark.system
@pytest.mark.parametrize("analysed", [False, True])
def test_health_the_dry_run_the_real_run_and_purges_say_the_same_order(client, conn, database_url, analysed):
    """/purges said a run was "walking the primary key" while /health said the batches read the due index (it
    exists; the planner did not take it for a table this small or not yet analysed)."""
    conn.execute(ADVICE["index_keys_due"].create_statement(T))
    # no autovacuum: the test decides whether the planner has statistics (as in a demo just backfilled)
    conn.execute("ALTER TABLE app.idempotency_request SET (autovacuum_enabled = false)")
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
        " created_at, expires_at) SELECT 's', 'k' || g, 'h', 'succeeded', now() - interval '3 days',"
        " now() - interval '2 days' FROM generate_series(1, 30) g"
    )
    conn.execute(
        "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
        " created_at, expires_at) SELECT 's', 'live' || g, 'h', 'succeeded', now(), now() + interval '1 day'"
        " FROM generate_series(1, 4000) g"
    )
    if analysed:  # the planner, with statistics, reads the few due rows through the index
        conn.execute("ANALYZE app.idempotency_request")
    finding = checks(client)["purge.index.keys"]
    dry = run_purge(make_target(database_url), "keys", dry_run=True, started_by="test")
    real = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
    assert dry.method == real.method == ("due_index" if analysed else "primary_key")
    said = {
        "due_index": "The keys purge reads only due rows",
        "primary_key": "The keys purge walks the primary key for now",
    }
    assert (finding["status"], finding["title"]) == ("ok", said[real.method])
    assert "idempotency_request_due_idemdash_idx" in finding["detail"]
    html = BeautifulSoup(client.get("/purges").get_data(as_text=True), "html.parser")
    shown = html.find(id="purge-keys").find("dd", attrs={"data-method": True})
    assert shown["data-method"] == real.method
    assert shown.find(attrs={"data-method-run": True})["data-method-run"] == str(real.run_id)


# ---------------------------------------------------------------------------------------------------------------
# the server's settings for deletes (a server with PostgreSQL's defaults: the test server has what /health advises)


@pytest.mark.system
def test_on_a_server_with_the_defaults_health_advises_wal_compression_and_checkpoint_spacing(own_server, make_app):
    url, _stop, _start = own_server
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        create_app_schema(conn, T)
    client = make_app(url).test_client()
    items = checks(client)
    compression, checkpoints = items["purge.wal_compression"], items["purge.checkpoints"]
    assert compression["status"] == checkpoints["status"] == "warn"
    assert compression["title"] == "wal_compression is off: deletes write whole pages to the WAL"
    assert compression["fix_sql"].startswith("ALTER SYSTEM SET wal_compression = ")
    assert checkpoints["title"].startswith("Checkpoints come every 5 min or 1,024 MB of WAL")
    assert "checkpoint_timeout = '15min'" in checkpoints["fix_sql"]
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in compression["fix_sql"].split(";\n") + checkpoints["fix_sql"].split(";\n"):
            conn.execute(statement)
    items = checks(client)
    assert "purge.wal_compression" not in items and "purge.checkpoints" not in items
    assert items["purge.server"]["status"] == "ok"


# ---------------------------------------------------------------------------------------------------------------
# partitioned tables (partitioned_url: tests/conftest.py)


def test_health_says_what_partitioning_costs_the_inbox_and_outbox(partitioned_url, make_app):
    items = checks(make_app(partitioned_url).test_client())
    inbox = items["partition.uniqueness.inbox"]
    assert inbox["status"] == "warn"
    assert inbox["title"] == "app.processed_message is partitioned: uniqueness holds within a partition only"
    assert "(consumer_name, message_id) is unique only within one partition" in inbox["detail"]
    assert "the retention minus one partition: 29 d" in inbox["detail"]
    assert "partition.uniqueness.outbox" in items and "partition.uniqueness.keys" not in items
    assert "partition.ahead.inbox" not in items  # init made a week ahead


def test_a_dedup_window_shorter_than_the_replay_horizon_says_which_retention_covers_it(partitioned_url, make_app):
    items = checks(make_app(partitioned_url, INBOX_RETENTION_DAYS=1).test_client())
    inbox = items["partition.uniqueness.inbox"]
    assert inbox["title"] == (
        "app.processed_message: deduplication window 0 s is shorter than the replay horizon (1 d)"
    )
    assert inbox["fix"] == "IDEMDASH_INBOX_RETENTION_DAYS=2"


def test_partitions_running_out_fail_and_the_fix_makes_the_next_week(partitioned_url, make_app):
    with psycopg.connect(partitioned_url, autocommit=True) as conn:
        tomorrow = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        for (name,) in conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'app.processed_message'::regclass"
        ).fetchall():
            if name >= f"processed_message_p{tomorrow:%Y%m%d}":
                conn.execute(f"DROP TABLE app.{name}")
        client = make_app(partitioned_url).test_client()
        finding = checks(client)["partition.ahead.inbox"]
        assert finding["status"] == "warn"  # today's partition still takes rows, for a few hours more
        assert finding["title"].startswith("app.processed_message has no partition for rows after ")
        conn.execute(finding["fix_sql"])
        assert "partition.ahead.inbox" not in checks(client)


def test_a_default_partition_is_flagged_and_the_health_page_shows_the_findings(partitioned_url, make_app):
    with psycopg.connect(partitioned_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE app.outbox_event_default PARTITION OF app.outbox_event DEFAULT")
    client = make_app(partitioned_url).test_client()
    assert checks(client)["partition.default.outbox"]["status"] == "warn"
    html = BeautifulSoup(client.get("/health").get_data(as_text=True), "html.parser")
    assert html.find(id="check-partition.default.outbox") is not None
    assert html.find(id="check-partition.uniqueness.inbox") is not None


# ---------------------------------------------------------------------------------------------------------------
# /purges


@pytest.mark.system
def test_purges_page_shows_how_batches_went_and_the_partitions_a_run_dropped(partitioned_url, make_app):
    with psycopg.connect(partitioned_url, autocommit=True) as conn:
        from idemdash.queries.app_schema import create_time_partitions

        now = datetime.now(timezone.utc)
        create_time_partitions(conn, T, "inbox", now - timedelta(days=40), now)
        conn.execute(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
            " SELECT 'c', 'm' || g, 'h', now() - interval '35 days' FROM generate_series(1, 12) g"
        )
    result = run_purge(make_target(partitioned_url), "inbox", dry_run=False, started_by="test")
    keys = run_purge(make_target(partitioned_url), "keys", dry_run=False, started_by="test")
    assert result.partitions_dropped >= 1 and keys.method == "primary_key"
    client = make_app(partitioned_url).test_client()
    html = BeautifulSoup(client.get("/purges").get_data(as_text=True), "html.parser")
    row = html.find("tr", attrs={"data-partitions-of": str(result.run_id)})
    assert row is not None
    dropped = row.find_all("li", attrs={"data-action": "dropped"})
    assert len(dropped) == result.partitions_dropped
    assert any("12 rows" in li.get_text() for li in dropped)
    assert "partition dropped" in dropped[0].get_text()
    summary = " ".join(row.find("summary").get_text().split())
    assert summary.startswith(f"{result.partitions_dropped} partition") and "dropped whole (12 rows)" in summary
    method = html.find(id="purge-keys").find("dd", attrs={"data-method": "primary_key"})
    said = " ".join(method.get_text().split())
    assert said.startswith("walking the primary key (the last run, "), said
    assert said.endswith(
        ": the planner did not read the due rows through an index then, fine on a small table; "
        "/health says what a run takes now)"
    ), said
    assert method.find("a")["href"] == "/health#check-purge.index.keys"
    body = client.get("/api/v1/purges").get_json()
    item = next(i for i in body["items"] if i["run_id"] == result.run_id)
    assert item["partitions_dropped"] == result.partitions_dropped and item["method"] == result.method
    assert {p["action"] for p in item["partitions"]} == {"dropped"}
    assert sum(p["rows"] for p in item["partitions"]) == 12


def test_a_running_run_shows_rows_rate_and_elapsed_time(client, conn):
    conn.execute(
        "INSERT INTO idemdash.purge_run (table_name, started_at, batches, rows_deleted, dry_run, outcome,"
        " started_by, method) VALUES ('keys', now() - interval '20 seconds', 8, 40000, false, 'running',"
        " 'scheduler', 'due_index')"
    )
    html = BeautifulSoup(client.get("/purges").get_data(as_text=True), "html.parser")
    progress = html.find("p", attrs={"data-running-run": True})
    assert progress.find(attrs={"data-rows": True}).get_text() == "40,000"
    rate = int(progress.find(attrs={"data-rate": True}).get_text().replace(",", ""))
    assert 1000 < rate <= 2000  # 40,000 rows in 20 s and the moments this request took
    assert progress.find(attrs={"data-elapsed": True}).get_text().endswith("s")
    assert "through the index of due rows" in progress.get_text()
