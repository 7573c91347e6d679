"""Property: after the three purges exactly the eligible rows are gone and every other row is unchanged, whether
batches walk the primary key or read an index of due rows, and whether the tables are partitioned (where no
partition holding a live row is ever dropped).

Hypothesis writes rows of every status and age into all three tables (keys of
any text, processing and failed_retryable keys long past expires_at, pending
outbox rows from a year ago, published rows without published_at, inbox rows
on both sides of the retention boundary), runs a dry run and then a real purge
of each table with tiny batches, and compares whole rows (``to_jsonb``) before
and after with what docs/operations.md (What is deleted, and what never is) allows. One database per status type; each
example empties the tables first. Rows keep at least a minute from every
boundary, so the seconds a purge takes cannot move a row across it.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.conninfo import make_conninfo

from idemdash.core import settings as idemdash_settings
from idemdash.jobs.purge_run import TABLES, run_purge
from idemdash.queries import Tables
from idemdash.queries.indexes import ADVICE
from idemdash.queries.target import Target

pytestmark = pytest.mark.system  # see docs/development.md, Tests

DAY = 24 * 60  # minutes
TERMINAL = ("succeeded", "failed_final")

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=6
)
# minutes from now; never within a minute of the boundary
offsets = st.one_of(st.integers(1, 3), st.integers(2 * DAY, 400 * DAY)).flatmap(lambda m: st.sampled_from([m, -m, -m]))

# few scopes and consumers, so that one scope's rows span several batches (the cursor's second column matters)
scopes = st.sampled_from(["create_order", "ä", "a b"])
keys = st.lists(
    st.tuples(
        st.one_of(scopes, scopes, scopes, texts),
        texts,
        st.sampled_from(["processing", "succeeded", "failed_retryable", "failed_final", "succeeded", "failed_final"]),
        offsets,
    ),
    min_size=10,
    max_size=40,
    unique_by=lambda r: (r[0], r[1]),
)
inbox = st.lists(
    st.tuples(
        st.sampled_from(["billing", "shipping"]), texts, st.integers(-3 * DAY, 3 * DAY).filter(lambda d: abs(d) > 1)
    ),
    min_size=5,
    max_size=30,
    unique_by=lambda r: (r[0], r[1]),
)
outbox = st.lists(
    st.tuples(
        st.sampled_from(["pending", "published", "failed", "publishing", "Published"]),
        st.none() | st.integers(-2, 400 * DAY).filter(lambda m: abs(m) > 1),
        st.integers(0, 400 * DAY),
    ),
    min_size=3,
    max_size=25,
)


def _snapshot(conn):
    """Every row of the three tables as its primary key -> the whole row as JSON."""
    return {
        "keys": {
            (s, k): row
            for s, k, row in conn.execute(
                "SELECT idempotency_scope, idempotency_key, to_jsonb(t)::text FROM app.idempotency_request t"
            )
        },
        "inbox": {
            (c, m): row
            for c, m, row in conn.execute(
                "SELECT consumer_name, message_id, to_jsonb(t)::text FROM app.processed_message t"
            )
        },
        "outbox": dict(conn.execute("SELECT outbox_id::text, to_jsonb(t)::text FROM app.outbox_event t").fetchall()),
    }


def _write(conn, key_rows, inbox_rows, inbox_days):
    conn.execute("TRUNCATE app.idempotency_request, app.processed_message, app.outbox_event")
    eligible = {"keys": set(), "inbox": set(), "outbox": set()}
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,"
            " claimed_by, locked_until, attempt_count, created_at, updated_at, expires_at)"
            " VALUES (%(scope)s, %(key)s, 'h', %(status)s, 'w', now() + %(m)s * interval '1 minute',"
            " 1 + length(%(key)s), now() - interval '401 days', now() - interval '401 days',"
            " now() + %(m)s * interval '1 minute')",
            [{"scope": s, "key": k, "status": status, "m": m} for s, k, status, m in key_rows],
        )
        cur.executemany(
            "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
            " VALUES (%(consumer)s, %(id)s, md5(%(id)s), now() - make_interval(days => %(days)s)"
            " - %(delta)s * interval '1 minute')",
            [{"consumer": c, "id": m, "days": inbox_days, "delta": d} for c, m, d in inbox_rows],
        )
    for s, k, status, m in key_rows:
        if status in TERMINAL and m < 0:
            eligible["keys"].add((s, k))
    for c, m, d in inbox_rows:
        if d > 0:
            eligible["inbox"].add((c, m))
    return eligible


def _write_outbox(conn, outbox_rows, outbox_days):
    eligible = set()
    for i, (status, published_ago, created_ago) in enumerate(outbox_rows):
        (outbox_id,) = conn.execute(
            "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,"
            " idempotency_key, payload, status, attempt_count, created_at, published_at)"
            " VALUES ('e', 'a', gen_random_uuid(), 's', %(key)s, jsonb_build_object('i', %(i)s), %(status)s, %(i)s,"
            " now() - %(created)s * interval '1 minute',"
            " now() - make_interval(days => %(days)s) - %(published)s * interval '1 minute') RETURNING outbox_id::text",
            {
                "i": i,
                "key": str(i),
                "status": status,
                "created": created_ago,
                "days": outbox_days,
                "published": published_ago,
            },
        ).fetchone()
        if status == "published" and published_ago is not None and published_ago > 0:
            eligible.add(outbox_id)
    return eligible


@pytest.mark.parametrize(
    "status_type, order",
    [("enum", "primary_key"), ("text", "primary_key"), ("enum", "due_index"), ("text", "due_index")],
)
def test_a_purge_removes_exactly_the_eligible_rows_and_touches_nothing_else(request, status_type, order):
    url = request.getfixturevalue("database_url" if status_type == "enum" else "text_status_database_url")
    with psycopg.connect(url, autocommit=True) as conn:
        # the order a run takes follows the planner's statistics: an autovacuum that analyzes a table between the
        # write and the purge can make a table mostly due look so and send it through heap order (tested on its own)
        for table in ("idempotency_request", "processed_message", "outbox_event"):
            conn.execute(f"ALTER TABLE app.{table} SET (autovacuum_enabled = off)")
        if order == "due_index":
            for advice in ADVICE.values():
                conn.execute(advice.create_statement(Tables()))
            # tables this small would be read whole and sorted; the point here is the due-ordered statements
            url = make_conninfo(url, options="-c enable_seqscan=off -c enable_sort=off")

        @settings(
            max_examples=20,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(
            key_rows=keys,
            inbox_rows=inbox,
            outbox_rows=outbox,
            batch_size=st.integers(1, 3),
            inbox_days=st.sampled_from([1, 30]),
            outbox_days=st.sampled_from([1, 7]),
        )
        def check(key_rows, inbox_rows, outbox_rows, batch_size, inbox_days, outbox_days):
            eligible = _write(conn, key_rows, inbox_rows, inbox_days)
            eligible["outbox"] = _write_outbox(conn, outbox_rows, outbox_days)
            before = _snapshot(conn)
            assert {t: len(rows) for t, rows in before.items()} == {
                "keys": len(key_rows),
                "inbox": len(inbox_rows),
                "outbox": len(outbox_rows),
            }
            assert all(eligible[t] <= set(before[t]) for t in TABLES)
            config = idemdash_settings.load(
                {},
                DATABASE_URL=url,
                PURGE_BATCH_SIZE=batch_size,
                PURGE_PAUSE_MS=0,
                INBOX_RETENTION_DAYS=inbox_days,
                OUTBOX_RETENTION_DAYS=outbox_days,
            )

            for table in TABLES:
                dry = run_purge(Target.from_settings(config), table, dry_run=True, started_by="property")
                assert (dry.outcome, dry.rows) == ("succeeded", len(eligible[table])), table
            assert _snapshot(conn) == before

            for table in TABLES:
                real = run_purge(Target.from_settings(config), table, dry_run=False, started_by="property")
                assert (real.outcome, real.rows, real.method) == ("succeeded", len(eligible[table]), order), table
                # batches of batch_size, plus the one that found fewer (possibly none)
                assert real.batches == len(eligible[table]) // batch_size + 1
            after = _snapshot(conn)
            for table in TABLES:
                expected = {pk: row for pk, row in before[table].items() if pk not in eligible[table]}
                assert after[table] == expected, table

        check()


# -- partitioned tables ----------------------------------------------------------------------------------------

# Offsets that fit the partitions below: inbox rows around its retention, outbox rows of the last 40 days.
outbox_recent = st.lists(
    st.tuples(
        st.sampled_from(["pending", "published", "failed", "Published"]),
        st.none() | st.integers(-2, 40 * DAY).filter(lambda m: abs(m) > 1),
        st.integers(0, 40 * DAY),
    ),
    min_size=3,
    max_size=25,
)
KEY_RANGE_DAYS = 50


def _partitioned_schema(conn):
    """The partitioned reference inbox and outbox, and a keys table partitioned by expires_at in 50-day ranges."""
    from idemdash.queries.app_schema import create_app_schema
    from idemdash.queries.migrate import migrate

    migrate(conn)
    create_app_schema(conn, Tables(), "enum", partitioned=True)
    conn.execute("ALTER TABLE app.idempotency_request RENAME TO idempotency_request_whole")
    conn.execute("ALTER INDEX app.idempotency_request_pkey RENAME TO idempotency_request_whole_pkey")
    conn.execute(
        "CREATE TABLE app.idempotency_request (LIKE app.idempotency_request_whole INCLUDING DEFAULTS,"
        " PRIMARY KEY (idempotency_scope, idempotency_key, expires_at)) PARTITION BY RANGE (expires_at)"
    )


def _ensure_partitions(conn):
    """Every partition the rows of one example may need (a purge dropped some of them in the previous example)."""
    from idemdash.queries.app_schema import create_time_partitions

    now = conn.execute("SELECT now()").fetchone()[0]
    for table in ("inbox", "outbox"):
        create_time_partitions(conn, Tables(), table, now - timedelta(days=45), now + timedelta(days=3))
    start = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=9 * KEY_RANGE_DAYS)
    for i in range(18):
        lo = start + timedelta(days=i * KEY_RANGE_DAYS)
        name = f"keys_p{lo:%Y%m%d}"
        if conn.execute("SELECT to_regclass(%s)", (f"app.{name}",)).fetchone()[0] is None:
            conn.execute(
                psycopg.sql.SQL(
                    "CREATE TABLE app.{} PARTITION OF app.idempotency_request FOR VALUES FROM ({}) TO ({})"
                ).format(
                    psycopg.sql.Identifier(name),
                    psycopg.sql.Literal(lo),
                    psycopg.sql.Literal(lo + timedelta(days=KEY_RANGE_DAYS)),
                )
            )


def _where(conn):
    """Every row's partition, by table and primary key."""
    return {
        "keys": {
            (s, k): p
            for s, k, p in conn.execute(
                "SELECT idempotency_scope, idempotency_key, tableoid::regclass::text FROM app.idempotency_request"
            )
        },
        "inbox": {
            (c, m): p
            for c, m, p in conn.execute(
                "SELECT consumer_name, message_id, tableoid::regclass::text FROM app.processed_message"
            )
        },
        "outbox": dict(conn.execute("SELECT outbox_id::text, tableoid::regclass::text FROM app.outbox_event")),
    }


