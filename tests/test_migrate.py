"""idemdash's own schema: migrations build what the code expects, once, under a lock."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import types
import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import errors

from idemdash.cli import main
from idemdash.queries import QUERIES, Tables, statement
from idemdash.queries.app_schema import create_app_schema
from idemdash.queries.migrate import Migration, MigrationError, list_migrations, migrate
from idemdash.queries.workload.datagen import create_datagen_functions

ROOT = Path(__file__).resolve().parent.parent

# What the rest of the code is written against (the column contract, docs/getting-started.md):
# table -> column -> data type.
EXPECTED_TABLES = {
    "schema_migration": {
        "version": "integer",
        "name": "text",
        "checksum": "text",
        "applied_at": "timestamp with time zone",
    },
    "audit_log": {
        "audit_id": "bigint",
        "at": "timestamp with time zone",
        "actor": "text",
        "action": "text",
        "scope": "text",
        "key": "text",
        "from_status": "text",
        "to_status": "text",
        "reason": "text",
        "evidence": "jsonb",
        "detail": "jsonb",
        "parent_id": "bigint",
    },
    "bulk_preview": {
        "preview_id": "bigint",
        "as_of": "timestamp with time zone",
        "filter": "jsonb",
        "to_status": "text",
        "candidates": "integer",
        "by_scope": "jsonb",
        "actor": "text",
        "created_at": "timestamp with time zone",
    },
    "purge_run": {
        "run_id": "bigint",
        "table_name": "text",
        "started_at": "timestamp with time zone",
        "finished_at": "timestamp with time zone",
        "batches": "integer",
        "rows_deleted": "bigint",
        "dry_run": "boolean",
        "outcome": "text",
        "error": "text",
        "started_by": "text",
        "method": "text",
        "partitions_dropped": "integer",
        "cancel_requested_by": "text",
        "cancel_requested_at": "timestamp with time zone",
        "latency_budget": "double precision",
        "probe_baseline_ms": "double precision",
        "probe_p99_ms": "double precision",
        "probes": "integer",
        "backoffs": "integer",
        "final_batch_size": "integer",
        "final_duty_cycle": "double precision",
        "app_backends": "integer",
        "lock_backoffs": "integer",
    },
    "purge_partition": {
        "run_id": "bigint",
        "table_name": "text",
        "partition_schema": "text",
        "partition_name": "text",
        "parent_schema": "text",
        "parent_name": "text",
        "bound_from": "timestamp with time zone",
        "bound_to": "timestamp with time zone",
        "rows": "bigint",
        "action": "text",
        "detail": "text",
        "at": "timestamp with time zone",
    },
    "metric_snapshot": {
        "taken_at": "timestamp with time zone",
        "stuck_keys": "bigint",
        "processing_keys": "bigint",
        "failed_retryable_keys": "bigint",
        "failed_final_keys_24h": "bigint",
        "outbox_pending": "bigint",
        "outbox_lag_seconds": "double precision",
        "inbox_rows_24h": "bigint",
        "rows_purged": "bigint",
        "interval_seconds": "double precision",
        "claims": "bigint",
        "completions": "bigint",
        "failures": "bigint",
        "needs_review_keys": "bigint",
        "failed_keys": "bigint",
        "outbox_poison": "bigint",
        "outbox_poison_oldest_seconds": "double precision",
        "stuck_by_scope": "jsonb",
    },
    "triage_note": {
        "note_id": "bigint",
        "scope": "text",
        "key": "text",
        "at": "timestamp with time zone",
        "author": "text",
        "note": "text",
    },
    "rollup": {
        "name": "text",
        "variant": "text",
        "computed_at": "timestamp with time zone",
        "duration_ms": "double precision",
        "payload": "jsonb",
    },
}


@pytest.fixture
def empty(empty_database_url):
    with psycopg.connect(empty_database_url, autocommit=True) as connection:
        yield connection


@pytest.fixture(autouse=True)
def _no_idemdash_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("IDEMDASH_") and name != "IDEMDASH_TEST_DATABASE_URL":
            monkeypatch.delenv(name)


def idemdash_columns(conn: psycopg.Connection) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for table, column, data_type in conn.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'idemdash' ORDER BY table_name, ordinal_position"
    ):
        found.setdefault(table, {})[column] = data_type
    return found


def applied_versions(conn: psycopg.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT version, name FROM idemdash.schema_migration ORDER BY version").fetchall()


def schema_exists(conn: psycopg.Connection, name: str = "idemdash") -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)", (name,)).fetchone()[0]


# ---------------------------------------------------------------------------
# the migration files


def test_migration_files_are_numbered_without_gaps():
    migrations = list_migrations()
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))
    assert migrations[0].version == 1 and migrations[0].name == "init"
    # A misnamed file would be skipped silently: every .sql file there must be a migration.
    files = sorted(p.name for p in (ROOT / "queries" / "migrations").glob("*.sql"))
    assert files == [f"{m.version:04d}_{m.name}.sql" for m in migrations]
    assert len({m.checksum for m in migrations}) == len(migrations)


def _fake_package(monkeypatch, tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    import idemdash.queries.migrate as module

    monkeypatch.setattr(module, "resources", types.SimpleNamespace(files=lambda package: tmp_path))


def test_list_migrations_ignores_other_files_and_sorts(monkeypatch, tmp_path):
    _fake_package(
        monkeypatch,
        tmp_path,
        {"0002_second.sql": "SELECT 2", "0001_first.sql": "SELECT 1", "__init__.py": "", "README.txt": "x"},
    )
    assert [(m.version, m.name, m.text) for m in list_migrations()] == [
        (1, "first", "SELECT 1"),
        (2, "second", "SELECT 2"),
    ]


@pytest.mark.parametrize("names", [["0001_a.sql", "0003_c.sql"], ["0002_b.sql"], ["0001_a.sql", "0001_again.sql"]])
def test_list_migrations_refuses_gaps_and_duplicates(monkeypatch, tmp_path, names):
    _fake_package(monkeypatch, tmp_path, {name: "SELECT 1" for name in names})
    with pytest.raises(MigrationError, match="without gaps"):
        list_migrations()


# ---------------------------------------------------------------------------
# applying them


def test_migrate_creates_the_schema_the_code_expects(empty):
    assert not schema_exists(empty)
    applied = migrate(empty)

    assert [(m.version, m.name) for m in applied] == [(m.version, m.name) for m in list_migrations()]
    assert schema_exists(empty)
    assert idemdash_columns(empty) == EXPECTED_TABLES
    assert applied_versions(empty) == [(m.version, m.name) for m in list_migrations()]
    checksums = [row[0] for row in empty.execute("SELECT checksum FROM idemdash.schema_migration ORDER BY version")]
    assert checksums == [m.checksum for m in list_migrations()]
    # Only idemdash's own schema was created; the application's tables are never touched.
    assert not schema_exists(empty, "app")


def _explainable(text: str) -> bool:
    """A single SELECT / WITH / INSERT / UPDATE / DELETE (leading comment lines allowed)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip()
    first = code.split(None, 1)[0].upper() if code else ""
    return first in ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE") and ";" not in code.rstrip(";")


