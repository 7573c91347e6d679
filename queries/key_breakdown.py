"""A key list's rows counted per scope and per worker (``claimed_by``), worst first: where an incident is.

The breakdown reads the same conditions as the list (``processing_key_filter``, ``status_key_filter``; for stuck
keys the two index ranges ``stuck_range_unleased`` and ``stuck_range_leased``), so its counts add up to the list's
rows. It reads at most ``cap`` + 1 of them: past the cap it is not computed (``too_many``), as the state tabs stop
counting at their cap, so a tab of millions of succeeded keys costs a bounded index read, never a full count.
On the processing tabs (stuck, needs_review, processing) the cap bounds the keys examined, not only those matching:
a filter is tested on the first cap + 1 keys of each index range (oldest first), so a filter that matches few of
200,000 stuck keys does not read them all; past them the counts are a lower bound (``more``).
A stuck list filtered by suggested outcome is broken down over the page shown (``break_down_rows``): its filter
costs an outbox lookup per key, so counting it past the page would look up every stuck key.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from idemdash.core.statuses import LEASE_TABS
from idemdash.queries import Statement, Tables, statement
from idemdash.queries.keys import KeyFilter, KeyRow, filter_params
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class _Examined:
    dimension: str  # 'part': an index range read; 'scope' or 'worker': a group of the keys examined
    part: int | None  # the index range (stuck keys: 1 unleased, 2 leased)
    scope: str | None
    claimed_by: str | None
    count: int  # keys examined: of the range, or of the group
    matching: int  # of them, how many match the operator's filters


@dataclass(frozen=True)
class _Cell:
    dimension: str  # 'scope' or 'worker'
    name: str | None  # a worker is NULL for a key never claimed
    count: int


@dataclass(frozen=True)
class Group:
    name: str | None
    count: int


@dataclass(frozen=True)
class Breakdown:
    total: int  # the rows broken down (0 when too_many)
    too_many: bool  # more than ``cap`` rows match: not broken down
    cap: int
    by_scope: list[Group] = field(default_factory=list)  # worst first, then by name
    by_worker: list[Group] = field(default_factory=list)
    # the keys of the page shown only (a stuck list filtered by suggested outcome: each key's outcome costs an
    # outbox lookup, so only the page's keys are looked up, as its suggestion groups are)
    page_only: bool = False
    # the counts are a lower bound: other pages (page_only), or keys of a processing tab past the cap + 1 examined
    # (a filter tested on the first cap + 1 keys of each index range only: an incident's size bounds no read)
    more: bool = False

    def top(self, dimension: str, n: int) -> tuple[list[Group], int, int]:
        """The ``n`` largest groups of ``dimension`` ('scope' or 'worker'), with how many groups and keys are left
        out ("and 3 more scopes, 12 keys")."""
        groups = self.by_scope if dimension == "scope" else self.by_worker
        rest = groups[n:]
        return groups[:n], len(rest), sum(g.count for g in rest)

    def to_json(self, n: int | None = None) -> dict[str, Any]:
        def cells(groups: list[Group], key: str) -> list[dict[str, Any]]:
            return [{key: g.name, "count": g.count} for g in (groups if n is None else groups[:n])]

        return {
            "total": self.total,
            "too_many": self.too_many,
            "cap": self.cap,
            "by_scope": cells(self.by_scope, "scope"),
            "by_worker": cells(self.by_worker, "worker"),
            "page_only": self.page_only,
            "more": self.more,
        }


def _worst_first(cells: list[_Cell], dimension: str) -> list[Group]:
    groups = [Group(c.name, c.count) for c in cells if c.dimension == dimension]
    # worst first; ties by name (a NULL worker last among equals)
    return sorted(groups, key=lambda g: (-g.count, g.name is None, g.name or ""))


def break_down_rows(rows: Sequence[KeyRow], *, cap: int, more: bool) -> Breakdown:
    """The rows of one page per scope and per worker (no query: the page has read them)."""
    cells = [_Cell("scope", name, n) for name, n in Counter(r.scope for r in rows).items()]
    cells += [_Cell("worker", name, n) for name, n in Counter(r.claimed_by for r in rows).items()]
    return Breakdown(
        len(rows), False, cap, _worst_first(cells, "scope"), _worst_first(cells, "worker"), page_only=True, more=more
    )


def break_down_keys(
    conn: psycopg.Connection, tables: Tables, flt: KeyFilter, *, lease_seconds: int, hotspot_min_attempts: int, cap: int
) -> Breakdown:
    """The keys of ``flt``'s tab matching every filter of it, per scope and per worker, when at most ``cap``
    match; else ``too_many`` with no groups. A processing tab's filters are tested on at most ``cap`` + 1 keys of
    each of its index ranges (``more`` when a range held more). Not for a suggested outcome: its breakdown is of
    the page shown (``break_down_rows``)."""
    if flt.suggested is not None:
        raise ValueError("a stuck list filtered by suggested outcome is broken down over its page: break_down_rows")
    params = filter_params(flt, lease_seconds=lease_seconds, hotspot_min_attempts=hotspot_min_attempts)
    if flt.status not in LEASE_TABS:
        query = status_breakdown_statement(tables, oldest_first=flt.scope is not None)
        cells = select_all(conn, query, params | {"cap": cap}, _Cell)
        cut = False
    else:
        name = "breakdown_stuck_keys" if flt.status == "stuck" else "breakdown_processing_keys"
        examined = select_all(conn, statement(name, tables), params | {"cap": cap}, _Examined)
        per_part = Counter[int | None]()
        by_scope, by_worker = Counter[str | None](), Counter[str | None]()
        for e in examined:
            if e.dimension == "part":
                per_part[e.part] += e.count
            elif e.matching and e.dimension == "scope":
                by_scope[e.scope] += e.matching
            elif e.matching:
                by_worker[e.claimed_by] += e.matching
        cells = [_Cell("scope", n, c) for n, c in by_scope.items()] + [
            _Cell("worker", n, c) for n, c in by_worker.items()
        ]
        cut = any(n > cap for n in per_part.values())  # a range held more keys than were examined
    total = sum(c.count for c in cells if c.dimension == "scope")
    if total > cap:
        return Breakdown(0, True, cap)
    return Breakdown(total, False, cap, _worst_first(cells, "scope"), _worst_first(cells, "worker"), more=cut)


@functools.lru_cache(maxsize=64)
def status_breakdown_statement(tables: Tables, *, oldest_first: bool) -> Statement:
    """A terminal or failed tab's breakdown. With a scope given, the keys examined are the oldest changed first: the
    terminal-scope index read backward, whose old entries sit on all-visible pages and are read index-only; the newest
    first are on pages the application changed lately, a heap read each (at 100M keys, the succeeded keys of one scope:
    8,488 pages against 121). Without a scope no index gives that order cheaply, and none is asked for. Under the cap
    every matching key is examined either way."""
    order = _OLDEST_CHANGED_FIRST if oldest_first else sql.SQL("")
    return statement("breakdown_status_keys", tables, examined_order=order)


_OLDEST_CHANGED_FIRST = sql.SQL("ORDER BY k.updated_at")
