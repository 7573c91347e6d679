"""Retry hotspots: keys with attempt_count >= N by scope and by worker, the top keys, the attempt histogram,
over the keys last changed (``updated_at``) within a window, or all of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Generic, TypeVar

import psycopg
from pydantic import Field

from idemdash.queries import Tables, statement
from idemdash.queries.keys import KeyRow
from idemdash.queries.transactions import select_all

T = TypeVar("T")
# Hotspot groups shown per page (by scope, by worker); more are counted as "more".
GROUP_LIMIT = 100
# A key is in a window when its updated_at is within it: the claim function sets updated_at (and claimed_at) on
# every attempt, and complete/fail set it again, so updated_at is the key's last attempt or its outcome.
# None: every key, whatever its age.
WINDOWS: dict[str, timedelta | None] = {
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "all": None,
}


@dataclass(frozen=True)
class Bounded(Generic[T]):
    """A list cut at a limit; ``more`` says whether rows were left off."""

    items: list[T]
    more: bool


@dataclass(frozen=True)
class GroupCounts:
    """A hotspot group's keys by state: a scope's or a worker's."""

    hotspot_keys: int
    stuck: int
    processing: Annotated[int, Field(description="Every processing hotspot key, the stuck ones included.")]
    failed_retryable: int
    failed_final: int
    succeeded: int
    max_attempts: int


@dataclass(frozen=True)
class ScopeHotspots(GroupCounts):
    scope: str


@dataclass(frozen=True)
class WorkerHotspots(GroupCounts):
    claimed_by: Annotated[
        str | None, Field(description="The worker that claimed the keys last; null is its own group.")
    ]


@dataclass(frozen=True)
class HotspotGroups:
    by_scope: Bounded[ScopeHotspots]
    by_worker: Bounded[WorkerHotspots]


@dataclass(frozen=True)
class HotspotGroupRow:
    by_scope: bool
    scope: str | None
    claimed_by: str | None
    hotspot_keys: int
    stuck: int
    processing: int
    failed_retryable: int
    failed_final: int
    succeeded: int
    max_attempts: int


@dataclass(frozen=True)
class HotKey(KeyRow):
    stuck: bool


@dataclass(frozen=True)
class AttemptBucket:
    bucket: Annotated[str, Field(description="'1', '2', '3', '4', '5-9', '10-19', '20+'.")]
    min: int
    max: Annotated[int | None, Field(description="null: no upper bound.")]
    keys: int


def hotspot_variant(window: str, min_attempts: int) -> str:
    """The hotspot_groups rollup's variant (queries/rollups.py): its window and its min_attempts."""
    return f"{window}:{min_attempts}"


def _bounded(rows: list[T], limit: int) -> Bounded[T]:
    return Bounded(rows[:limit], len(rows) > limit)


def list_hotspot_groups(
    conn: psycopg.Connection,
    tables: Tables,
    min_attempts: int,
    *,
    lease_seconds: int,
    window: timedelta | None = None,
    limit: int = GROUP_LIMIT,
) -> HotspotGroups:
    """Hotspots by scope and by worker (one pass over the hotspot rows), at most ``limit`` groups of each."""
    return group_hotspots(
        list_hotspot_group_rows(conn, tables, min_attempts, lease_seconds=lease_seconds, window=window, limit=limit),
        limit,
    )


def list_hotspot_group_rows(
    conn: psycopg.Connection,
    tables: Tables,
    min_attempts: int,
    *,
    lease_seconds: int,
    window: timedelta | None = None,
    limit: int = GROUP_LIMIT,
) -> list[HotspotGroupRow]:
    """The rows behind ``list_hotspot_groups`` (what the rollup stores): up to ``limit`` + 1 groups of each kind."""
    return select_all(
        conn,
        statement("list_hotspot_groups", tables),
        {"min_attempts": min_attempts, "lease_seconds": lease_seconds, "window": window, "limit": limit + 1},
        HotspotGroupRow,
    )


def group_hotspots(rows: list[HotspotGroupRow], limit: int = GROUP_LIMIT) -> HotspotGroups:
    def counts(r: HotspotGroupRow) -> tuple[int, int, int, int, int, int, int]:
        return (r.hotspot_keys, r.stuck, r.processing, r.failed_retryable, r.failed_final, r.succeeded, r.max_attempts)

    # a by_scope row always has its scope (the grouping set is the scope); the row type cannot say so
    by_scope = [ScopeHotspots(*counts(r), scope=r.scope) for r in rows if r.by_scope]  # type: ignore[arg-type]
    by_worker = [WorkerHotspots(*counts(r), claimed_by=r.claimed_by) for r in rows if not r.by_scope]
    return HotspotGroups(_bounded(by_scope, limit), _bounded(by_worker, limit))


def list_top_hotspot_keys(
    conn: psycopg.Connection,
    tables: Tables,
    min_attempts: int,
    *,
    lease_seconds: int,
    window: timedelta | None = None,
    limit: int = 20,
) -> list[HotKey]:
    return select_all(
        conn,
        statement("list_top_hotspot_keys", tables),
        {"min_attempts": min_attempts, "lease_seconds": lease_seconds, "window": window, "limit": limit},
        HotKey,
    )


def count_keys_by_attempts(
    conn: psycopg.Connection, tables: Tables, window: timedelta | None = None
) -> list[AttemptBucket]:
    return select_all(conn, statement("count_keys_by_attempts", tables), {"window": window}, AttemptBucket)
