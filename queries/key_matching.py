"""How many keys match a key list's filters (``matching``), and the stuck keys grouped by suggested outcome.

Both read the same WHERE fragment as the list itself (``processing_key_filter``, ``status_key_filter`` in
keys.sql), so a count can never disagree with the rows listed; each is exact up to a cap and says when there are
more, like the state tabs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from idemdash.queries import Tables, statement
from idemdash.queries.keys import PROCESSING_STATUSES, KeyFilter, filter_params
from idemdash.queries.transactions import select_all, select_one

# the order the groups are shown in: the one decided from evidence first
SUGGESTIONS = ("already_succeeded", "safe_to_retry", "needs_review", "abandoned")


@dataclass(frozen=True)
class Matching:
    count: int     # exact when not ``more``; the cap when more
    more: bool     # more keys match than the cap

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "more": self.more}


@dataclass(frozen=True)
class _Count:
    count: int


@dataclass(frozen=True)
class SuggestionGroup:
    suggested: str
    keys: int


def count_keys_matching(conn: psycopg.Connection, tables: Tables, flt: KeyFilter, *, lease_seconds: int,
                        hotspot_min_attempts: int, cap: int) -> Matching:
    name = "count_processing_keys_matching" if flt.status in PROCESSING_STATUSES else "count_status_keys_matching"
    params = filter_params(flt, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    row = select_one(conn, statement(name, tables), params | {"cap": cap}, _Count)
    assert row is not None  # an aggregate answers one row
    return Matching(min(row.count, cap), row.count > cap)


def count_stuck_keys_by_suggestion(conn: psycopg.Connection, tables: Tables, flt: KeyFilter, *, lease_seconds: int,
                                   hotspot_min_attempts: int, cap: int) -> list[SuggestionGroup]:
    """The stuck keys matching ``flt`` (its own ``suggested`` aside) per suggested outcome, in SUGGESTIONS order."""
    stuck = KeyFilter("stuck", flt.scope, flt.claimed_by, flt.min_attempts, flt.min_overdue_seconds)
    params = filter_params(stuck, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    groups = {g.suggested: g for g in select_all(conn, statement("count_stuck_keys_by_suggestion", tables),
                                                 params | {"cap": cap}, SuggestionGroup)}
    return [groups[s] for s in SUGGESTIONS if s in groups]
