"""Find a key from text someone pasted: the exact key in any scope, keys by prefix, scopes and workers by name.

Every lookup walks the primary key ``(idempotency_scope, idempotency_key)``: the scopes come from a loose index
scan of it (``list_scopes``), and each scope is then probed for the key, or walked from the prefix for a bounded
number of entries. This is what PostgreSQL 18's skip scan does for ``WHERE idempotency_key = $1``, written out
so that it works on every version and the plan cannot flip to a sequential scan on a table with many scopes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import unquote, urlsplit

import psycopg

from idemdash.queries import Tables, statement
from idemdash.queries.keys import list_scopes
from idemdash.queries.transactions import select_all

# Scopes probed for a key at most (the loose index scan stops there); the answer says when there were more.
MAX_SCOPES = 1000
# Keys a prefix search returns at most, in all and per scope, and primary-key entries it reads per scope.
PREFIX_LIMIT = 50
PREFIX_PER_SCOPE_ACROSS = 5
PREFIX_EXAMINE = 500
# Processing keys whose workers are offered as suggestions (those with the latest leases).
WORKER_SAMPLE = 2000
NAMES_SHOWN = 20


@dataclass(frozen=True)
class SearchHit:
    scope: str
    key: str
    status: str
    claimed_by: str | None
    attempt_count: int
    locked_until: datetime | None
    updated_at: datetime
    stuck: bool


@dataclass(frozen=True)
class Worker:
    name: str


@dataclass(frozen=True)
class SearchResult:
    q: str
    scope: str | None
    match: str                        # 'exact', 'prefix' or 'none'
    items: list[SearchHit]
    scopes: list[str]                 # scope names containing q (any case)
    workers: list[str]                # worker names containing q, among the workers of recent processing keys
    scopes_searched: int
    scopes_truncated: bool            # more scopes exist than MAX_SCOPES: keys in those were not looked for
    prefix_limited: bool = field(default=False)   # the prefix list may go on: type more of the key


def find_keys_exact(conn: psycopg.Connection, tables: Tables, pairs: list[tuple[str, str]], *,
                    lease_seconds: int) -> list[SearchHit]:
    if not pairs:
        return []
    return select_all(conn, statement("find_keys_exact", tables),
                      {"scopes": [s for s, _ in pairs], "keys": [k for _, k in pairs], "lease_seconds": lease_seconds},
                      SearchHit)


def list_keys_with_prefix(conn: psycopg.Connection, tables: Tables, scopes: list[str], prefix: str, *,
                          per_scope: int, lease_seconds: int, examine: int = PREFIX_EXAMINE) -> list[SearchHit]:
    if not scopes:
        return []
    return select_all(conn, statement("list_keys_with_prefix", tables),
                      {"scopes": scopes, "prefix": prefix, "per_scope": per_scope, "examine": examine,
                       "lease_seconds": lease_seconds}, SearchHit)


def list_recent_workers(conn: psycopg.Connection, tables: Tables, *, sample: int = WORKER_SAMPLE,
                        limit: int = 200) -> list[str]:
    return [w.name for w in select_all(conn, statement("list_recent_workers", tables),
                                       {"sample": sample, "limit": limit}, Worker)]


def candidate_pairs(q: str, scopes: list[str]) -> list[tuple[str, str]]:
    """(scope, key) pairs the text may mean: the key itself in every scope; ``scope/key`` or ``scope key`` when it
    starts with a scope's name; the scope and key of a pasted idemdash key URL (``…/keys/<scope>/<key>``)."""
    pairs = [(scope, q) for scope in scopes]
    for scope in scopes:
        for separator in ("/", " "):
            if q.startswith(scope + separator) and len(q) > len(scope) + 1:
                pairs.append((scope, q[len(scope) + 1:]))
    path = urlsplit(q).path if "://" in q else q
    marker = path.find("/keys/")
    if marker >= 0:
        scope, _, key = path[marker + len("/keys/"):].partition("/")
        if scope and key:
            pairs.append((unquote(scope), unquote(key)))
    return list(dict.fromkeys(pairs))


def _containing(q: str, names: list[str]) -> list[str]:
    needle = q.casefold()
    return [n for n in names if needle in n.casefold()][:NAMES_SHOWN]


def search_keys(conn: psycopg.Connection, tables: Tables, q: str, *, scope: str | None = None,
                lease_seconds: int) -> SearchResult:
    """The exact key (in ``scope``, or in every scope); failing that, keys starting with ``q``."""
    known = list_scopes(conn, tables, limit=MAX_SCOPES + 1)
    truncated = len(known) > MAX_SCOPES
    known = known[:MAX_SCOPES]
    scopes = [scope] if scope is not None else known
    exact = find_keys_exact(conn, tables, [(scope, q)] if scope is not None else candidate_pairs(q, scopes),
                            lease_seconds=lease_seconds)
    workers = _containing(q, list_recent_workers(conn, tables)) if scope is None else []
    matching_scopes = _containing(q, known) if scope is None else []
    if exact:
        return SearchResult(q, scope, "exact", exact, matching_scopes, workers, len(scopes), truncated)
    per_scope = PREFIX_LIMIT if scope is not None else PREFIX_PER_SCOPE_ACROSS
    found = list_keys_with_prefix(conn, tables, scopes, q, per_scope=per_scope + 1, lease_seconds=lease_seconds)
    by_scope: dict[str, list[SearchHit]] = {}
    for hit in found:
        by_scope.setdefault(hit.scope, []).append(hit)
    limited = any(len(hits) > per_scope for hits in by_scope.values())
    items = [hit for hits in by_scope.values() for hit in hits[:per_scope]][:PREFIX_LIMIT]
    return SearchResult(q, scope, "prefix" if items else "none", items, matching_scopes, workers, len(scopes),
                        truncated, prefix_limited=limited or len(found) > PREFIX_LIMIT)
