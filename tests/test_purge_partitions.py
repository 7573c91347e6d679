"""Tables range-partitioned by time: whole partitions dropped when every row in them is eligible, never one holding
a live row; what a dead run left half done finished by the next; the partitioned reference schema and the job
that makes its partitions ahead of time."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.jobs.partitions import create_partitions
from idemdash.jobs.purge_run import run_purge
from idemdash.queries import Tables
from idemdash.queries.app_schema import consume_message, create_app_schema, create_time_partitions
from idemdash.queries.target import Target

pytestmark = pytest.mark.system  # partitioned schemas built, detached and dropped: seconds a test, so the full run's

T = Tables()
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
TODAY = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)


def make_target(url: str, **overrides) -> Target:
    overrides.setdefault("PURGE_PAUSE_MS", 0)
    return Target.from_settings(settings.load({}, DATABASE_URL=url, **overrides))


def _partitioned_from_40_days_ago(conn: psycopg.Connection) -> None:
    from idemdash.queries.migrate import migrate

    migrate(conn)
    create_app_schema(conn, T, "enum", partitioned=True, partitions_from=TODAY - 40 * DAY)


@pytest.fixture
def pconn(make_template, clone_of):
    """A database with idemdash migrated and the partitioned reference schema: daily partitions from 40 days ago.

    Copied from a template built once per session (making the ~100 partitions takes seconds, copying them does not).
    """
    url = clone_of(make_template("partitioned_40_days", _partitioned_from_40_days_ago))
    with psycopg.connect(url, autocommit=True) as conn:
        URLS[id(conn)] = url
        yield conn


URLS: dict[int, str] = {}


def url_of(conn) -> str:
    return URLS[id(conn)]


def partitions(conn, table="processed_message") -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = ('app.' || %s)::regclass",
            (table,),
        )
    }


def day_name(table: str, day: datetime) -> str:
    return f"{table}_p{day:%Y%m%d}"


def add_inbox(conn, at, n: int, prefix: str) -> None:
    """``n`` inbox rows a second apart from ``at``."""
    conn.execute(
        "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
        " SELECT 'c' || g %% 3, %s || g, 'h', %s::timestamptz + g * interval '1 second'"
        " FROM generate_series(1, %s) g",
        (prefix, at, n),
    )


def partition_of(conn, message_id: str) -> str:
    return (
        conn.execute("SELECT tableoid::regclass::text FROM app.processed_message WHERE message_id = %s", (message_id,))
        .fetchone()[0]
        .removeprefix("app.")
    )


def recorded(conn, run_id):
    return {
        (name, action, rows)
        for name, action, rows in conn.execute(
            "SELECT partition_name, action, rows FROM idemdash.purge_partition WHERE run_id = %s", (run_id,)
        )
    }


# ---------------------------------------------------------------------------------------------------------------
# inbox by processed_at


def test_a_dry_run_lists_the_partitions_it_would_drop_and_a_purge_drops_them(pconn):
    old, older = TODAY - 35 * DAY + 12 * HOUR, TODAY - 33 * DAY + 12 * HOUR
    add_inbox(pconn, old, 50, "a")
    add_inbox(pconn, older, 20, "b")
    cutoff = pconn.execute("SELECT now() - interval '30 days'").fetchone()[0]
    add_inbox(pconn, cutoff - 20 * MINUTE, 7, "c")  # due, in the partition that holds the cutoff, or the one before
    add_inbox(pconn, cutoff + 20 * MINUTE, 9, "d")  # within the retention
    edge = partition_of(pconn, "d1")
    before = partitions(pconn)
    events = []
    dry = run_purge(make_target(url_of(pconn)), "inbox", dry_run=True, started_by="test", on_partition=events.append)
    assert (dry.outcome, dry.rows, dry.partitions_dropped) == ("succeeded", 77, 0)
    assert partitions(pconn) == before
    would = {e.partition.split(".")[1].strip('"') for e in events if e.action == "would_drop"}
    assert {day_name("processed_message", old), day_name("processed_message", older)} <= would
    assert edge not in would  # it holds live rows (and its range is not past the cutoff)
    rows = {name: r for name, action, r in recorded(pconn, dry.run_id) if action == "would_drop"}
    assert (rows[day_name("processed_message", old)], rows[day_name("processed_message", older)]) == (50, 20)

    real = run_purge(make_target(url_of(pconn)), "inbox", dry_run=False, started_by="test")
    assert (real.outcome, real.rows) == ("succeeded", 77)
    assert real.partitions_dropped == len(would)
    assert before - partitions(pconn) == would
    assert edge in partitions(pconn)  # kept: its due rows went in batches
    left = {r[0] for r in pconn.execute("SELECT message_id FROM app.processed_message")}
    assert left == {f"d{g}" for g in range(1, 10)}
    dropped = {(name, r) for name, action, r in recorded(pconn, real.run_id) if action == "dropped"}
    assert (day_name("processed_message", old), 50) in dropped
    history = pconn.execute(
        "SELECT partitions_dropped, rows_deleted FROM idemdash.purge_run WHERE run_id = %s", (real.run_id,)
    ).fetchone()
    assert history == (real.partitions_dropped, 77)


def test_without_concurrent_detach_a_default_partition_is_detached_checked_and_dropped_in_one_transaction(pconn):
    pconn.execute("CREATE TABLE app.processed_message_default PARTITION OF app.processed_message DEFAULT")
    add_inbox(pconn, TODAY - 36 * DAY + HOUR, 10, "a")
    result = run_purge(make_target(url_of(pconn)), "inbox", dry_run=False, started_by="test")
    assert result.outcome == "succeeded" and result.rows == 10
    details = {
        d
        for _, _, d in pconn.execute(
            "SELECT partition_name, action, detail FROM idemdash.purge_partition WHERE action = 'dropped'"
        )
    }
    assert details == {"detached and dropped in one transaction"}
    assert "processed_message_default" in partitions(pconn)  # never a candidate


def test_a_detached_partition_a_dead_run_left_is_finished_by_the_next_run(pconn):
    day = TODAY - 36 * DAY
    add_inbox(pconn, day + HOUR, 10, "a")
    name = day_name("processed_message", day)
    # a run detached it concurrently and died before its last check: the record says 'detached'
    run_id = pconn.execute(
        "INSERT INTO idemdash.purge_run (table_name, dry_run, started_by, outcome)"
        " VALUES ('inbox', false, 'dead', 'failed') RETURNING run_id"
    ).fetchone()[0]
    pconn.execute(f"ALTER TABLE app.processed_message DETACH PARTITION app.{name} CONCURRENTLY")
    pconn.execute(
        "INSERT INTO idemdash.purge_partition (run_id, table_name, partition_schema, partition_name,"
        " parent_schema, parent_name, bound_from, bound_to, action)"
        " VALUES (%s, 'inbox', 'app', %s, 'app', 'processed_message', %s, %s, 'detached')",
        (run_id, name, day, day + DAY),
    )
    # meanwhile a row was written into the detached table directly: eligible too, so it goes with the rest
    pconn.execute(
        f"INSERT INTO app.{name} (consumer_name, message_id, message_hash, processed_at) VALUES ('c', 'late', 'h', %s)",
        (day + 2 * HOUR,),
    )
    result = run_purge(make_target(url_of(pconn)), "inbox", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 11)  # and the empty days older than it went too
    assert name not in partitions(pconn)
    assert pconn.execute("SELECT to_regclass(%s)", (f"app.{name}",)).fetchone()[0] is None
    settled = pconn.execute(
        "SELECT action, detail FROM idemdash.purge_partition WHERE run_id = %s", (run_id,)
    ).fetchone()
    assert settled == ("dropped", f"finished by run {result.run_id}")


def test_a_detached_partition_with_a_live_row_is_attached_again_and_purged_in_batches(pconn):
    day = TODAY - 36 * DAY
    add_inbox(pconn, day + HOUR, 10, "a")
    name = day_name("processed_message", day)
    run_id = pconn.execute(
        "INSERT INTO idemdash.purge_run (table_name, dry_run, started_by, outcome)"
        " VALUES ('inbox', false, 'dead', 'failed') RETURNING run_id"
    ).fetchone()[0]
    pconn.execute(f"ALTER TABLE app.processed_message DETACH PARTITION app.{name} CONCURRENTLY")
    pconn.execute(
        "INSERT INTO idemdash.purge_partition (run_id, table_name, partition_schema, partition_name,"
        " parent_schema, parent_name, bound_from, bound_to, action)"
        " VALUES (%s, 'inbox', 'app', %s, 'app', 'processed_message', %s, %s, 'detached')",
        (run_id, name, day, day + DAY),
    )
    # a retention that keeps this day's rows: the detached partition holds live rows now
    result = run_purge(make_target(url_of(pconn), INBOX_RETENTION_DAYS=40), "inbox", dry_run=False, started_by="test")
    assert result.outcome == "succeeded" and result.rows == 0
    assert name in partitions(pconn)  # attached again, every row still there
    assert pconn.execute("SELECT count(*) FROM app.processed_message").fetchone()[0] == 10
    # what the run did with this partition (an empty day older than the retention may go too: the template's days
    # are counted from the day it was built, which a run just after midnight has left)
    actions = {
        (a, r)
        for a, r in pconn.execute(
            "SELECT action, rows FROM idemdash.purge_partition WHERE run_id = %s AND partition_name = %s",
            (result.run_id, name),
        )
    }
    assert actions == {("attached_again", 10)}


def test_an_interrupted_concurrent_detach_is_finalized_and_the_partition_dropped(pconn):
    day = TODAY - 36 * DAY
    add_inbox(pconn, day + HOUR, 10, "a")
    name = day_name("processed_message", day)
    holder = psycopg.connect(url_of(pconn))
    try:
        holder.execute("SELECT count(*) FROM app.processed_message")  # an open transaction that uses the table
        with psycopg.connect(url_of(pconn), autocommit=True) as detacher:
            detacher.execute("SET lock_timeout = '200ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                detacher.execute(f"ALTER TABLE app.processed_message DETACH PARTITION app.{name} CONCURRENTLY")
    finally:
        holder.rollback()
        holder.close()
    pending = pconn.execute(
        "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = %s::regclass", (f"app.{name}",)
    ).fetchone()
    assert pending == (True,)
    result = run_purge(make_target(url_of(pconn)), "inbox", dry_run=False, started_by="test")
    assert result.outcome == "succeeded" and result.rows == 10
    assert pconn.execute("SELECT to_regclass(%s)", (f"app.{name}",)).fetchone()[0] is None


def test_a_detach_that_cannot_get_its_lock_leaves_the_partition_to_batches(pconn):
    pconn.execute("CREATE TABLE app.processed_message_default PARTITION OF app.processed_message DEFAULT")
    day = TODAY - 36 * DAY
    add_inbox(pconn, day + HOUR, 10, "a")
    name = day_name("processed_message", day)
    reader = psycopg.connect(url_of(pconn))
    try:
        # an application transaction reading the table: the one-transaction detach needs ACCESS EXCLUSIVE on it
        reader.execute("SELECT count(*) FROM app.processed_message WHERE message_id = 'x'")
        result = run_purge(
            make_target(url_of(pconn), PURGE_LOCK_TIMEOUT_MS=100), "inbox", dry_run=False, started_by="test"
        )
    finally:
        reader.rollback()
        reader.close()
    assert result.outcome == "succeeded" and result.rows == 10 and result.partitions_dropped == 0
    assert name in partitions(pconn)  # not dropped: its rows went in batches
    kept = pconn.execute(
        "SELECT action, detail FROM idemdash.purge_partition WHERE partition_name = %s", (name,)
    ).fetchone()
    assert kept[0] == "kept" and kept[1].startswith("could not detach it (LockNotAvailable")


# ---------------------------------------------------------------------------------------------------------------
# outbox by created_at, keys by expires_at


def add_outbox(conn, created: datetime, status: str, published: datetime | None, n: int) -> None:
    conn.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,"
        " idempotency_key, payload, status, created_at, published_at)"
        " SELECT 'e', 'a', gen_random_uuid(), 's', gen_random_uuid()::text, '{}', %s, %s + g * interval '1 "
        "minute', %s FROM generate_series(1, %s) g",
        (status, created, published, n),
    )


def test_an_old_outbox_partition_with_a_pending_row_stays_and_only_its_published_rows_go(pconn):
    all_published, with_pending = TODAY - 20 * DAY, TODAY - 19 * DAY
    add_outbox(pconn, all_published, "published", all_published + timedelta(hours=2), 5)
    add_outbox(pconn, with_pending, "published", with_pending + timedelta(hours=2), 4)
    add_outbox(pconn, with_pending, "pending", None, 1)
    add_outbox(pconn, with_pending, "published", None, 1)  # published without published_at: kept
    result = run_purge(make_target(url_of(pconn)), "outbox", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 9)
    names = partitions(pconn, "outbox_event")
    assert day_name("outbox_event", all_published) not in names
    assert day_name("outbox_event", with_pending) in names
    left = {(s, p is None) for s, p in pconn.execute("SELECT status, published_at FROM app.outbox_event")}
    assert left == {("pending", True), ("published", True)}


def test_a_keys_table_partitioned_by_expires_at_loses_partitions_of_expired_terminal_keys_only(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE app.idempotency_request RENAME TO idempotency_request_old")
        conn.execute("ALTER INDEX app.idempotency_request_pkey RENAME TO idempotency_request_old_pkey")
        conn.execute(
            "CREATE TABLE app.idempotency_request (LIKE app.idempotency_request_old INCLUDING DEFAULTS,"
            " PRIMARY KEY (idempotency_scope, idempotency_key, expires_at)) PARTITION BY RANGE (expires_at)"
        )
        days = [TODAY - n * DAY for n in (5, 4, 3, 2)]
        for day in days:
            conn.execute(
                f"CREATE TABLE app.keys_{day:%Y%m%d} PARTITION OF app.idempotency_request"
                " FOR VALUES FROM (%s) TO (%s)".replace("%s", "'{}'").format(day, day + DAY)
            )
        conn.execute(
            "CREATE TABLE app.keys_rest PARTITION OF app.idempotency_request"
            " FOR VALUES FROM (%s) TO (MAXVALUE)".replace("%s", "'{}'").format(TODAY - DAY)
        )

        def key(name, status, expires):
            conn.execute(
                "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash,"
                " status, created_at, updated_at, expires_at) VALUES ('s', %s, 'h', %s, %s, %s, %s)",
                (name, status, expires - 2 * DAY, expires - 2 * DAY, expires),
            )

        key("a1", "succeeded", days[0] + timedelta(hours=1))  # all terminal: dropped
        key("a2", "failed_final", days[0] + timedelta(hours=2))
        key("b1", "succeeded", days[1] + timedelta(hours=1))  # a processing key: kept
        key("b2", "processing", days[1] + timedelta(hours=2))
        key("c1", "succeeded", days[2] + timedelta(hours=1))  # an operator's recent decision: kept
        key("d1", "failed_retryable", days[3] + timedelta(hours=1))  # failed_retryable: kept
        conn.execute(
            "INSERT INTO idemdash.audit_log (actor, action, scope, key) VALUES ('op', 'reclassify:abandoned',"
            " 's', 'c1')"
        )
        result = run_purge(make_target(database_url), "keys", dry_run=False, started_by="test")
        assert result.outcome == "succeeded", result
        assert (result.rows, result.partitions_dropped) == (3, 1)
        names = partitions(conn, "idempotency_request")
        assert f"keys_{days[0]:%Y%m%d}" not in names
        assert {f"keys_{d:%Y%m%d}" for d in days[1:]} <= names
        assert {r[0] for r in conn.execute("SELECT idempotency_key FROM app.idempotency_request")} == {"b2", "c1", "d1"}


# ---------------------------------------------------------------------------------------------------------------
# the partitioned reference schema and its partitions job


def test_the_partitioned_inbox_deduplicates_across_partitions_and_within_one(pconn):
    assert consume_message(pconn, T, "billing", "m-1", "h1") == "processed"
    # the same message on a later day: found in the earlier partition
    pconn.execute("UPDATE app.processed_message SET processed_at = processed_at - interval '3 days'")
    assert consume_message(pconn, T, "billing", "m-1", "h1") == "duplicate_ignored"
    with pytest.raises(psycopg.Error) as caught:
        consume_message(pconn, T, "billing", "m-1", "other")
    assert caught.value.sqlstate == "P4050"
    # racing first deliveries within one partition: exactly one is processed
    outcomes = []
    barrier = threading.Barrier(4)

    def deliver():
        with psycopg.connect(url_of(pconn), autocommit=True) as c:
            barrier.wait(5)
            outcomes.append(consume_message(c, T, "billing", "m-2", "h2"))

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(outcomes) == ["duplicate_ignored"] * 3 + ["processed"]


def test_the_partitions_job_makes_the_days_ahead_once(pconn):
    target = make_target(url_of(pconn), PARTITIONS_AHEAD_DAYS=10)
    made = create_partitions(target)
    assert made == {"inbox": 3, "outbox": 3}  # init made a week ahead; ten days ahead needs three more
    assert create_partitions(target) == {"inbox": 0, "outbox": 0}
    ahead = TODAY + 10 * DAY
    assert day_name("processed_message", ahead) in partitions(pconn)
    assert day_name("outbox_event", ahead) in partitions(pconn, "outbox_event")
    assert create_time_partitions(pconn, T, "inbox", TODAY, TODAY + 3 * DAY) == 0


def test_the_partitions_job_leaves_unpartitioned_tables_alone(database_url):
    assert create_partitions(make_target(database_url)) == {}


def test_init_app_schema_partitioned_from_the_command_line(empty_database_url):
    result = CliRunner().invoke(main, ["init-app-schema", "--partitioned", "--database-url", empty_database_url])
    assert result.exit_code == 0, result.output
    assert "partitioned by day" in result.output
    with psycopg.connect(empty_database_url) as conn:
        kinds = dict(
            conn.execute(
                "SELECT relname, relkind FROM pg_class WHERE relname IN"
                " ('idempotency_request', 'processed_message', 'outbox_event')"
            ).fetchall()
        )
        assert kinds == {"idempotency_request": "r", "processed_message": "p", "outbox_event": "p"}
        assert day_name("processed_message", TODAY + 7 * DAY) in partitions(conn)


def test_a_role_that_does_not_own_the_table_empties_old_partitions_in_batches_and_health_says_why(pconn):
    """Detaching and dropping need the owner; batches address each partition, which grants on the parent do not
    reach. Without those grants /health fails with the GRANTs; with them the old days are emptied row by row."""
    from idemdash.checks.partitioning import check_partitioning

    role = f"purger_{uuid.uuid4().hex[:8]}"
    pconn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    try:
        for grant in (
            f"GRANT USAGE ON SCHEMA app, idemdash TO {role}",
            f"GRANT SELECT, UPDATE, DELETE ON app.processed_message TO {role}",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA idemdash TO {role}",
            f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA idemdash TO {role}",
        ):
            pconn.execute(grant)
        add_inbox(pconn, TODAY - 35 * DAY + HOUR, 10, "a")
        add_inbox(pconn, TODAY - 2 * DAY, 4, "live")
        old = day_name("processed_message", TODAY - 35 * DAY)
        url = psycopg.conninfo.make_conninfo(url_of(pconn), user=role, password="pw")
        config = settings.load({}, DATABASE_URL=url)

        def findings(check_id):
            with psycopg.connect(url, autocommit=True) as conn:
                return {c.id: c for c in check_partitioning(conn, T, config)}.get(check_id)

        closed = findings("partition.grants.inbox")
        assert closed is not None and closed.status == "fail" and f'"app"."{old}" TO "{role}"' in closed.fix_sql
        failed = run_purge(make_target(url), "inbox", dry_run=False, started_by="test")
        assert failed.outcome == "failed" and "may not SELECT processed_message_p" in (failed.error or "")
        assert pconn.execute("SELECT count(*) FROM app.processed_message").fetchone()[0] == 14  # nothing went

        pconn.execute(closed.fix_sql)  # the fix /health printed, run by the owner
        assert findings("partition.grants.inbox") is None
        assert findings("partition.owner.inbox").status == "warn"
        events = []
        done = run_purge(make_target(url), "inbox", dry_run=False, started_by="test", on_partition=events.append)
        assert (done.outcome, done.rows, done.partitions_dropped) == ("succeeded", 10, 0)
        assert old in partitions(pconn)  # still there, empty: only the owner may drop it
        assert events == []  # not read to be dropped, nor recorded on every run: /health says why once
        left = {r[0] for r in pconn.execute("SELECT message_id FROM app.processed_message")}
        assert left == {f"live{g}" for g in range(1, 5)}
    finally:
        pconn.execute(f"DROP OWNED BY {role}")
        pconn.execute(f"DROP ROLE {role}")
