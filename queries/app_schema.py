"""The reference application schema and typed calls to its functions.

This is for new adopters, the demo, the simulator and the tests. idemdash
never changes an existing application's tables: every statement here is
``IF NOT EXISTS`` / ``CREATE OR REPLACE``, and ``idemdash init-app-schema``
is the only thing that runs it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, cast

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from idemdash.queries import Tables, statement
from idemdash.queries.indexes import ADVICE
from idemdash.queries.transactions import select_one

StatusType = Literal["enum", "text"]

CLAIM_KINDS = ("new_claim", "replay_success", "in_progress", "stale_reclaim", "retry_reclaim", "final_failure")
# Claim outcomes after which the caller owns the key and must do the work.
OWNING_KINDS = ("new_claim", "stale_reclaim", "retry_reclaim")

# SQLSTATEs raised by the reference functions.
PAYLOAD_MISMATCH = "P4002"
NOT_PROCESSING = ("P4010", "P4011")
MESSAGE_MISMATCH = "P4050"


@dataclass(frozen=True)
class Claim:
    claim_kind: str
    attempt_count: int
    response_body: Any
    result_ref_type: str | None
    result_ref_id: uuid.UUID | None
    failure_code: str | None
    failure_message: str | None

    @property
    def owns(self) -> bool:
        return self.claim_kind in OWNING_KINDS


# The unique index each daily partition gets (the deduplication that holds within one partition).
PARTITION_UNIQUE_COLUMNS = {
    "inbox": ["consumer_name", "message_id"],
    "outbox": ["idempotency_scope", "idempotency_key", "event_type"],
}
PARTITIONED_TABLES = tuple(PARTITION_UNIQUE_COLUMNS)
_PARTITION_FUNCTION = "create_time_partitions(regclass, timestamptz, timestamptz, text[])"


def create_app_schema(
    conn: psycopg.Connection,
    tables: Tables,
    status_type: StatusType = "enum",
    partitioned: bool = False,
    partitions_from: datetime | None = None,
    partitions_to: datetime | None = None,
) -> None:
    """Create the reference tables and functions; safe to run again.

    ``partitioned``: the inbox and outbox are range-partitioned by day (inbox by ``processed_at``, outbox by
    ``created_at``), with daily partitions from ``partitions_from`` (default: today) to ``partitions_to``
    (default: a week ahead); the scheduler's partitions job keeps making the upcoming ones. Tables that exist
    are left as they are, partitioned or not.
    """
    if status_type not in ("enum", "text"):
        raise ValueError("status_type must be 'enum' or 'text'")
    enum = sql.Identifier(tables.schema, "idempotency_status")
    with conn.transaction():
        conn.execute(statement("create_app_schema_only", tables))
        if status_type == "enum":
            conn.execute(statement("create_app_status_enum", tables, status_enum=enum))
        if partitioned:
            conn.execute(statement("create_app_partitioned_tables", tables))
            # every recommended index of the two, now: CREATE INDEX CONCURRENTLY cannot build them later
            for advice in ADVICE.values():
                if advice.table in PARTITIONED_TABLES:
                    conn.execute(advice.create_statement_in_transaction(tables))
        conn.execute(
            statement("create_app_tables", tables, status_type=enum if status_type == "enum" else sql.SQL("text"))
        )
        conn.execute(statement("create_app_functions", tables))
        if partitioned:
            conn.execute(statement("create_app_partition_functions", tables))
            now = datetime.now(timezone.utc)
            for table in PARTITIONED_TABLES:
                create_time_partitions(
                    conn, tables, table, partitions_from or now, partitions_to or now + timedelta(days=7)
                )


def has_partition_function(conn: psycopg.Connection, tables: Tables) -> bool:
    """Whether the application schema has the partitioned reference schema's ``create_time_partitions``."""
    signature = sql.Identifier(tables.schema).as_string(conn) + "." + _PARTITION_FUNCTION
    row = conn.execute(statement("get_partition_function"), {"signature": signature}).fetchone()
    return bool(row and row[0])


def create_time_partitions(conn: psycopg.Connection, tables: Tables, table: str, start: datetime, end: datetime) -> int:
    """The missing daily partitions of the reference ``table`` ('inbox' or 'outbox') from ``start`` to ``end``."""
    relation = sql.Identifier(tables.schema, getattr(tables, table)).as_string(conn)
    row = conn.execute(
        statement("create_time_partitions", tables),
        {"table": relation, "from": start, "to": end, "unique_columns": PARTITION_UNIQUE_COLUMNS[table]},
    ).fetchone()
    return int(row[0]) if row else 0


def claim_key(
    conn: psycopg.Connection,
    tables: Tables,
    scope: str,
    key: str,
    request_hash: str,
    claimed_by: str,
    lock_seconds: int = 300,
    retention: timedelta = timedelta(hours=24),
) -> Claim:
    params = {
        "scope": scope,
        "key": key,
        "request_hash": request_hash,
        "claimed_by": claimed_by,
        "lock_seconds": lock_seconds,
        "retention": retention,
    }
    claim = select_one(conn, statement("claim_key", tables), params, Claim)
    assert claim is not None
    return claim


def complete_key(
    conn: psycopg.Connection,
    tables: Tables,
    scope: str,
    key: str,
    result_ref_type: str | None,
    result_ref_id: uuid.UUID | None,
    response_body: Any,
    attempt: int | None = None,
) -> None:
    conn.execute(
        statement("complete_key", tables),
        {
            "scope": scope,
            "key": key,
            "result_ref_type": result_ref_type,
            "result_ref_id": result_ref_id,
            "response_body": Jsonb(response_body),
            "attempt": attempt,
        },
    )


def fail_key(
    conn: psycopg.Connection,
    tables: Tables,
    scope: str,
    key: str,
    retryable: bool,
    failure_code: str,
    failure_message: str,
    attempt: int | None = None,
) -> None:
    conn.execute(
        statement("fail_key", tables),
        {
            "scope": scope,
            "key": key,
            "retryable": retryable,
            "failure_code": failure_code,
            "failure_message": failure_message,
            "attempt": attempt,
        },
    )


def consume_message(
    conn: psycopg.Connection,
    tables: Tables,
    consumer: str,
    message_id: str,
    message_hash: str,
    result_ref_type: str | None = None,
    result_ref_id: uuid.UUID | None = None,
) -> str:
    row = conn.execute(
        statement("consume_message", tables),
        {
            "consumer": consumer,
            "message_id": message_id,
            "message_hash": message_hash,
            "result_ref_type": result_ref_type,
            "result_ref_id": result_ref_id,
        },
    ).fetchone()
    assert row is not None
    return cast(str, row[0])


def fix_create_time_partitions(tables: Tables, table: str) -> str:
    """The call that makes the next week's partitions of the reference ``table`` (shown on /health, never run)."""
    relation = sql.Identifier(tables.schema, getattr(tables, table)).as_string(None)
    return statement(
        "fix_create_time_partitions",
        tables,
        table=sql.Literal(relation),
        unique_columns=sql.Literal(PARTITION_UNIQUE_COLUMNS[table]),
    ).as_string(None)
