"""One purge batch (or dry-run chunk) as one statement, and which order a table's batches can take.

A batch selects the next due rows after a cursor with ``FOR UPDATE SKIP LOCKED``, deletes exactly those (by
``ctid``, with the eligibility checked again) and adds itself to the run's ``idemdash.purge_run`` row, so
progress and deletions commit together. A dry-run chunk counts the same rows in the same order without locking
or deleting.

Both are one statement each (``purge_batch``, ``count_purge_batch``), filled in with the table's eligibility
(the ``purgeable_<table>`` fragment, the same one the partition checks use) and the columns of one of two orders
(docs/concepts.md, Purge orders):

- **due order**: the order rows became due, through an index of due rows (keys
  by ``expires_at`` of terminal rows, inbox by ``processed_at``, outbox by ``published_at``). A run reads only
  due rows and stops where the due rows end; rows that became due together sit together in the heap, so a
  batch dirties few pages.
- **key order**: the primary key, walked from end to end, every row read to test it. The
  fallback when no index delivers the due order (``due_index`` says which applies).
- **heap order**: the table's pages as they lie on disk, a range of pages a batch (a TID Range Scan), every row
  on them tested. For a table whose rows are mostly due (``due_share``): each page is read and dirtied once per
  run, where due order visits a page once for each of its rows, through the index.

The statements run unprepared so that each is planned with its cursor and limit known (the first batch's
``NOT has_cursor`` folds away and the index drives the scan). ``relation`` names a partition to run on instead of
the configured table: a partitioned table is purged partition by partition (``ctid`` is only unique within
one).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast

import psycopg
from psycopg import sql

from idemdash.core.statuses import PurgeMethod
from idemdash.queries import Statement, Tables, statement

DUE: Final[PurgeMethod] = "due_index"
BY_KEY: Final[PurgeMethod] = "primary_key"
HEAP: Final[PurgeMethod] = "heap"

# The columns each (table, order) walks, in that order: the due order leads with the column that says when a row
# became due, the key order is the primary key. A batch's cursor holds one value per column.
ORDERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("keys", DUE): ("expires_at", "idempotency_scope", "idempotency_key"),
    ("inbox", DUE): ("processed_at", "consumer_name", "message_id"),
    ("outbox", DUE): ("published_at", "outbox_id"),
    ("keys", BY_KEY): ("idempotency_scope", "idempotency_key"),
    ("inbox", BY_KEY): ("consumer_name", "message_id"),
    ("outbox", BY_KEY): ("outbox_id",),
}

# What a batch checks again on the rows it locked, when less than the whole eligibility: a key's own row (an
# operator's decision is never made on a terminal key, so the audit log need not be read again).
RECHECK = {"keys": "expired_keys"}

# One to three cursor columns: a time (due order), text keys, or an outbox_id.
CursorValue = str | uuid.UUID | datetime | None
Cursor = tuple[CursorValue, CursorValue, CursorValue]


@dataclass(frozen=True)
class Batch:
    """What one batch deleted (or one dry-run chunk counted) and the cursor after it (the last row it took)."""

    rows: int  # deleted (dry run: counted)
    taken: int  # rows the ordered scan returned; fewer than the limit: no more due rows
    after_1: CursorValue
    after_2: CursorValue = None
    after_3: CursorValue = None

    @property
    def after(self) -> Cursor | None:
        return None if self.after_1 is None else (self.after_1, self.after_2, self.after_3)


def batch_statement(
    tables: Tables, table: str, *, dry_run: bool, order: str, relation: sql.Composable | None = None
) -> Statement:
    """The batch (or dry-run chunk) of ``table`` in ``order``: the one batch statement with the table's eligibility
    (``purgeable_<table>``) and the order's columns filled in; ``relation``: a partition to run on instead."""
    target = relation if relation is not None else tables.identifiers()[table]
    columns = ORDERS[(table, order)]
    return statement(
        "count_purge_batch" if dry_run else "purge_batch",
        tables,
        relation=target,
        purgeable=statement(f"purgeable_{table}", tables, **{table: target}),
        delete_doomed=_delete_doomed(tables, table, target),
        columns=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        cursor=sql.SQL(", ").join(sql.Placeholder(f"after_{i}") for i in range(1, len(columns) + 1)),
    )


