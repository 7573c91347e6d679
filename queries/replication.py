"""How far a hot standby is behind its primary (the Target reads from the standby only while it is close), and how
far the logical replication slots that read a table from the WAL (Debezium's outbox) are behind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import psycopg
from pydantic import Field

from idemdash.queries import statement
from idemdash.queries.transactions import select_all, select_one


@dataclass(frozen=True)
class _Lsn:
    lsn: str


@dataclass(frozen=True)
class StandbyReplay:
    in_recovery: bool
    bytes_behind: float | None  # None: not a standby
    seconds_since_replay: float | None  # None: it has replayed nothing since it started
    paused: bool

    @property
    def lag_seconds(self) -> float:
        """0 when it has replayed all the primary wrote; otherwise how long ago it replayed its last transaction."""
        if not self.bytes_behind:
            return 0.0
        return self.seconds_since_replay if self.seconds_since_replay is not None else float("inf")


def get_primary_wal_lsn(conn: psycopg.Connection) -> str:
    row = select_one(conn, statement("get_primary_wal_lsn"), None, _Lsn)
    assert row is not None
    return row.lsn


def get_standby_replay(conn: psycopg.Connection, primary_lsn: str) -> StandbyReplay:
    row = select_one(conn, statement("get_standby_replay"), {"primary_lsn": primary_lsn}, StandbyReplay)
    assert row is not None
    return row


@dataclass(frozen=True)
class LogicalSlot:
    slot_name: str
    plugin: Annotated[str, Field(description="Its output plugin (Debezium: pgoutput or decoderbufs).")]
    active: Annotated[bool, Field(description="A reader (the connector) is connected now.")]
    never_confirmed: Annotated[bool, Field(description="Its reader has never confirmed reading anything.")]
    bytes_behind: Annotated[
        float | None,
        Field(
            description="WAL written since what its reader confirmed it read: the rows written in it are not yet "
            "published."
        ),
    ]
    bytes_retained: Annotated[float | None, Field(description="WAL the slot keeps the server from recycling (disk).")]


def list_logical_slots(conn: psycopg.Connection) -> list[LogicalSlot]:
    return select_all(conn, statement("list_logical_slots"), None, LogicalSlot)
