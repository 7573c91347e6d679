"""A page takes a pooled connection per panel: one handed back moments ago goes out again without a check query, one
that rested is checked (a terminated backend is replaced before a page uses it), and a read's READ ONLY never
reaches the next write on the same connection."""

from __future__ import annotations

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from idemdash.core.settings import load
from idemdash.queries import pools
from idemdash.queries.transactions import read_tx, write_tx


@pytest.fixture
def pool(database_url):
    made = pools.new_pool(
        "test",
        database_url,
        load(DATABASE_URL=database_url, SECRET_KEY="x", POOL_MIN_SIZE=1, POOL_MAX_SIZE=1),
        {},
        psycopg.Connection,
    )
    made.wait()
    yield made
    made.close()


def test_a_connection_finished_moments_ago_is_not_checked_again(pool, monkeypatch):
    checked: list[object] = []
    real = ConnectionPool.check_connection
    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(lambda c: (checked.append(c), real(c))))
    for _ in range(5):
        with read_tx(pool, 1000) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert len(checked) == 1  # the first take only: the pool's new connection had never finished a transaction here


def test_a_rested_connection_whose_backend_was_terminated_is_replaced_before_use(pool, database_url, monkeypatch):
    with read_tx(pool, 1000) as conn:
        pid = conn.info.backend_pid
    with psycopg.connect(database_url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))
    monkeypatch.setattr(pools, "CHECK_AFTER_IDLE_SECONDS", -1.0)  # as if it had rested
    with read_tx(pool, 1000) as conn:
        assert conn.info.backend_pid != pid and conn.execute("SELECT 1").fetchone() == (1,)


def test_a_read_leaves_no_read_only_behind_for_the_next_write(pool):
    with read_tx(pool, 1000) as conn:
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        first = conn.info.backend_pid
    with write_tx(pool, 1000) as conn:
        assert conn.info.backend_pid == first  # the same pooled connection
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("off",)
