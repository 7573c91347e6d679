"""Staging for the journey tests: a producer's keys and outbox rows, and consumers' inbox rows in the reference
tables and in MassTransit's, at chosen times before now."""

from __future__ import annotations

import uuid
from datetime import timedelta

from psycopg.types.json import Jsonb

from tests.test_keys import insert_key

MINUTE = timedelta(minutes=1)


def produce(
    conn,
    scope: str,
    key: str,
    event_type: str,
    *,
    ago: timedelta,
    status: str = "published",
    attempts: int = 1,
    traceparent: str | None = None,
    key_status: str = "succeeded",
) -> str:
    """A key that finished ``ago`` and the outbox row it wrote (published a second later); its outbox_id."""
    insert_key(conn, scope, key, key_status, locked_until=None, claimed_ago=ago + timedelta(seconds=2), updated_ago=ago)
    outbox_id = str(uuid.uuid4())
    payload = {"order": key, **({"traceparent": traceparent} if traceparent else {})}
    conn.execute(
        "INSERT INTO app.outbox_event (outbox_id, event_type, aggregate_type, aggregate_id, idempotency_scope,"
        " idempotency_key, payload, status, attempt_count, created_at, published_at)"
        " VALUES (%s, %s, 'order', gen_random_uuid(), %s, %s, %s, %s, %s, now() - %s,"
        "         CASE WHEN %s = 'published' THEN now() - %s + interval '1 second' END)",
        (outbox_id, event_type, scope, key, Jsonb(payload), status, attempts, ago, status, ago),
    )
    return outbox_id


def consume(conn, consumer: str, message_id: str, *, ago: timedelta) -> None:
    conn.execute(
        "INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)"
        " VALUES (%s, %s, 'h', now() - %s)",
        (consumer, message_id, ago),
    )


def consume_masstransit(conn, message_id: str, *, ago: timedelta, schema: str = "public") -> None:
    """An InboxState row as MassTransit's inbox writes it once its consumer finished (Consumed set)."""
    conn.execute(
        f'INSERT INTO {schema}."InboxState" ("MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount",'
        ' "Consumed", "Delivered") VALUES (%s, %s, gen_random_uuid(), now() - %s - interval \'1 second\', 1,'
        " now() - %s, now() - %s)",
        (message_id, "6a1c3e55-0000-4000-8000-00000000b111", ago, ago, ago),
    )