def _delete_doomed(tables: Tables, table: str, target: sql.Composable) -> Statement:
    return statement(
        "delete_doomed",
        tables,
        relation=target,
        recheck=statement(RECHECK.get(table, f"purgeable_{table}"), tables, **{table: target}),
    )


def _params(run_id: int, limit: int, after: Cursor | None, predicate: dict[str, Any]) -> dict[str, Any]:
    after_1, after_2, after_3 = after if after is not None else (None, None, None)
    return {
        "run_id": run_id,
        "limit": limit,
        "has_cursor": after is not None,
        "after_1": after_1,
        "after_2": after_2,
        "after_3": after_3,
        **predicate,
    }


def run_batch(
    conn: psycopg.Connection,
    tables: Tables,
    table: str,
    *,
    dry_run: bool,
    order: str,
    run_id: int,
    limit: int,
    after: Cursor | None,
    relation: sql.Composable | None = None,
    **predicate: Any,
) -> Batch:
    """One batch of ``table`` (``keys``, ``inbox`` or ``outbox``) in ``order``; ``predicate``: the table's
    ``retention_days`` or, for keys, ``replay_horizon_seconds``. Call inside the batch's transaction."""
    query = batch_statement(tables, table, dry_run=dry_run, order=order, relation=relation)
    # prepare=False: planned with this batch's cursor and limit, never a generic plan
    row = conn.execute(query, _params(run_id, limit, after, predicate), prepare=False).fetchone()
    assert row is not None
    return Batch(*row)


def due_index(
    conn: psycopg.Connection,
    tables: Tables,
    table: str,
    *,
    limit: int,
    relation: sql.Composable | None = None,
    relation_name: str | None = None,
    **predicate: Any,
) -> str | None:
    """The index PostgreSQL would read the due rows through, in due order, or None (then batches walk the key).

    Asks the planner for the first dry-run chunk's plan: due order is used when the table (``relation_name``:
    the partition's bare name, when ``relation`` is one) is read by an index scan and no full sort follows it
    (an incremental sort within ties of the index's leading column is fine). Any index that does this counts,
    whatever its name; without one, a due-ordered batch would sort every due row of the table each time.
    """
    batch = batch_statement(tables, table, dry_run=True, order=DUE, relation=relation)
    row = conn.execute(
        statement("explain_purge_batch", batch=batch), _params(0, limit, None, predicate), prepare=False
    ).fetchone()
    assert row is not None
    name = relation_name or getattr(tables, table)
    scans = [(node, above) for node, above in _nodes(row[0][0]["Plan"], ()) if node.get("Relation Name") == name]
    if len(scans) != 1:
        return None
    node, above = scans[0]
    if node["Node Type"] not in ("Index Scan", "Index Only Scan") or "Sort" in above:
        return None
    return cast(str | None, node.get("Index Name"))


@dataclass(frozen=True)
class HeapShape:
    pages: int  # heap pages now (a heap-order run ends there)
    rows_per_page: float | None  # on average, from the last ANALYZE or VACUUM; None: never counted
    rows: float  # the table's estimated rows


def heap_shape(conn: psycopg.Connection, relation: str) -> HeapShape:
    """``relation``: the table's qualified name, quoted as SQL (``Identifier.as_string``)."""
    row = conn.execute(statement("heap_shape"), {"relation": relation}).fetchone()
    assert row is not None
    return HeapShape(*row)


# A table at least this share due is purged in heap order (docs/concepts.md, Purge orders): one pass over its pages
# deletes a due row for about half the CPU of due order's index walk, and dirties each page once.
HEAP_SHARE = 0.5