def test_every_query_block_compiles_against_the_migrated_schema(empty):
    """Every single-statement query in queries/*.sql resolves its tables and columns.

    The schema is built only from the migrations and the reference schema, so a
    query that names a column no migration creates fails here, not in production.
    """
    migrate(empty)
    create_app_schema(empty, Tables(), "enum")
    create_datagen_functions(empty)  # the data generator's statements call its session-local (pg_temp) helpers
    checked, problems = [], []
    for name, query in sorted(QUERIES.items()):
        if not _explainable(query.text):
            continue
        try:
            text = statement(name, Tables())
        except (KeyError, IndexError):
            continue  # needs identifiers other than the tables; checked in test_queries_loader
        params = {p: None for p in re.findall(r"%\((\w+)\)s", query.text)}
        try:
            with empty.transaction():
                empty.execute(psycopg.sql.SQL("EXPLAIN ") + text, params or None)
        except (
            errors.UndefinedTable,
            errors.UndefinedColumn,
            errors.UndefinedObject,
            errors.SyntaxError,
            errors.InvalidSchemaName,
        ) as exc:
            problems.append(f"{query.source}: {name}: {exc.sqlstate} {exc}")
        except psycopg.Error:
            pass  # e.g. an untyped NULL parameter; names were resolved before that
        checked.append(name)
    assert not problems, "\n".join(problems)
    assert "list_recent_purge_runs" in checked and "count_processing_keys" in checked


