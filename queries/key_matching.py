"""How many keys match a key list's filters (``matching``), and the stuck keys grouped by suggested outcome.

Both read the same conditions as the list itself (``processing_key_filter``, ``status_key_filter`` in keys.sql;
for stuck keys the same conditions split into the two index ranges that hold them, ``stuck_keys_unleased`` and
``stuck_keys_leased`` in key_matching.sql), so a count can never disagree with the rows listed; each is exact up
to a cap and says when there are more, like the state tabs.

A stuck key's suggested outcome costs an outbox lookup, so the groups read at most ``suggestion_cap`` stuck keys
(most overdue first), and ``matching`` for a ``suggested`` filter is that group's count: exact when every stuck key
matching the other filters was read, else a lower bound with ``more``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import psycopg
from pydantic import Field

from idemdash.core.statuses import LEASE_TABS, Outcome
from idemdash.queries import Tables, statement
from idemdash.queries.keys import KeyFilter, filter_params
from idemdash.queries.transactions import select_all, select_one

# the order the groups are shown in: the one decided from evidence first
SUGGESTIONS = ("already_succeeded", "safe_to_retry", "needs_review", "abandoned")


@dataclass(frozen=True)
class Matching:
    count: Annotated[int, Field(description="Keys of this tab matching every filter, exact up to the cap.")]
    more: Annotated[bool, Field(description="More keys match than the cap.")]

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "more": self.more}


@dataclass(frozen=True)
class _Count:
    count: int


@dataclass(frozen=True)
class SuggestionGroup:
    suggested: Outcome
    keys: Annotated[
        int,
        Field(
            description="Stuck keys with this suggested outcome among those read (at most "
            "suggestions_cap, most overdue first)."
        ),
    ]
    more: Annotated[
        bool, Field(description="More stuck keys match the other filters than were read: keys is a lower bound.")
    ]


def count_keys_matching(
    conn: psycopg.Connection,
    tables: Tables,
    flt: KeyFilter,
    *,
    lease_seconds: int,
    hotspot_min_attempts: int,
    cap: int,
    suggestion_cap: int | None = None,
) -> Matching:
    """Keys of ``flt``'s tab matching it, exact up to ``cap``; with a ``suggested`` filter, its group among the
    first ``suggestion_cap`` (default ``cap``) stuck keys (see matching_in_groups)."""
    if flt.status == "stuck" and flt.suggested is not None:
        groups = count_stuck_keys_by_suggestion(
            conn,
            tables,
            flt,
            lease_seconds=lease_seconds,
            hotspot_min_attempts=hotspot_min_attempts,
            cap=suggestion_cap if suggestion_cap is not None else cap,
        )
        return matching_in_groups(groups, flt.suggested)
    if flt.status == "stuck":
        name = "count_stuck_keys_matching"
    elif flt.status in LEASE_TABS:
        name = "count_processing_keys_matching"
    else:
        name = "count_status_keys_matching"
    params = filter_params(flt, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    row = select_one(conn, statement(name, tables), params | {"cap": cap}, _Count)
    assert row is not None  # an aggregate answers one row
    return Matching(min(row.count, cap), row.count > cap)


def count_stuck_keys_by_suggestion(
    conn: psycopg.Connection, tables: Tables, flt: KeyFilter, *, lease_seconds: int, hotspot_min_attempts: int, cap: int
) -> list[SuggestionGroup]:
    """The first ``cap`` stuck keys matching ``flt`` (its own ``suggested`` aside), most overdue first, per
    suggested outcome, in SUGGESTIONS order; each group says ``more`` when further stuck keys were left unread."""
    stuck = KeyFilter("stuck", flt.scope, flt.claimed_by, flt.min_attempts, flt.min_overdue_seconds)
    params = filter_params(stuck, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    groups = {
        g.suggested: g
        for g in select_all(
            conn, statement("count_stuck_keys_by_suggestion", tables), params | {"cap": cap}, SuggestionGroup
        )
    }
    return [groups[s] for s in SUGGESTIONS if s in groups]


def matching_in_groups(groups: list[SuggestionGroup], suggested: str) -> Matching:
    """``matching`` for a ``suggested`` filter, from the groups of the same other filters: that group's keys, and
    ``more`` when stuck keys were left unread (a group with no key read is absent: 0)."""
    more = any(g.more for g in groups)
    return Matching(next((g.keys for g in groups if g.suggested == suggested), 0), more)
