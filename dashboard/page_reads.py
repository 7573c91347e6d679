"""A request's panels read in one READ ONLY transaction, not one each.

A panel in a transaction of its own cost four round trips (BEGIN, the statement timeout, its statement, COMMIT) and a
pool checkout: `/` reads about a dozen, and those round trips were a third of its time. Here the first panel of a
request begins the transaction, and each later one of the same database only runs its statements in it (the statement
timeout is set again only when the page's time budget gives the panel another one, dashboard/panels.py).

A panel still fails alone: its error (a timeout, a missing table) rolls the shared transaction back, as it rolled
back its own, and the panels after it begin a new one, as /health's checks do (checks/__init__.py ``run_checks``).
READ COMMITTED gives each statement its own snapshot either way. The transaction ends before the page's templates
render (``web.render`` calls ``finish``) and, for any other answer, when the request ends; outside a request, in
another thread, or inside another panel's read, a read has its own transaction as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import psycopg
from flask import Flask, g, has_request_context

from idemdash.queries import transactions
from idemdash.queries.target import Target

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Shared:
    conn: psycopg.Connection
    timeout_ms: int
    ends: ExitStack = field(repr=False)
    thread: int = field(default_factory=threading.get_ident)
    busy: bool = False


def _shared() -> dict[Target, _Shared]:
    return g.setdefault("page_reads", {})


@contextmanager
def read(db: Target, timeout_ms: int) -> Iterator[psycopg.Connection]:
    """A READ ONLY transaction on ``db`` whose statements run under ``timeout_ms``: the request's shared one."""
    if not has_request_context():
        with db.read(timeout_ms) as conn:
            yield conn
        return
    shared = _shared()
    tx = shared.get(db)
    if tx is not None and (tx.busy or tx.thread != threading.get_ident()):
        with db.read(timeout_ms) as conn:  # nested in another panel's read, or another thread: its own
            yield conn
        return
    if tx is None:
        ends = ExitStack()
        conn = ends.enter_context(db.read(timeout_ms))
        tx = shared[db] = _Shared(conn, timeout_ms, ends)
    elif tx.timeout_ms != timeout_ms:
        try:
            transactions.set_statement_timeout(tx.conn, timeout_ms)
        except BaseException as exc:
            _abandon(db, tx, exc)
            raise
        tx.timeout_ms = timeout_ms
    tx.busy = True
    try:
        yield tx.conn
    except BaseException as exc:
        _abandon(db, tx, exc)
        raise
    tx.busy = False
    if tx.conn.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
        _abandon(db, tx, None)  # an error the panel caught itself left the transaction unusable: a new one next


def _abandon(db: Target, tx: _Shared, exc: BaseException | None) -> None:
    """Roll the transaction back (as a panel's own was on its error) and give its connection back to the pool."""
    _shared().pop(db, None)
    if exc is None:
        exc = _Abandoned()
    tx.ends.__exit__(type(exc), exc, exc.__traceback__)


class _Abandoned(Exception):
    """Ends a shared transaction that is not usable any more (rolled back, not committed)."""


def finish() -> None:
    """Commit the request's shared transactions and give their connections back to the pool."""
    if not has_request_context():
        return
    shared = g.pop("page_reads", None) or {}
    for db, tx in shared.items():
        try:
            tx.ends.close()
        except psycopg.Error as exc:  # a read-only transaction: what it read was read, nothing is lost
            log.warning("database %s: ending a page's read transaction failed: %s", db.name, exc)


def init_app(app: Flask) -> None:
    app.teardown_request(lambda _exc: finish())