def test_rerunning_migrate_is_a_no_op(empty):
    migrate(empty)
    before = empty.execute("SELECT version, name, checksum, applied_at FROM idemdash.schema_migration").fetchall()
    empty.execute("INSERT INTO idemdash.triage_note (scope, key, author, note) VALUES ('s', 'k', 'me', 'kept')")

    assert migrate(empty) == []
    assert migrate(empty) == []

    after = empty.execute("SELECT version, name, checksum, applied_at FROM idemdash.schema_migration").fetchall()
    assert after == before
    assert empty.execute("SELECT note FROM idemdash.triage_note").fetchall() == [("kept",)]


def test_a_tampered_checksum_is_refused(empty):
    migrate(empty)
    empty.execute("UPDATE idemdash.schema_migration SET checksum = 'not-the-checksum' WHERE version = 1")
    with pytest.raises(MigrationError, match=r"0001_init was changed after it was applied"):
        migrate(empty)
    # Refusing changed nothing, and leaves the connection usable.
    assert empty.execute("SELECT checksum FROM idemdash.schema_migration WHERE version = 1").fetchall() == [
        ("not-the-checksum",)
    ]
    assert empty.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_an_edited_migration_file_is_refused(empty, monkeypatch):
    migrate(empty)
    real = list_migrations()
    edited = [Migration(real[0].version, real[0].name, real[0].text + "\n-- edited later\n"), *real[1:]]
    monkeypatch.setattr("idemdash.queries.migrate.list_migrations", lambda: edited)
    with pytest.raises(MigrationError, match="append-only"):
        migrate(empty)


def test_a_new_migration_is_applied_after_the_old_ones(empty, monkeypatch):
    migrate(empty)
    real = list_migrations()
    extra = Migration(
        len(real) + 1, "add_widget", "CREATE TABLE idemdash.widget (id int);\nINSERT INTO idemdash.widget VALUES (7);"
    )
    monkeypatch.setattr("idemdash.queries.migrate.list_migrations", lambda: [*real, extra])

    assert migrate(empty) == [extra]
    assert empty.execute("SELECT id FROM idemdash.widget").fetchall() == [(7,)]
    assert applied_versions(empty)[-1] == (extra.version, "add_widget")
    assert migrate(empty) == []


def test_a_failing_migration_applies_nothing(empty, monkeypatch):
    real = list_migrations()
    broken = Migration(len(real) + 1, "broken", "CREATE TABLE idemdash.half_done (id int);\nSELECT 1 / 0;")
    monkeypatch.setattr("idemdash.queries.migrate.list_migrations", lambda: [*real, broken])

    with pytest.raises(errors.DivisionByZero):
        migrate(empty)
    # One transaction: not even the good migrations before it, nor the bookkeeping table.
    assert not schema_exists(empty)

    monkeypatch.setattr("idemdash.queries.migrate.list_migrations", lambda: real)
    assert [m.version for m in migrate(empty)] == [m.version for m in real]
    assert empty.execute("SELECT to_regclass('idemdash.half_done')").fetchone() == (None,)


def test_migrate_inside_the_callers_transaction_commits_with_it(empty_database_url):
    with psycopg.connect(empty_database_url) as conn:  # not autocommit
        conn.execute("SELECT 1")  # the caller's transaction is open
        assert migrate(conn)
        conn.rollback()
        assert not schema_exists(conn)
        conn.rollback()
        # Called outside a transaction it commits on its own.
        assert migrate(conn)
        conn.rollback()
        assert migrate(conn) == []


# ---------------------------------------------------------------------------
# replicas booting together


def test_concurrent_migrators_serialise(empty_database_url):
    n = 8
    conns = [psycopg.connect(empty_database_url, autocommit=True) for _ in range(n)]
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=20)
            results[i] = migrate(conns[i])
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
    finally:
        for c in conns:
            c.close()

    errors_seen = [r for r in results if isinstance(r, BaseException)]
    assert not errors_seen, errors_seen
    non_empty = [r for r in results if r]
    assert len(non_empty) == 1, results
    assert [m.name for m in non_empty[0]] == [m.name for m in list_migrations()]
    assert results.count([]) == n - 1
    with psycopg.connect(empty_database_url) as conn:
        assert applied_versions(conn) == [(m.version, m.name) for m in list_migrations()]
        assert set(idemdash_columns(conn)) == set(EXPECTED_TABLES)


