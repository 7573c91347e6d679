"""Application tables range-partitioned by time: their partitions, and dropping whole the ones a purge may.

A purge drops a partition only when every row in it is eligible, checked in the transaction that drops it
while nothing else can reach the partition (docs/operations.md, Partitioned tables). Where the server allows, the
partition is
first detached with ``DETACH PARTITION ... CONCURRENTLY`` (the application's reads and writes go on), then
locked, checked and dropped; a live row found at that point puts the partition back. Otherwise the detach
happens inside the checking transaction. What happened to each partition is recorded in
``idemdash.purge_partition``.

DDL cannot take bound parameters: partition and parent names enter through ``psycopg.sql.Identifier`` and
range bounds (timestamps read from the catalog) through ``psycopg.sql.Literal``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_all, select_one

# The time columns a table may be range-partitioned by for whole partitions to be dropped (docs/operations.md,
# Partitioned tables) ...
DROP_COLUMNS = {
    "keys": ("expires_at", "created_at"),
    "inbox": ("processed_at",),
    "outbox": ("created_at", "published_at"),
}
# ... and the one of them that says when a row is due: a partition of it starting after the cutoff holds nothing due.
DUE_COLUMN = {"keys": "expires_at", "inbox": "processed_at", "outbox": "published_at"}
TIMESTAMPTZ = "timestamp with time zone"
# DETACH PARTITION ... CONCURRENTLY exists from PostgreSQL 14
CONCURRENT_DETACH_VERSION = 140000


@dataclass(frozen=True)
class Partition:
    parent_schema: str
    parent_name: str
    partition_schema: str
    partition_name: str
    single_column_range: bool
    key_column: str | None
    key_type: str | None
    bound: str
    detach_pending: bool
    subpartitioned: bool
    owned: bool  # the role may detach and drop it (owns the parent and the partition)
    writable: bool  # the role may lock and delete its rows addressed directly (batches do)
    bound_from: datetime | None  # None: MINVALUE (or not a timestamptz range)
    bound_to: datetime | None  # None: MAXVALUE, DEFAULT, or not a timestamptz range

    @property
    def is_default(self) -> bool:
        return self.bound.strip().upper() == "DEFAULT"

    @property
    def qualified(self) -> str:
        return sql.Identifier(self.partition_schema, self.partition_name).as_string(None)

    def droppable_by(self, table: str) -> bool:
        """Partitioned on a time column whose range alone can say a partition is wholly past the cutoff."""
        return (
            self.single_column_range
            and self.key_column in DROP_COLUMNS[table]
            and self.key_type == TIMESTAMPTZ
            and not self.is_default
        )

    def nothing_due(self, table: str, cutoff: datetime) -> bool:
        """Partitioned by the due column itself and starting at or after the cutoff: no row in it can be due."""
        return (
            self.droppable_by(table)
            and self.key_column == DUE_COLUMN[table]
            and not self.subpartitioned
            and self.bound_from is not None
            and self.bound_from >= cutoff
        )

    def identifiers(self) -> dict[str, sql.Composable]:
        return {
            "parent": sql.Identifier(self.parent_schema, self.parent_name),
            "partition": sql.Identifier(self.partition_schema, self.partition_name),
        }


@dataclass(frozen=True)
class Leaf:
    partition_schema: str
    partition_name: str

    @property
    def identifier(self) -> sql.Identifier:
        return sql.Identifier(self.partition_schema, self.partition_name)


@dataclass(frozen=True)
class PartitionRows:
    rows: int
    live: int


@dataclass(frozen=True)
class Cutoffs:
    now: datetime
    keys: datetime
    inbox: datetime
    outbox: datetime


@dataclass(frozen=True)
class PartitionRecord:
    run_id: int
    table_name: str
    partition_schema: str
    partition_name: str
    parent_schema: str
    parent_name: str
    bound_from: datetime | None
    bound_to: datetime
    rows: int | None
    action: str
    detail: str | None

    def identifiers(self) -> dict[str, sql.Composable]:
        return {
            "parent": sql.Identifier(self.parent_schema, self.parent_name),
            "partition": sql.Identifier(self.partition_schema, self.partition_name),
        }


@dataclass(frozen=True)
class RelationState:
    present: bool
    is_partition: bool
    detach_pending: bool


def list_table_partitions(conn: psycopg.Connection, tables: Tables, table: str) -> list[Partition]:
    """The direct partitions of the configured ``table`` (role), oldest range first; [] when not partitioned."""
    return list_partitions_by_role(conn, tables, (table,)).get(table, [])


def list_partitions_by_role(
    conn: psycopg.Connection, tables: Tables, roles: tuple[str, ...] = ("keys", "inbox", "outbox")
) -> dict[str, list[Partition]]:
    """The direct partitions of each of ``roles``' tables that is partitioned, oldest range first: one statement."""
    names = {getattr(tables, role): role for role in roles}
    found: dict[str, list[Partition]] = {}
    params = {"schema": tables.schema, "names": list(names)}
    for part in select_all(conn, statement("list_table_partitions"), params, Partition):
        found.setdefault(names[part.parent_name], []).append(part)
    return found


