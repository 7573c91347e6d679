"""Find a key from text someone pasted: the exact key in any scope, keys by prefix, scopes and workers by name,
outbox rows by their id or their aggregate's, inbox rows by message id, and the nearest keys when nothing matches.

The text is forgiven what a paste adds: surrounding white space is trimmed (by the caller), and a UUID-shaped text
is looked for as typed, in lower and in upper case (one primary-key probe each).

Every lookup walks the primary key ``(idempotency_scope, idempotency_key)``: the scopes come from a loose index
scan of it (``list_scopes``), and each scope is then probed for the key, or walked from the prefix for a bounded
number of entries. This is what PostgreSQL 18's skip scan does for ``WHERE idempotency_key = $1``, written out
so that it works on every version and the plan cannot flip to a sequential scan on a table with many scopes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

import psycopg
from psycopg import sql
from pydantic import Field

from idemdash.core.statuses import KeyStatus
from idemdash.queries import Tables, statement
from idemdash.queries.keys import list_scopes
from idemdash.queries.search_text import as_uuid, candidate_pairs, common_prefix, spellings
from idemdash.queries.transactions import select_all, select_one

# Scopes probed for a key at most (the loose index scan stops there); the answer says when there were more.
MAX_SCOPES = 1000
# Keys a prefix search returns at most, in all and per scope, and primary-key entries it reads per scope.
PREFIX_LIMIT = 50
PREFIX_PER_SCOPE_ACROSS = 5
PREFIX_EXAMINE = 500
# Processing keys whose workers are offered as suggestions (those with the latest leases).
WORKER_SAMPLE = 2000
# Succeeded keys (and processing keys at each end of the lease order) whose owners a search looks among; owners of
# failed keys read at most (one index descent each); owner names read at most in all.
OWNER_SAMPLE = 2000
MAX_FAILING_OWNERS = 2000
OWNERS_READ = 10000
NAMES_SHOWN = 20
# Outbox and inbox rows a search lists at most; inbox consumers it probes at most.
OTHER_ROWS_LIMIT = 20
MAX_CONSUMERS = 1000
# Nearest keys offered when nothing matches.
NEAREST_SHOWN = 5
# How a search matched its text: a key exactly, keys by prefix, or none
SearchMatch = Literal["exact", "prefix", "none"]


@dataclass(frozen=True)
class SearchHit:
    scope: str
    key: str
    status: KeyStatus
    claimed_by: str | None
    attempt_count: int
    locked_until: datetime | None
    updated_at: datetime
    stuck: bool


@dataclass(frozen=True)
class Worker:
    name: str


@dataclass(frozen=True)
class OutboxHit:
    outbox_id: str
    event_type: str
    status: str
    scope: str | None
    key: str | None
    aggregate_type: str
    aggregate_id: str
    created_at: datetime
    matched: Annotated[Literal["outbox_id", "aggregate_id"], Field(description="Which column q matched.")]


@dataclass(frozen=True)
class MessageHit:
    consumer: str
    message_id: str
    processed_at: datetime


@dataclass(frozen=True)
class NearKey:
    scope: str
    key: str
    common_prefix: Annotated[str, Field(description="What the key and q share from the start.")]


@dataclass(frozen=True)
class SearchResult:
    q: str
    scope: str | None
    match: SearchMatch
    items: list[SearchHit]
    scopes: list[str]  # scope names containing q (any case)
    workers: list[str]  # the worker named q (first), and those containing q: see find_owners
    scopes_searched: int
    scopes_truncated: bool  # more scopes exist than MAX_SCOPES: keys in those were not looked for
    prefix_limited: bool = field(default=False)  # the prefix list may go on: type more of the key
    outbox: list[OutboxHit] = field(default_factory=list)  # outbox rows with this id or aggregate id
    messages: list[MessageHit] = field(default_factory=list)  # inbox rows with this message id
    nearest: list[NearKey] = field(default_factory=list)  # when nothing matches: the keys nearest in key order


def find_keys_exact(
    conn: psycopg.Connection, tables: Tables, pairs: list[tuple[str, str]], *, lease_seconds: int
) -> list[SearchHit]:
    if not pairs:
        return []
    return select_all(
        conn,
        statement("find_keys_exact", tables),
        {"scopes": [s for s, _ in pairs], "keys": [k for _, k in pairs], "lease_seconds": lease_seconds},
        SearchHit,
    )


def list_keys_with_prefix(
    conn: psycopg.Connection,
    tables: Tables,
    scopes: list[str],
    prefix: str,
    *,
    per_scope: int,
    lease_seconds: int,
    examine: int = PREFIX_EXAMINE,
) -> list[SearchHit]:
    if not scopes:
        return []
    return select_all(
        conn,
        statement("list_keys_with_prefix", tables),
        {
            "scopes": scopes,
            "prefix": prefix,
            "per_scope": per_scope,
            "examine": examine,
            "lease_seconds": lease_seconds,
        },
        SearchHit,
    )


def list_recent_workers(
    conn: psycopg.Connection, tables: Tables, *, sample: int = WORKER_SAMPLE, limit: int = 200
) -> list[str]:
    return [
        w.name
        for w in select_all(conn, statement("list_recent_workers", tables), {"sample": sample, "limit": limit}, Worker)
    ]


@dataclass(frozen=True)
class _Found:
    found: bool


def list_recent_owners(
    conn: psycopg.Connection,
    tables: Tables,
    *,
    sample: int | None = None,
    max_failing: int | None = None,
    limit: int = OWNERS_READ,
) -> list[str]:
    """Owners of keys in every state, by name, read through the indexes within bounds: every owner of a failed key
    (at most ``max_failing``, MAX_FAILING_OWNERS), and those of the latest ``sample`` (OWNER_SAMPLE) succeeded keys
    and of the processing keys at each end of the lease order."""
    return [
        w.name
        for w in select_all(
            conn,
            statement("list_recent_owners", tables),
            {"sample": sample or OWNER_SAMPLE, "limit": limit, "max_failing": max_failing or MAX_FAILING_OWNERS},
            Worker,
        )
    ]


def find_failing_owner(conn: psycopg.Connection, tables: Tables, name: str) -> bool:
    row = select_one(conn, statement("find_failing_owner", tables), {"name": name}, _Found)
    return bool(row and row.found)


def find_owners(conn: psycopg.Connection, tables: Tables, q: str) -> list[str]:
    """Workers named ``q`` exactly (first), then those whose name contains it (ignoring case), at most NAMES_SHOWN,
    whatever their keys' state (``list_recent_owners``); by its exact name, any owner of a failed key."""
    recent = list_recent_owners(conn, tables)
    exact = [q] if q in recent or find_failing_owner(conn, tables, q) else []
    return list(dict.fromkeys(exact + _containing(q, recent)))[:NAMES_SHOWN]


