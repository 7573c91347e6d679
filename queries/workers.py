"""The workers that claim keys (the owners in the keys table's ``claimed_by``): who is alive, who holds stuck keys,
who fails. Each owner holding a processing key now, or owning a key that failed or succeeded within a window."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from idemdash.core.settings import Settings
from idemdash.queries import Tables, statement
from idemdash.queries.hotspots import Bounded
from idemdash.queries.transactions import select_all, select_one

# Owners listed at most (worst first); the answer says when more exist.
OWNER_LIMIT = 200
# A window is how far back a failed or succeeded key counts (by updated_at, which claim, complete and fail set).
WINDOWS: dict[str, timedelta] = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
DEFAULT_WINDOW = "1h"


@dataclass(frozen=True)
class Owner:
    name: str
    last_claim: datetime | None  # the latest claimed_at among the keys counted for it
    in_flight: int  # processing, lease live
    stuck: int  # processing, lease run out
    failed_retryable: int  # in the window
    failed_final: int  # in the window
    succeeded: int  # in the window

    @property
    def failed(self) -> int:
        return self.failed_retryable + self.failed_final


@dataclass(frozen=True)
class _Held:
    held: int


def list_owner_rows(
    conn: psycopg.Connection, tables: Tables, *, lease_seconds: int, window: timedelta, limit: int | None = None
) -> list[Owner]:
    """The rows behind ``list_owners`` (what the rollup stores): up to ``limit`` (OWNER_LIMIT) + 1 owners, worst
    first."""
    return select_all(
        conn,
        statement("list_workers", tables),
        {"lease_seconds": lease_seconds, "window": window, "limit": (limit or OWNER_LIMIT) + 1},
        Owner,
    )


def fetch_owner_rows(conn: psycopg.Connection, tables: Tables, settings: Settings, window: str) -> list[Owner]:
    """The workers rollup's rows (queries/rollups.py): its variant is the window."""
    return list_owner_rows(conn, tables, lease_seconds=settings.default_lease_seconds, window=WINDOWS[window])


def bounded_owners(rows: list[Owner], limit: int | None = None) -> Bounded[Owner]:
    limit = limit or OWNER_LIMIT
    return Bounded(rows[:limit], len(rows) > limit)


def count_held_keys(conn: psycopg.Connection, tables: Tables) -> int:
    row = select_one(conn, statement("count_held_keys", tables), None, _Held)
    return row.held if row is not None else 0