def list_leaf_partitions(conn: psycopg.Connection, tables: Tables, table: str) -> list[Leaf]:
    parent = sql.Identifier(tables.schema, getattr(tables, table)).as_string(conn)
    return select_all(conn, statement("list_leaf_partitions"), {"parent": parent}, Leaf)


def get_purge_cutoffs(conn: psycopg.Connection, inbox_days: int, outbox_days: int) -> Cutoffs:
    row = select_one(
        conn, statement("get_purge_cutoffs"), {"inbox_days": inbox_days, "outbox_days": outbox_days}, Cutoffs
    )
    assert row is not None
    return row


def get_partition_rows(
    conn: psycopg.Connection, table: str, partition: sql.Composable, predicate: Mapping[str, Any]
) -> PartitionRows:
    """How many rows the partition holds and how many of them are live (not eligible for the purge): a scan."""
    purgeable = statement(f"purgeable_{table}", None, **{table: partition})
    row = select_one(
        conn, statement("get_partition_rows", partition=partition, purgeable=purgeable), dict(predicate), PartitionRows
    )
    assert row is not None
    return row


def set_partition_timeouts(conn: psycopg.Connection, statement_timeout_ms: int, lock_timeout_ms: int) -> None:
    conn.execute(
        statement("set_partition_timeouts"),
        {"statement_ms": str(statement_timeout_ms), "lock_ms": str(lock_timeout_ms)},
    )


def set_detach_timeouts(conn: psycopg.Connection, statement_timeout_ms: int, lock_timeout_ms: int) -> None:
    conn.execute(
        statement("set_detach_timeouts"), {"statement_ms": str(statement_timeout_ms), "lock_ms": str(lock_timeout_ms)}
    )


def detach_partition(conn: psycopg.Connection, identifiers: Mapping[str, sql.Composable]) -> None:
    conn.execute(statement("detach_partition", None, **identifiers))


def detach_partition_concurrently(conn: psycopg.Connection, identifiers: Mapping[str, sql.Composable]) -> None:
    """Needs an autocommit connection (two transactions of its own)."""
    conn.execute(statement("detach_partition_concurrently", None, **identifiers))


def finalize_detach_partition(conn: psycopg.Connection, identifiers: Mapping[str, sql.Composable]) -> None:
    conn.execute(statement("finalize_detach_partition", None, **identifiers))


def lock_detached_partition(conn: psycopg.Connection, identifiers: Mapping[str, sql.Composable]) -> None:
    conn.execute(statement("lock_detached_partition", partition=identifiers["partition"]))


def attach_partition(
    conn: psycopg.Connection, identifiers: Mapping[str, sql.Composable], bound_from: datetime | None, bound_to: datetime
) -> None:
    lower = sql.SQL("MINVALUE") if bound_from is None else sql.Literal(bound_from)
    conn.execute(statement("attach_partition", None, **identifiers, bound_from=lower, bound_to=sql.Literal(bound_to)))


def drop_partition(conn: psycopg.Connection, identifiers: Mapping[str, sql.Composable]) -> None:
    conn.execute(statement("drop_partition", partition=identifiers["partition"]))


def get_relation_state(conn: psycopg.Connection, schema: str, name: str) -> RelationState:
    row = select_one(
        conn, statement("get_relation_state"), {"relation": sql.Identifier(schema, name).as_string(conn)}, RelationState
    )
    assert row is not None
    return row


def insert_purge_partition(
    conn: psycopg.Connection,
    run_id: int,
    table: str,
    part: Partition | PartitionRecord,
    rows: int | None,
    action: str,
    detail: str | None = None,
) -> None:
    """Record (or update) what ``run_id`` did with the partition; 'dropped' and 'would_drop' count into the run."""
    conn.execute(
        statement("insert_purge_partition"),
        {
            "run_id": run_id,
            "table": table,
            "partition_schema": part.partition_schema,
            "partition_name": part.partition_name,
            "parent_schema": part.parent_schema,
            "parent_name": part.parent_name,
            "bound_from": part.bound_from,
            "bound_to": part.bound_to,
            "rows": rows,
            "action": action,
            "detail": detail,
        },
    )


def settle_detached_partition(conn: psycopg.Connection, record: PartitionRecord, action: str, detail: str) -> None:
    conn.execute(
        statement("settle_detached_partition"),
        {
            "run_id": record.run_id,
            "partition_schema": record.partition_schema,
            "partition_name": record.partition_name,
            "action": action,
            "detail": detail,
        },
    )


def list_detached_partitions(conn: psycopg.Connection, table: str) -> list[PartitionRecord]:
    return select_all(conn, statement("list_detached_partitions"), {"table": table}, PartitionRecord)


def list_run_partitions(conn: psycopg.Connection, run_ids: list[int]) -> list[PartitionRecord]:
    return select_all(conn, statement("list_run_partitions"), {"run_ids": run_ids}, PartitionRecord)