def _partition_names(conn):
    return {
        r[0]
        for r in conn.execute(
            "SELECT c.oid::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent IN ('app.idempotency_request'::regclass, 'app.processed_message'::regclass,"
            " 'app.outbox_event'::regclass)"
        )
    }


def test_on_partitioned_tables_exactly_the_eligible_rows_go_and_no_partition_with_a_live_row_is_dropped(
    empty_database_url,
):
    url = empty_database_url
    with psycopg.connect(url, autocommit=True) as conn:
        _partitioned_schema(conn)

        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(
            key_rows=keys,
            inbox_rows=inbox,
            outbox_rows=outbox_recent,
            batch_size=st.integers(1, 3),
            inbox_days=st.sampled_from([1, 30]),
            outbox_days=st.sampled_from([1, 7]),
        )
        def check(key_rows, inbox_rows, outbox_rows, batch_size, inbox_days, outbox_days):
            _ensure_partitions(conn)
            eligible = _write(conn, key_rows, inbox_rows, inbox_days)
            eligible["outbox"] = _write_outbox(conn, outbox_rows, outbox_days)
            before, where, parts = _snapshot(conn), _where(conn), _partition_names(conn)
            config = idemdash_settings.load(
                {},
                DATABASE_URL=url,
                PURGE_BATCH_SIZE=batch_size,
                PURGE_PAUSE_MS=0,
                INBOX_RETENTION_DAYS=inbox_days,
                OUTBOX_RETENTION_DAYS=outbox_days,
            )

            for table in TABLES:
                dry = run_purge(Target.from_settings(config), table, dry_run=True, started_by="property")
                assert (dry.outcome, dry.rows) == ("succeeded", len(eligible[table])), table
            assert _snapshot(conn) == before and _partition_names(conn) == parts

            dropped = 0
            for table in TABLES:
                real = run_purge(Target.from_settings(config), table, dry_run=False, started_by="property")
                assert (real.outcome, real.rows) == ("succeeded", len(eligible[table])), table
                dropped += real.partitions_dropped
            after = _snapshot(conn)
            for table in TABLES:
                expected = {pk: row for pk, row in before[table].items() if pk not in eligible[table]}
                assert after[table] == expected, table
            gone = parts - _partition_names(conn)
            assert len(gone) == dropped
            for table in TABLES:
                holding_live = {where[table][pk] for pk in before[table] if pk not in eligible[table]}
                assert not holding_live & gone, f"{table}: a partition holding a live row was dropped"
            # the old partitions with due rows (or none) went whole
            assert any(name.startswith("app.processed_message_p") for name in gone)

        check()