@pytest.mark.system
def test_concurrent_cli_processes_serialise(empty_database_url):
    command = [
        sys.executable,
        "-c",
        "from idemdash.cli import main; main()",
        "migrate",
        "--database-url",
        empty_database_url,
    ]
    procs = [
        subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(out)
    assert sum("applied 0001_init" in out for out in outputs) == 1, outputs
    assert sum("up to date" in out for out in outputs) == 2, outputs


# ---------------------------------------------------------------------------
# what the tables enforce


def test_audit_log_is_append_only(conn):
    conn.execute(
        "INSERT INTO idemdash.audit_log (actor, action, scope, key, reason) "
        "VALUES ('alice', 'reclassify', 's', 'k', 'stuck for an hour')"
    )
    before = conn.execute("SELECT * FROM idemdash.audit_log").fetchall()
    assert len(before) == 1

    with pytest.raises(errors.RaiseException, match="append-only"):
        conn.execute("UPDATE idemdash.audit_log SET reason = 'rewritten'")
    with pytest.raises(errors.RaiseException, match="append-only"):
        conn.execute("DELETE FROM idemdash.audit_log")
    assert conn.execute("SELECT * FROM idemdash.audit_log").fetchall() == before

    conn.execute("INSERT INTO idemdash.audit_log (actor, action) VALUES ('bob', 'purge')")
    ids = [r[0] for r in conn.execute("SELECT audit_id FROM idemdash.audit_log ORDER BY audit_id")]
    assert len(ids) == 2 and ids[0] < ids[1]


def test_audit_log_cannot_be_truncated(conn):
    conn.execute("INSERT INTO idemdash.audit_log (actor, action) VALUES ('alice', 'reclassify')")
    with pytest.raises(psycopg.Error):
        conn.execute("TRUNCATE idemdash.audit_log")
    assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone() == (1,)


def test_table_constraints(conn):
    with pytest.raises(errors.CheckViolation):
        conn.execute(
            "INSERT INTO idemdash.purge_run (table_name, dry_run, started_by, outcome) "
            "VALUES ('keys', false, 'me', 'exploded')"
        )
    for outcome in ("running", "succeeded", "failed", "skipped", "budget_exhausted"):
        conn.execute(
            "INSERT INTO idemdash.purge_run (table_name, dry_run, started_by, outcome) "
            "VALUES ('keys', false, 'me', %s)",
            (outcome,),
        )
    with pytest.raises(errors.CheckViolation):
        conn.execute("INSERT INTO idemdash.triage_note (scope, key, author, note) VALUES ('s', 'k', 'me', '')")
    with pytest.raises(errors.NotNullViolation):
        conn.execute("INSERT INTO idemdash.audit_log (actor) VALUES ('alice')")
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone() == (5,)


# ---------------------------------------------------------------------------
# the command line


def test_cli_migrate(empty_database_url):
    runner = CliRunner()
    first = runner.invoke(main, ["migrate", "--database-url", empty_database_url])
    assert first.exit_code == 0, first.output
    assert first.output.splitlines() == [f"applied {m.version:04d}_{m.name}" for m in list_migrations()]

    second = runner.invoke(main, ["migrate", "--database-url", empty_database_url])
    assert second.exit_code == 0, second.output
    assert "up to date" in second.output
    assert "applied" not in second.output


def test_cli_migrate_reads_the_url_from_the_environment(empty_database_url):
    result = CliRunner().invoke(main, ["migrate"], env={"IDEMDASH_DATABASE_URL": empty_database_url})
    assert result.exit_code == 0, result.output
    assert "applied 0001_init" in result.output


def test_cli_migrate_without_a_database_is_a_usage_error():
    result = CliRunner().invoke(main, ["migrate"])
    assert result.exit_code == 2
    assert "IDEMDASH_DATABASE_URL" in result.output


def test_cli_never_prints_the_password():
    url = "postgresql://someone:hunter2-secret@127.0.0.1:1/nowhere?connect_timeout=2"
    result = CliRunner().invoke(main, ["migrate", "--database-url", url])
    assert result.exit_code == 1
    assert "cannot connect" in result.output
    assert "hunter2-secret" not in result.output
    assert "connection refused by 127.0.0.1 port 1" in result.output


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], "idempotency_status"),
        (["--status-type", "enum"], "idempotency_status"),
        (["--status-type", "text"], "text"),
    ],
)
def test_cli_init_app_schema(empty_database_url, argv, expected):
    runner = CliRunner()
    command = ["init-app-schema", "--database-url", empty_database_url, *argv]
    result = runner.invoke(main, command)
    assert result.exit_code == 0, result.output
    assert "reference schema ready" in result.output
    assert runner.invoke(main, command).exit_code == 0  # safe to re-run

    with psycopg.connect(empty_database_url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'app' ORDER BY table_name"
        ).fetchall()
        assert tables == [("idempotency_request",), ("outbox_event",), ("processed_message",)]
        data_type, udt = conn.execute(
            "SELECT data_type, udt_name FROM information_schema.columns WHERE table_schema = 'app' "
            "AND table_name = 'idempotency_request' AND column_name = 'status'"
        ).fetchone()
        assert (udt if data_type == "USER-DEFINED" else data_type) == expected
        functions = conn.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = 'app'::regnamespace ORDER BY proname"
        ).fetchall()
        assert [f[0] for f in functions] == [
            "claim_idempotency_key",
            "complete_idempotency_key",
            "consume_message_once",
            "fail_idempotency_key",
        ]
        # init-app-schema does not migrate idemdash's own schema.
        assert not schema_exists(conn)


