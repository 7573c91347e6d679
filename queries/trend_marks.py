"""What the trend charts mark: operators' actions (the audit log) and purge runs, in the charts' time range."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from idemdash.queries import statement
from idemdash.queries.transactions import select_all, select_one


@dataclass(frozen=True)
class TrendAction:
    audit_id: int
    at: datetime
    actor: str
    action: str
    scope: str | None
    key: str | None
    to_status: str | None
    children: int  # the keys or rows a bulk action moved (its per-key rows); 0 for one


@dataclass(frozen=True)
class TrendPurge:
    run_id: int
    table_name: str
    at: datetime  # when it finished, or started while it runs
    started_at: datetime
    finished_at: datetime | None
    rows_deleted: int
    partitions_dropped: int
    outcome: str
    started_by: str


def list_trend_actions(conn: psycopg.Connection, *, hours: int, limit: int) -> list[TrendAction]:
    return select_all(conn, statement("list_trend_actions"), {"hours": hours, "limit": limit}, TrendAction)


def list_trend_purges(conn: psycopg.Connection, *, hours: int, limit: int) -> list[TrendPurge]:
    return select_all(conn, statement("list_trend_purges"), {"hours": hours, "limit": limit}, TrendPurge)


@dataclass(frozen=True)
class TrendMarks:
    actions: list[TrendAction]
    purges: list[TrendPurge]

    def cut(self, limit: int) -> bool:
        """Whether either list stopped at its limit (older ones of the range were not read)."""
        return len(self.actions) >= limit or len(self.purges) >= limit


def list_trend_marks(conn: psycopg.Connection, *, hours: int, limit: int) -> TrendMarks:
    """The newest operators' actions and purge runs of the last hours, at most limit of each."""
    return TrendMarks(
        list_trend_actions(conn, hours=hours, limit=limit), list_trend_purges(conn, hours=hours, limit=limit)
    )


@dataclass(frozen=True)
class TrendVersion:
    """What the trend section is drawn from, in brief: equal versions, the same snapshots, actions and purges."""

    snapshots: int
    newest_snapshot: datetime | None
    newest_audit_id: int | None
    newest_run_id: int | None
    newest_finish: datetime | None
    running: int
    running_progress: int


def get_trend_version(conn: psycopg.Connection, *, hours: int) -> TrendVersion | None:
    return select_one(conn, statement("get_trend_version"), {"hours": hours}, TrendVersion)
