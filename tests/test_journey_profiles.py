"""Every library's journey reads on its own DDL (tests/library_ddl.py): the outbox row and the inbox row of one
message id are found (and the recent window's rows the routes learn from); each read is one statement that an index
serves, the library's own or one `idemdash check` advises, with sequential scans switched off."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from psycopg import sql

from idemdash.queries import Tables, statement
from idemdash.queries.catalog import find_shapes
from idemdash.queries.indexes import create_index, list_index_status
from idemdash.queries.journey import (
    Where,
    _block,
    find_consumed,
    find_sent,
    list_recent_consumed,
    list_recent_sent,
    profile_follows,
)
from idemdash.queries.profile_indexes import create_profile_index, list_profile_index_status
from tests.test_detect import CASES, IDS, _create_case

MID = str(uuid.uuid4())
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
HEADERS = json.dumps({"ID": MID, "traceparent": TRACE})
CAP_CONTENT = json.dumps({"Headers": {"cap-msg-id": MID, "traceparent": TRACE}, "Value": {"order": 1}})

# per profile: the statements that write one message's outbox row and inbox row as the library does ({s}: schema)
ROWS = {
    "masstransit": [
        'INSERT INTO {s}."OutboxMessage" ("SentTime", "MessageId", "ContentType", "MessageType", "Body", "Headers")'
        " VALUES (now(), %(mid)s, 'application/json', 'urn:message:Payments:Captured', '{}', %(headers)s)",
        'INSERT INTO {s}."InboxState" ("MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount", "Consumed",'
        ' "Delivered") VALUES (%(mid)s, gen_random_uuid(), gen_random_uuid(), now(), 1, now(), now())',
    ],
    "wolverine": [
        "INSERT INTO {s}.wolverine_outgoing_envelopes (id, owner_id, destination, body, attempts, message_type)"
        " VALUES (%(mid)s, 0, 'rabbitmq://q', '\\x00', 0, 'PaymentCaptured')",
        "INSERT INTO {s}.wolverine_incoming_envelopes (id, status, owner_id, body, message_type, received_at)"
        " VALUES (%(mid)s, 'Handled', 0, '\\x00', 'PaymentCaptured', 'rabbitmq://q')",
    ],
    "eventuate": [
        "INSERT INTO {s}.message (id, destination, headers, payload, published, creation_time)"
        " VALUES (%(mid)s, 'payments', %(headers)s, '{}', 1, %(ms)s)",
        "INSERT INTO {s}.received_messages (consumer_id, message_id, creation_time)"
        " VALUES ('billing', %(mid)s, %(ms)s)",
    ],
    "pg-transactional-outbox": [
        "INSERT INTO {s}.outbox (id, aggregate_type, aggregate_id, message_type, payload, metadata, processed_at)"
        " VALUES (%(mid)s, 'order', '1', 'payment.captured', '{}', %(headers)s::jsonb, now())",
        "INSERT INTO {s}.inbox (id, aggregate_type, aggregate_id, message_type, payload, processed_at)"
        " VALUES (%(mid)s, 'order', '1', 'payment.captured', '{}', now())",
    ],
    "cap": [
        'INSERT INTO {s}."published" ("Id", "Version", "Name", "Content", "Retries", "Added", "ExpiresAt",'
        ' "StatusName")'
        " VALUES (1, 'v1', 'payment.captured', %(cap)s, 0, localtimestamp, NULL, 'Succeeded')",
        'INSERT INTO {s}."received" ("Id", "Version", "Name", "Group", "Content", "Retries", "Added", "ExpiresAt",'
        " \"StatusName\") VALUES (2, 'v1', 'payment.captured', 'billing', %(cap)s, 0, localtimestamp, NULL,"
        " 'Succeeded')",
    ],
}
FOLLOWED = [(case, ident) for case, ident in zip(CASES, IDS, strict=True) if ident in ROWS]


def test_the_profiles_the_journey_follows_and_those_it_cannot():
    assert {
        name
        for name in ["reference", *ROWS, "spring-modulith", "brandur", "nservicebus", "debezium-outbox", "dbos"]
        if profile_follows(name)
    } == {"reference", *ROWS}


@pytest.mark.parametrize(
    ("name", "version", "schema", "statements", "tables"), [c for c, _ in FOLLOWED], ids=[i for _, i in FOLLOWED]
)
def test_each_library_s_message_is_followed_through_an_index(
    empty_database_url, name, version, schema, statements, tables
):
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        for text in ROWS[name]:
            conn.execute(
                text.replace("{s}", sql.Identifier(schema).as_string(conn)),
                {
                    "mid": MID,
                    "headers": HEADERS,
                    "cap": CAP_CONTENT,
                    "ms": int(datetime.now(timezone.utc).timestamp() * 1000),
                },
            )
        [found] = find_shapes(conn)
        for status in list_profile_index_status(conn, found):
            create_profile_index(conn, found, status)
        where = Where(name, Tables(), found, "UTC")
        [sent] = find_sent(conn, where, MID.upper())
        [got] = find_consumed(conn, where, [MID])
        assert (sent.message_id.lower(), got.message_id.lower(), got.state) == (MID, MID, "consumed")
        if name in ("masstransit", "eventuate", "pg-transactional-outbox", "cap"):
            assert sent.traceparent == TRACE
        hour_ago = datetime.now(timezone.utc) - timedelta(hours=1)
        assert [r.message_id.lower() for r in list_recent_consumed(conn, where, hour_ago)] in ([], [MID])
        assert [r.message_id.lower() for r in list_recent_sent(conn, where, hour_ago)] in ([], [MID])
        conn.execute("SET enable_seqscan = off")
        for read, role in (("journey_sent", "outbox"), ("journey_consumed", "inbox")):
            query = _block(where, read, role)
            assert query is not None
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    sql.SQL("EXPLAIN ") + query, {"ids": [MID], "uuids": [MID], "limit": 10, "library_zone": "UTC"}
                ).fetchall()
            )
            assert "Seq Scan" not in plan and "Index" in plan, (read, plan)


def test_the_reference_tables_reads_are_index_lookups(database_url):
    """With the indexes `idemdash check` recommends: the key by its primary key, the outbox rows by id, aggregate id
    and key, the inbox rows by message id in every consumer, each one statement with sequential scans off."""
    tables = Tables()
    with psycopg.connect(database_url, autocommit=True) as conn:
        for status in list_index_status(conn, tables):
            if status.missing:
                create_index(conn, tables, status)
        conn.execute("SET enable_seqscan = off")
        where = Where("reference", tables, None)
        params = {
            "ids": [MID],
            "uuids": [MID],
            "scopes": ["checkout"],
            "keys": ["order-1"],
            "limit": 10,
            "max_consumers": 10,
            "lease_seconds": 300,
            "library_zone": "UTC",
        }
        for query in (
            statement("journey_keys_reference", tables),
            _block(where, "journey_sent", "outbox"),
            _block(where, "journey_consumed", "inbox"),
        ):
            assert query is not None
            plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + query, params).fetchall())
            assert "Seq Scan" not in plan and "Index" in plan, plan
