"""How many keys match a key list's filters (``matching``), and the stuck keys grouped by suggested outcome.

Both read the same conditions as the list itself (``processing_key_filter``, ``status_key_filter`` in keys.sql;
for stuck keys the same conditions split into the two index ranges that hold them, ``stuck_range_unleased`` and
``stuck_range_leased`` in key_matching.sql), so a count can never disagree with the rows listed; each is exact up
to a cap and says when there are more, like the state tabs.

A stuck key's suggested outcome costs an outbox lookup, so the groups are those of the keys on the page shown only
(``count_suggestions_on_page``: at most a page of lookups, however many keys are stuck), and ``matching`` for a
``suggested`` filter counts up to its own small cap (the page's size), as the list finds them. Without one, a tab's
``matching`` is its breakdown's total (queries/key_breakdown.py: the same rows, read once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import psycopg
from pydantic import Field

from idemdash.core.statuses import Outcome
from idemdash.queries import Tables, statement
from idemdash.queries.keys import KeyFilter, KeyRow, filter_params
from idemdash.queries.transactions import select_all, select_one

# the order the groups are shown in: the one decided from evidence first
SUGGESTIONS: tuple[Outcome, ...] = ("already_succeeded", "safe_to_retry", "needs_review", "abandoned")


@dataclass(frozen=True)
class Matching:
    count: Annotated[int, Field(description="Keys of this tab matching every filter, exact up to the cap.")]
    more: Annotated[
        bool,
        Field(
            description="More keys may match than count: past the cap, or (a filtered stuck, needs_review or "
            "processing tab of more than the cap) past the cap + 1 keys of each index range examined."
        ),
    ]

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
            description="Stuck keys with this suggested outcome among those on the page shown (each key's outcome "
            "costs an outbox lookup: only the page's are looked up)."
        ),
    ]
    more: Annotated[
        bool, Field(description="The list has other pages, whose keys are not counted: keys is a lower bound.")
    ]


def count_suggested_keys_matching(
    conn: psycopg.Connection,
    tables: Tables,
    flt: KeyFilter,
    *,
    lease_seconds: int,
    hotspot_min_attempts: int,
    cap: int,
) -> Matching:
    """Stuck keys matching ``flt`` and its ``suggested`` outcome, exact up to ``cap``: the outcome is tested key by key
    as the list tests it (an outbox lookup for each key its own columns leave), so its caller gives it a cap of a
    page. (Without a suggested outcome a tab's matching count is its breakdown's total: queries/key_breakdown.py.)"""
    if flt.status != "stuck" or flt.suggested is None:
        raise ValueError("count_suggested_keys_matching counts a stuck list filtered by suggested outcome")
    params = filter_params(flt, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    row = select_one(conn, statement("count_suggested_keys_matching", tables), params | {"cap": cap}, _Count)
    assert row is not None  # an aggregate answers one row
    return Matching(min(row.count, cap), row.count > cap)


@dataclass(frozen=True)
class _OnPage:
    suggested: Outcome
    keys: int


def count_suggestions_on_page(
    conn: psycopg.Connection, tables: Tables, rows: Sequence[KeyRow], *, hotspot_min_attempts: int, more: bool
) -> list[SuggestionGroup]:
    """The stuck keys of one page (``rows``), per suggested outcome, in SUGGESTIONS order; ``more``: the list has
    other pages, whose keys are not counted. One outbox lookup per row shown, none for a key not shown."""
    if not rows:
        return []
    params = {
        "scopes": [r.scope for r in rows],
        "keys": [r.key for r in rows],
        "attempts": [r.attempt_count for r in rows],
        "expires": [r.expires_at for r in rows],
        "hotspot_min_attempts": hotspot_min_attempts,
    }
    found = {
        g.suggested: g.keys for g in select_all(conn, statement("count_suggestions_on_page", tables), params, _OnPage)
    }
    return [SuggestionGroup(s, found[s], more) for s in SUGGESTIONS if s in found]