def find_outbox_rows(conn: psycopg.Connection, tables: Tables, q: str) -> list[OutboxHit]:
    """Outbox rows whose id is the text, then those of the aggregate it names (both only for a UUID)."""
    uuid_text = as_uuid(q)
    if uuid_text is None:
        return []
    for column in ("outbox_id", "aggregate_id"):
        rows = select_all(
            conn,
            statement("find_outbox_rows", tables, column=sql.Identifier(column)),
            {"ids": [uuid_text], "limit": OTHER_ROWS_LIMIT, "matched": column},
            OutboxHit,
        )
        if rows:
            return rows
    return []


def find_inbox_messages(conn: psycopg.Connection, tables: Tables, q: str) -> list[MessageHit]:
    return select_all(
        conn,
        statement("find_inbox_messages", tables),
        {"ids": spellings(q), "max_consumers": MAX_CONSUMERS, "limit": OTHER_ROWS_LIMIT},
        MessageHit,
    )


def list_nearest_keys(conn: psycopg.Connection, tables: Tables, scopes: list[str], q: str) -> list[NearKey]:
    """The keys nearest the text in each scope's key order, those sharing the longest start with it first."""
    if not scopes:
        return []
    found = select_all(conn, statement("list_nearest_keys", tables), {"scopes": scopes, "q": q}, _ScopedKey)
    near = [NearKey(f.scope, f.key, common_prefix(q, f.key)) for f in found]
    near = [n for n in near if n.common_prefix]
    near.sort(key=lambda n: (-len(n.common_prefix), n.scope, n.key))
    return near[:NEAREST_SHOWN]


@dataclass(frozen=True)
class _ScopedKey:
    scope: str
    key: str


def _containing(q: str, names: list[str]) -> list[str]:
    needle = q.casefold()
    return [n for n in names if needle in n.casefold()][:NAMES_SHOWN]


def search_keys(
    conn: psycopg.Connection,
    tables: Tables,
    q: str,
    *,
    scope: str | None = None,
    lease_seconds: int,
    typed: str | None = None,
) -> SearchResult:
    """The exact key (in ``scope``, or in every scope); failing that, keys starting with ``q``. ``typed`` is the
    text before its surrounding white space was trimmed: a key that really has such white space is found too."""
    known = list_scopes(conn, tables, limit=MAX_SCOPES + 1)
    truncated = len(known) > MAX_SCOPES
    known = known[:MAX_SCOPES]
    scopes = [scope] if scope is not None else known
    pairs = [(scope, text) for text in spellings(q)] if scope is not None else candidate_pairs(q, scopes)
    if typed is not None and typed != q:
        pairs += [(s, typed) for s in scopes]
    exact = find_keys_exact(conn, tables, pairs, lease_seconds=lease_seconds)
    workers = find_owners(conn, tables, q) if scope is None else []
    matching_scopes = _containing(q, known) if scope is None else []
    others: dict[str, Any] = {}
    if scope is None:
        others = {"outbox": find_outbox_rows(conn, tables, q), "messages": find_inbox_messages(conn, tables, q)}
    if exact:
        return SearchResult(q, scope, "exact", exact, matching_scopes, workers, len(scopes), truncated, **others)
    per_scope = PREFIX_LIMIT if scope is not None else PREFIX_PER_SCOPE_ACROSS
    found = list_keys_with_prefix(conn, tables, scopes, q, per_scope=per_scope + 1, lease_seconds=lease_seconds)
    by_scope: dict[str, list[SearchHit]] = {}
    for hit in found:
        by_scope.setdefault(hit.scope, []).append(hit)
    limited = any(len(hits) > per_scope for hits in by_scope.values())
    items = [hit for hits in by_scope.values() for hit in hits[:per_scope]][:PREFIX_LIMIT]
    nothing = not (items or matching_scopes or workers or others.get("outbox") or others.get("messages"))
    nearest = list_nearest_keys(conn, tables, scopes, q) if nothing else []
    return SearchResult(
        q,
        scope,
        "prefix" if items else "none",
        items,
        matching_scopes,
        workers,
        len(scopes),
        truncated,
        prefix_limited=limited or len(found) > PREFIX_LIMIT,
        nearest=nearest,
        **others,
    )
