"""One purge batch (or dry-run chunk) as one statement, and which order a table's batches can take.

A batch selects the next due rows after a cursor with ``FOR UPDATE SKIP LOCKED``, deletes exactly those (by
``ctid``, with the eligibility checked again) and adds itself to the run's ``idemdash.purge_run`` row, so
progress and deletions commit together. A dry-run chunk counts the same rows in the same order without locking
or deleting.

Two orders (DESIGN section 5):

- **due order** (``delete_expired_keys``, ...): the order rows became due, through an index of due rows (keys
  by ``expires_at`` of terminal rows, inbox by ``processed_at``, outbox by ``published_at``). A run reads only
  due rows and stops where the due rows end; rows that became due together sit together in the heap, so a
  batch dirties few pages.
- **key order** (``..._by_key``): the primary key, walked from end to end, every row read to test it. The
  fallback when no index delivers the due order (``due_index`` says which applies).

The statements run unprepared so that each is planned with its cursor and limit known (the ``IS NULL`` of the
first batch folds away and the index drives the scan). ``relation`` names a partition to run on instead of
the configured table: a partitioned table is purged partition by partition (``ctid`` is only unique within
one).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from idemdash.queries import Statement, Tables, statement

DUE, BY_KEY = "due_index", "primary_key"

# statement per (table, dry run, order)
_STATEMENTS = {
    ("keys", False, DUE): "delete_expired_keys", ("keys", True, DUE): "count_expired_keys",
    ("inbox", False, DUE): "delete_old_inbox_rows", ("inbox", True, DUE): "count_old_inbox_rows",
    ("outbox", False, DUE): "delete_old_published_outbox_rows", ("outbox", True, DUE): "count_old_published_outbox_rows",
    ("keys", False, BY_KEY): "delete_expired_keys_by_key", ("keys", True, BY_KEY): "count_expired_keys_by_key",
    ("inbox", False, BY_KEY): "delete_old_inbox_rows_by_key", ("inbox", True, BY_KEY): "count_old_inbox_rows_by_key",
    ("outbox", False, BY_KEY): "delete_old_published_outbox_rows_by_key",
    ("outbox", True, BY_KEY): "count_old_published_outbox_rows_by_key",
}

# One to three cursor columns: a time (due order), text keys, or an outbox_id.
CursorValue = str | uuid.UUID | datetime | None
Cursor = tuple[CursorValue, CursorValue, CursorValue]


@dataclass(frozen=True)
class Batch:
    """What one batch deleted (or one dry-run chunk counted) and the cursor after it (the last row it took)."""

    rows: int                # deleted (dry run: counted)
    taken: int               # rows the ordered scan returned; fewer than the limit: no more due rows
    after_1: CursorValue
    after_2: CursorValue
    after_3: CursorValue

    @property
    def after(self) -> Cursor | None:
        return None if self.after_1 is None else (self.after_1, self.after_2, self.after_3)


def statement_name(table: str, dry_run: bool, order: str) -> str:
    return _STATEMENTS[(table, dry_run, order)]


def _render(table: str, name: str, tables: Tables, relation: sql.Composable | None) -> Statement:
    return statement(name, tables, **({table: relation} if relation is not None else {}))


def run_batch(conn: psycopg.Connection, tables: Tables, table: str, *, dry_run: bool, order: str, run_id: int,
              limit: int, after: Cursor | None, relation: sql.Composable | None = None, **predicate: Any) -> Batch:
    """One batch of ``table`` (``keys``, ``inbox`` or ``outbox``) in ``order``; ``predicate``: the table's
    ``retention_days`` or, for keys, ``replay_horizon_seconds``. Call inside the batch's transaction."""
    after_1, after_2, after_3 = after if after is not None else (None, None, None)
    params = {"run_id": run_id, "limit": limit, "after_1": after_1, "after_2": after_2, "after_3": after_3,
              **predicate}
    with conn.cursor(row_factory=class_row(Batch)) as cur:
        # prepare=False: planned with this batch's cursor and limit, never a generic plan
        cur.execute(_render(table, statement_name(table, dry_run, order), tables, relation), params, prepare=False)
        row = cur.fetchone()
    assert row is not None
    return row


def due_index(conn: psycopg.Connection, tables: Tables, table: str, *, limit: int,
              relation: sql.Composable | None = None, relation_name: str | None = None,
              **predicate: Any) -> str | None:
    """The index PostgreSQL would read the due rows through, in due order, or None (then batches walk the key).

    Asks the planner for the first dry-run chunk's plan: due order is used when the table (``relation_name``:
    the partition's bare name, when ``relation`` is one) is read by an index scan and no full sort follows it
    (an incremental sort within ties of the index's leading column is fine). Any index that does this counts,
    whatever its name; without one, a due-ordered batch would sort every due row of the table each time.
    """
    batch = _render(table, statement_name(table, True, DUE), tables, relation)
    params = {"run_id": 0, "limit": limit, "after_1": None, "after_2": None, "after_3": None, **predicate}
    row = conn.execute(statement("explain_purge_batch", batch=batch), params, prepare=False).fetchone()
    assert row is not None
    name = relation_name or getattr(tables, table)
    scans = [(node, above) for node, above in _nodes(row[0][0]["Plan"], ()) if node.get("Relation Name") == name]
    if len(scans) != 1:
        return None
    node, above = scans[0]
    if node["Node Type"] not in ("Index Scan", "Index Only Scan") or "Sort" in above:
        return None
    return node.get("Index Name")


def _nodes(plan: dict[str, Any], above: tuple[str, ...]):
    yield plan, above
    for child in plan.get("Plans", []):
        yield from _nodes(child, above + (plan["Node Type"],))