@dataclass(frozen=True)
class BatchOrder:
    """The order a purge's batches take on one table (or partition), as the planner sees the table now."""

    order: str  # DUE, HEAP or BY_KEY
    index: str | None  # DUE: the index the due rows are read through
    heap: HeapShape | None  # HEAP: the table's pages when it was decided
    share: float | None  # the planner's share of rows due (None: never counted)


def choose_order(
    conn: psycopg.Connection,
    tables: Tables,
    table: str,
    *,
    limit: int,
    relation: sql.Identifier | None = None,
    relation_name: str | None = None,
    **predicate: Any,
) -> BatchOrder:
    """Heap order when the planner expects at least HEAP_SHARE of the rows to be due; else due order when it reads
    the due rows through an index; the primary key otherwise.

    The one decision: a run takes it for each table it purges (a dry run exactly as a real one), and /health says
    what it decides now, so the two cannot tell an operator different things.
    """
    qualified = (relation if relation is not None else tables.identifiers()[table]).as_string(conn)
    shape = heap_shape(conn, qualified)
    share = due_share(conn, tables, table, rows=shape.rows, relation=relation, **predicate)
    if share is not None and share >= HEAP_SHARE and shape.rows_per_page:
        return BatchOrder(HEAP, None, shape, share)
    index = due_index(conn, tables, table, limit=limit, relation=relation, relation_name=relation_name, **predicate)
    return BatchOrder(DUE if index else BY_KEY, index, None, share)


def run_method(orders: list[str]) -> PurgeMethod:
    """A run's method from its tables' (partitions') orders: the weakest any took, since a key walk anywhere is what
    an operator needs to hear of; the primary key when there is nothing to order."""
    if not orders or BY_KEY in orders:
        return BY_KEY
    return HEAP if HEAP in orders else DUE


def due_share(
    conn: psycopg.Connection,
    tables: Tables,
    table: str,
    *,
    rows: float,
    relation: sql.Composable | None = None,
    **predicate: Any,
) -> float | None:
    """The planner's estimate of the share of ``table``'s ``rows`` a purge may delete (None: the table was
    never counted)."""
    if rows <= 0:
        return None
    target = relation if relation is not None else tables.identifiers()[table]
    query = statement(
        "purgeable_rows", tables, relation=target, purgeable=statement(f"purgeable_{table}", tables, **{table: target})
    )
    row = conn.execute(statement("explain_purge_batch", batch=query), predicate, prepare=False).fetchone()
    assert row is not None
    planned: float = row[0][0]["Plan"]["Plan Rows"]
    return min(1.0, planned / rows)


def run_heap_batch(
    conn: psycopg.Connection,
    tables: Tables,
    table: str,
    *,
    dry_run: bool,
    run_id: int,
    first_page: int,
    pages: int,
    end_page: int,
    relation: sql.Composable | None = None,
    **predicate: Any,
) -> Batch:
    """One heap-order batch (or dry-run chunk) over pages ``first_page`` .. ``first_page + pages - 1``; the cursor
    after it is the next first page, None past ``end_page``. Call inside the batch's transaction."""
    target = relation if relation is not None else tables.identifiers()[table]
    query = statement(
        "count_purge_batch_heap" if dry_run else "purge_batch_heap",
        tables,
        relation=target,
        purgeable=statement(f"purgeable_{table}", tables, **{table: target}),
        delete_doomed=_delete_doomed(tables, table, target),
    )
    next_page = first_page + max(1, pages)
    params = {
        "run_id": run_id,
        "first_tid": f"({first_page},0)",
        "next_tid": f"({next_page},0)",
        "next_page": next_page,
        "end_page": end_page,
        **predicate,
    }
    row = conn.execute(query, params, prepare=False).fetchone()
    assert row is not None
    return Batch(*row)


def _nodes(plan: dict[str, Any], above: tuple[str, ...]) -> Iterator[tuple[dict[str, Any], tuple[str, ...]]]:
    yield plan, above
    for child in plan.get("Plans", []):
        yield from _nodes(child, above + (plan["Node Type"],))
