"""The catalog reads several health checks make are read once a run (checks/shared_reads.py), and what they read is
still right: every partitioned table's partitions from one statement, each under its own table."""

from __future__ import annotations

import psycopg

from idemdash.checks import CHECKS, run_checks, shared_reads
from idemdash.core import settings
from idemdash.queries import Tables, partitions


def _add_column(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as other:
        other.execute(f"ALTER TABLE app.idempotency_request ADD COLUMN {name} text")


def test_a_run_reads_the_columns_once_and_a_read_outside_a_run_reads_again(database_url):
    """Within a run the second check gets what the first read (a column added between them is not seen); outside a
    run every call reads."""
    tables = Tables()
    with psycopg.connect(database_url, autocommit=True) as conn:
        with shared_reads.once_per_run():
            first = shared_reads.table_columns(conn, tables)
            _add_column(database_url, "added_during_the_run")
            again = shared_reads.table_columns(conn, tables)
        assert again is first
        assert "added_during_the_run" not in again["keys"]
        assert "added_during_the_run" in shared_reads.table_columns(conn, tables)["keys"]
        _add_column(database_url, "added_after_the_run")
        assert "added_after_the_run" in shared_reads.table_columns(conn, tables)["keys"]


def test_one_run_does_not_see_another_runs_reads(database_url):
    tables = Tables()
    with psycopg.connect(database_url, autocommit=True) as conn:
        with shared_reads.once_per_run():
            shared_reads.table_columns(conn, tables)
        _add_column(database_url, "between_runs")
        with shared_reads.once_per_run():
            assert "between_runs" in shared_reads.table_columns(conn, tables)["keys"]


def test_every_partitioned_table_gets_its_own_partitions_from_one_read(partitioned_url):
    tables = Tables()
    with psycopg.connect(partitioned_url, autocommit=True) as conn:
        by_role = partitions.list_partitions_by_role(conn, tables)
        assert set(by_role) == {"inbox", "outbox"}  # the reference keys table is not partitioned
        assert partitions.list_table_partitions(conn, tables, "keys") == []
        for role, parts in by_role.items():
            assert parts, role
            assert {p.parent_name for p in parts} == {getattr(tables, role)}
            assert parts == partitions.list_table_partitions(conn, tables, role)  # the same rows, in the same order
            ends = [p.bound_to for p in parts if p.bound_to is not None]
            assert ends == sorted(ends)
        with shared_reads.once_per_run():
            assert shared_reads.table_partitions(conn, tables, "outbox") == by_role["outbox"]


def test_the_checks_that_share_reads_report_as_before(partitioned_url):
    """The purge and partition checks both read the partitions, the table and index checks both the columns:
    a run with the reads shared finds for each table what each check finds when run alone."""
    config = settings.load({}, DATABASE_URL=partitioned_url)
    tables = Tables()

    def read():
        return psycopg.connect(partitioned_url, autocommit=False)

    shared = {c.id: (c.status, c.title) for c in run_checks(read, tables, config)}
    alone = {}
    for _, _, fn in CHECKS:
        with psycopg.connect(partitioned_url) as conn:
            alone.update({c.id: (c.status, c.title) for c in fn(conn, tables, config)})
    assert shared == alone
    assert any(check_id.startswith("partition.") for check_id in shared)
    assert {"purge.index.keys", "purge.index.inbox", "purge.index.outbox"} <= set(shared)
