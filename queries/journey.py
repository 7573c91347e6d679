"""A journey's reads in one database (queries/journey.sql): its key, the outbox rows of a key, id or aggregate id,
and the inbox rows of a set of message ids; and the recent window's outbox and inbox rows the routes are learned
from. Each is one statement per table, through the index idemdash advises for it (`idemdash check`).

A database is read through its profile: the reference tables by their configured names (``Tables``), a library's
by the tables ``idemdash detect`` found (``Found``), each through the profile's block ``<read>_<profile>``. A profile
without such a block records no message id the journey can follow (docs/profiles.md says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from idemdash.core.journey import Consumed, KeyStep, Sent
from idemdash.core.profiles.detect import Found
from idemdash.queries import QUERIES, Statement, Tables, statement
from idemdash.queries.profile_states import block_names
from idemdash.queries.search_text import as_uuid, spellings
from idemdash.queries.transactions import select_all

ROWS_LIMIT = 200  # rows a journey reads at most per table and database
MAX_CONSUMERS = 1000  # consumers of a reference inbox probed at most
ROUTES_SAMPLE = 2000  # rows per table the routes are learned from, newest first


@dataclass(frozen=True)
class Where:
    """Which tables of one database a journey reads: ``found`` for a library's, None for the reference tables."""

    profile: str
    tables: Tables
    found: Found | None
    library_zone: str = "UTC"


def _block(where: Where, read: str, role: str) -> Statement | None:
    name = f"{read}_{where.profile.replace('-', '_')}"
    if name not in QUERIES:
        return None
    if where.found is None:
        return statement(name, where.tables)
    names = block_names(where.found, role, name)
    return None if names is None else statement(name, None, **names)


def profile_follows(name: str) -> bool:
    """Whether the journey can follow a message through a database of profile ``name`` (it has a journey block)."""
    suffix = "_" + name.replace("-", "_")
    return any(
        block.endswith(suffix) and (block.startswith("journey_") or block.startswith("routes_")) for block in QUERIES
    )


def key_pairs(q: str) -> list[tuple[str, str]]:
    """The (scope, key) pairs ``scope/key`` may mean: split at each '/', since a scope or a key may hold one too;
    a pasted key page address (``…/keys/<scope>/<key>``) is its scope and key."""
    marker = q.find("/keys/")
    text = q[marker + len("/keys/") :] if marker >= 0 else q
    return [(text[:i], text[i + 1 :]) for i, c in enumerate(text) if c == "/" and 0 < i < len(text) - 1]


def _params(where: Where, ids: list[str], pairs: list[tuple[str, str]]) -> dict[str, Any]:
    texts = list(dict.fromkeys(s for i in ids for s in spellings(i)))
    return {
        "ids": texts,
        "uuids": list(dict.fromkeys(u for i in ids if (u := as_uuid(i)))),
        "scopes": [s for s, _ in pairs],
        "keys": [k for _, k in pairs],
        "limit": ROWS_LIMIT,
        "max_consumers": MAX_CONSUMERS,
        "library_zone": where.library_zone,
    }


def find_keys(conn: psycopg.Connection, where: Where, q: str, *, lease_seconds: int) -> list[KeyStep]:
    pairs = key_pairs(q)
    if where.found is not None or not pairs:
        return []  # the journey starts from the reference tables' keys
    return select_all(
        conn,
        statement("journey_keys_reference", where.tables),
        {**_params(where, [], pairs), "lease_seconds": lease_seconds},
        KeyStep,
    )


def find_sent(conn: psycopg.Connection, where: Where, q: str) -> list[Sent]:
    """Outbox rows whose message id (or, in the reference tables, aggregate id) is ``q``, or that key ``q`` wrote."""
    query = _block(where, "journey_sent", "outbox")
    if query is None:
        return []
    return select_all(conn, query, _params(where, [q], key_pairs(q)), Sent)


def find_consumed(conn: psycopg.Connection, where: Where, ids: list[str]) -> list[Consumed]:
    query = _block(where, "journey_consumed", "inbox")
    if query is None or not ids:
        return []
    return select_all(conn, query, _params(where, ids, []), Consumed)


def list_recent_sent(conn: psycopg.Connection, where: Where, since: datetime) -> list[Sent]:
    query = _block(where, "routes_sent", "outbox")
    if query is None:
        return []
    return select_all(conn, query, {"since": since, "limit": ROUTES_SAMPLE, "library_zone": where.library_zone}, Sent)


def list_recent_consumed(conn: psycopg.Connection, where: Where, since: datetime) -> list[Consumed]:
    query = _block(where, "routes_consumed", "inbox")
    if query is None:
        return []
    return select_all(
        conn, query, {"since": since, "limit": ROUTES_SAMPLE, "library_zone": where.library_zone}, Consumed
    )
