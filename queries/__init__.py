"""Every SQL statement idemdash runs, as named blocks in ``queries/*.sql``.

A block starts with ``-- name --`` on a line of its own, then a one-line
``-- description``, then the statement. Blocks are read once, at import.

Statements over the application's tables name them ``{keys}``, ``{inbox}``
``{outbox}`` (schema-qualified) or ``{schema}``; those are filled in with
``psycopg.sql.Identifier`` from the configured names, never by string
formatting. A literal brace in such a block is written ``{{`` / ``}}``.
Values are always bound parameters (``%(name)s``).

A rule several statements share is written once, as a block of its own (a
fragment: an expression, not a statement), and a statement names it as a field:
``WHERE {purgeable_keys}``. A field that names a block and is not passed by the
caller is filled with that block, rendered with the same tables and identifiers.

A word written once in Python (core/statuses.py) that a statement needs is a field
of ``CONSTANTS``: ``claimed_by = {review_holder}``, filled in as a literal.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from string import Formatter

from psycopg import sql

from idemdash.core.settings import Settings
from idemdash.core.statuses import REVIEW_HOLDER

_HEADER = re.compile(r"^-- ([a-z][a-z0-9_]*) --\n-- (.+)\n", re.MULTILINE)
_BARE_HEADER = re.compile(r"^-- ([a-z][a-z0-9_]*) --$", re.MULTILINE)


@dataclass(frozen=True)
class Query:
    name: str
    description: str
    text: str
    source: str


def _parse(source: str, text: str) -> dict[str, Query]:
    found: dict[str, Query] = {}
    headers = list(_HEADER.finditer(text))
    # A header line without its description line would silently become part of the previous block.
    complete = {m.start() for m in headers}
    for bare in _BARE_HEADER.finditer(text):
        if bare.start() not in complete:
            raise ValueError(f"{source}: query {bare.group(1)!r} needs a one-line '-- description' under its name")
    if headers and text[: headers[0].start()].strip():
        raise ValueError(f"{source}: text before the first '-- name --' header")
    for i, match in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[match.end() : end].strip()
        name = match.group(1)
        if not body:
            raise ValueError(f"{source}: query {name!r} has no statement")
        if name in found:
            raise ValueError(f"{source}: query {name!r} defined twice")
        found[name] = Query(name, match.group(2).strip(), body, source)
    return found


def load_all(package: str = __name__) -> dict[str, Query]:
    """Every named block of the ``*.sql`` files directly in ``package`` (not its subpackages)."""
    queries: dict[str, Query] = {}
    for entry in sorted(resources.files(package).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        for name, query in _parse(entry.name, entry.read_text(encoding="utf-8")).items():
            if name in queries:
                raise ValueError(f"query {name!r} is in both {queries[name].source} and {entry.name}")
            queries[name] = query
    return queries


QUERIES = load_all()


@dataclass(frozen=True)
class Tables:
    """The configured names of the application's three tables."""

    schema: str = "app"
    keys: str = "idempotency_request"
    inbox: str = "processed_message"
    outbox: str = "outbox_event"

    def __post_init__(self) -> None:
        for field_name in ("schema", "keys", "inbox", "outbox"):
            name = getattr(self, field_name)
            # psycopg would read a '%' inside a quoted name as a parameter placeholder
            if not name or "%" in name or "\x00" in name:
                raise ValueError(f"table name setting {field_name}={name!r} must be non-empty and contain no '%'")

    @classmethod
    def from_config(cls, config: Settings) -> Tables:
        return cls(config.app_schema, config.keys_table, config.inbox_table, config.outbox_table)

    def identifiers(self) -> dict[str, sql.Composable]:
        return {
            "schema": sql.Identifier(self.schema),
            "keys": sql.Identifier(self.schema, self.keys),
            "inbox": sql.Identifier(self.schema, self.inbox),
            "outbox": sql.Identifier(self.schema, self.outbox),
        }


# What statement() gives: a whole statement psycopg can execute (a bare Composable may be a mere fragment).
Statement = sql.SQL | sql.Composed


# Filled in as literals, not bound: a partial index's predicate (queries/indexes.sql) must match the statement's own
# text for the planner to use the index, which a parameter does not under a generic plan.
CONSTANTS: dict[str, sql.Composable] = {"review_holder": sql.Literal(REVIEW_HOLDER)}


def statement(name: str, tables: Tables | None = None, **identifiers: sql.Composable) -> Statement:
    """The named statement, with table identifiers filled in when ``tables`` is given."""
    if identifiers:
        return render(QUERIES[name], tables, **identifiers)
    return _rendered(name, tables)


@functools.lru_cache(maxsize=4096)
def _rendered(name: str, tables: Tables | None) -> Statement:
    """A statement named with no identifiers but the tables', rendered once: it is a function of the name (the blocks
    are read once, at import) and of the frozen ``Tables``, so nothing can make a kept one stale. A page ran about 20
    renders a request (each parsing its text and its fragments' three times over); a fleet's databases that share
    table names share the entries, and the least used go past the size."""
    return render(QUERIES[name], tables)


def render(query: Query, tables: Tables | None = None, **identifiers: sql.Composable) -> Statement:
    text = query.text
    fragments = [f for f in fragment_fields(text) if f not in identifiers]
    constants = {f: CONSTANTS[f] for _, f, _, _ in Formatter().parse(text) if f in CONSTANTS and f not in identifiers}
    if tables is None and not identifiers and not fragments and not constants:
        return sql.SQL(text)
    names = tables.identifiers() if tables is not None else {}
    names.update(constants)
    names.update(identifiers)
    for field in fragments:
        names[field] = render(QUERIES[field], tables, **identifiers)
    return sql.SQL(text).format(**names)


def fragment_fields(text: str) -> list[str]:
    """The format fields of ``text`` that name another block (a shared fragment)."""
    return [field for _, field, _, _ in Formatter().parse(text) if field and field in QUERIES]
