"""A request's panels share one READ ONLY transaction; a panel that fails ends it alone (dashboard/page_reads.py)."""

from __future__ import annotations

import time

import psycopg
import pytest
from flask import g

from idemdash.dashboard import page_reads, panels
from idemdash.queries.rollup_states import stored_state_counts
from idemdash.queries.rollups import read_stored

pytestmark = pytest.mark.system  # see docs/development.md, Tests


def _tx(conn: psycopg.Connection) -> tuple:
    """The transaction's start time and the session: the same for two reads in one transaction."""
    row = conn.execute("SELECT now(), pg_backend_pid(), current_setting('transaction_read_only')").fetchone()
    assert row is not None
    return row[0], row[1], row[2]


def _timeout(conn: psycopg.Connection) -> str:
    row = conn.execute("SELECT current_setting('statement_timeout')").fetchone()
    assert row is not None
    return str(row[0])


def _missing_table(conn: psycopg.Connection) -> None:
    conn.execute("SELECT 1 FROM app.no_such_table")


def test_panels_share_a_transaction_and_a_failing_one_ends_it_alone(make_app):
    app = make_app()
    with app.test_request_context("/"):
        first, second = panels.load(_tx), panels.load(_tx)
        failed = panels.load(_missing_table)
        time.sleep(0.01)  # now() of a new transaction is later
        after, again = panels.load(_tx), panels.load(_tx)
        page_reads.finish()
        assert "page_reads" not in g
    assert first.value == second.value
    assert first.value[2] == "on"  # READ ONLY
    assert failed.problem == "schema" and "no_such_table" in (failed.message or "")
    assert after.ok and after.value[0] > first.value[0], "the panels after a failed one run in a new transaction"
    assert after.value == again.value


def test_a_panel_gets_the_timeout_the_page_budget_leaves_it(make_app):
    app = make_app(STATEMENT_TIMEOUT_MS=2000)
    with app.test_request_context("/"):
        whole = panels.load(_timeout)
        g.panels_started_at = time.monotonic() - 2.5  # 2.5 of the budget's 3 s used: 500 ms left
        rest = panels.load(_timeout)
        g.panels_started_at = time.monotonic() - 10  # none left: the floor
        least = panels.load(_timeout)
    assert whole.value == "2s"
    assert rest.value is not None and rest.value.endswith("ms") and 400 <= int(rest.value[:-2]) <= 500
    assert least.value == f"{panels.MIN_PANEL_TIMEOUT_MS}ms"


def test_a_read_nested_in_a_panels_read_has_its_own_transaction(make_app):
    app = make_app()
    with app.test_request_context("/"):
        target = app.extensions["idemdash_targets"]["default"]

        def nested(conn: psycopg.Connection) -> tuple[tuple, tuple]:
            with page_reads.read(target, 1000) as inner:
                return _tx(conn), _tx(inner)

        outer, inner = panels.require(panels.load(nested))
        assert panels.load(_tx).value == outer
    assert outer[1] != inner[1]


def test_no_transaction_is_left_open_after_a_page_or_an_answer(make_app, conn):
    client = make_app().test_client()
    for path in ("/", "/keys?status=stuck", "/api/v1/overview", "/outbox"):
        assert client.get(path).status_code == 200
        rows = conn.execute(
            "SELECT state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND state LIKE 'idle in transaction%'"
        ).fetchall()
        assert rows == [], path


def test_a_stored_rollup_read_without_idemdash_schema_leaves_the_next_panels_reading(make_app, conn):
    conn.execute("DROP TABLE idemdash.rollup")  # not migrated yet: nothing is stored
    app = make_app()
    with app.test_request_context("/keys?status=stuck"):
        before = panels.load(_tx)
        # no savepoint: the failed read ends the shared transaction, as a panel's error does
        windows = panels.load(read_stored, "key_windows", savepoint=False)
        counts = panels.load(stored_state_counts, savepoint=False)
        time.sleep(0.01)
        after, again = panels.load(_tx), panels.load(_tx)
    assert windows.ok and windows.value is None
    assert counts.ok and counts.value == {}
    assert after.ok and again.ok and after.value == again.value
    assert before.value is not None and after.value[0] > before.value[0]