def test_cli_init_app_schema_uses_the_configured_names(empty_database_url):
    env = {
        "IDEMDASH_APP_SCHEMA": "Billing",
        "IDEMDASH_KEYS_TABLE": "keys",
        "IDEMDASH_INBOX_TABLE": "inbox",
        "IDEMDASH_OUTBOX_TABLE": "outbox",
    }
    result = CliRunner().invoke(
        main, ["init-app-schema", "--database-url", empty_database_url, "--status-type", "text"], env=env
    )
    assert result.exit_code == 0, result.output
    with psycopg.connect(empty_database_url) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
            "ORDER BY table_name"
        ).fetchall()
        assert tables == [("Billing", "inbox"), ("Billing", "keys"), ("Billing", "outbox")]


def test_cli_init_app_schema_rejects_an_unknown_status_type(empty_database_url):
    result = CliRunner().invoke(
        main, ["init-app-schema", "--database-url", empty_database_url, "--status-type", "varchar"]
    )
    assert result.exit_code == 2
    assert "varchar" in result.output


def test_migrate_needs_create_on_the_database_only_until_the_schema_exists(empty, empty_database_url):
    """The setup checklist (docs/getting-started.md) lets the migrating role lose CREATE on the database after the
    first migrate: later ones (every upgrade) still work, and without the schema the failure names the grant that is
    missing."""
    role = f"migrator_{uuid.uuid4().hex[:8]}"
    database = empty.info.dbname
    empty.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    url = psycopg.conninfo.make_conninfo(empty_database_url, user=role, password="pw")
    try:
        refused = CliRunner().invoke(main, ["migrate", "--database-url", url])
        assert refused.exit_code == 1
        assert (
            f"may not create schemas in database {database}: GRANT CREATE ON DATABASE {database} TO {role};"
            in refused.output
        ), refused.output

        empty.execute(f'GRANT CREATE ON DATABASE "{database}" TO {role}')
        assert CliRunner().invoke(main, ["migrate", "--database-url", url]).exit_code == 0
        empty.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM {role}')
        again = CliRunner().invoke(main, ["migrate", "--database-url", url])
        assert again.exit_code == 0, again.output
        assert "up to date" in again.output
    finally:
        empty.execute("DROP SCHEMA IF EXISTS idemdash CASCADE")
        empty.execute(f'REVOKE ALL ON DATABASE "{database}" FROM {role}')
        empty.execute(f"DROP ROLE {role}")
