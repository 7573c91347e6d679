"""/health's operational checks: the NULL trap, dead tuples, long and idle-in-transaction sessions, advisory locks.

Each is driven by the real thing (a nullable unique column that lets a duplicate in, rows deleted, a second
connection left in a transaction, a lock held by another session) and each fix the finding prints is applied.
"""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo

from idemdash.checks import activity, maintenance
from idemdash.cli import main
from idemdash.core.settings import Settings
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, create_app_schema
from idemdash.queries.purges import try_purge_lock
from tests.waiting import wait_until

TRAP = Tables(schema="trap")


def checks(client) -> dict[str, dict]:
    body = client.get("/api/v1/health/schema").get_json()
    items = {c["id"]: c for c in body["items"]}
    assert len(items) == len(body["items"]), "check ids are unique"
    for c in body["items"]:
        assert set(c) >= {"id", "status", "title", "detail", "fix_sql", "fix"}
    return items


def with_prefix(items: dict[str, dict], prefix: str) -> dict[str, dict]:
    return {i: c for i, c in items.items() if i.startswith(prefix)}


def check_cli(url: str, *args: str, schema: str = "app"):
    return CliRunner().invoke(main, ["check", "--database-url", url, *args], env={"IDEMDASH_APP_SCHEMA": schema})


def printed_fix_sql(output: str, title_start: str) -> str:
    """The fix SQL `idemdash check` prints under the finding whose line starts with ``title_start``."""
    lines = output.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith(title_start))
    block = []
    for line in lines[at + 2 :]:  # the title, then the detail on one line, then the SQL
        if not line.startswith("         ") or line.strip().startswith("fix:"):
            break
        block.append(line.strip())
    return "\n".join(block)


def flush_stats(conn: psycopg.Connection) -> None:
    """Make this session's table counters visible to others now (PostgreSQL 15+; older ones flush within ~0.5 s)."""
    if conn.execute("SELECT to_regproc('pg_stat_force_next_flush') IS NOT NULL").fetchone()[0]:
        conn.execute("SELECT pg_stat_force_next_flush()")
    else:
        time.sleep(1)


# -- the NULL trap ---------------------------------------------------------------------------------------


@pytest.fixture
def trap_schema(conn):
    """The reference tables under schema 'trap', the keys table deduplicated by (scope, key, tenant_id) only."""
    create_app_schema(conn, TRAP, "text")
    conn.execute("ALTER TABLE trap.idempotency_request DROP CONSTRAINT idempotency_request_pkey")
    conn.execute("ALTER TABLE trap.idempotency_request ADD COLUMN tenant_id text")
    conn.execute(
        "ALTER TABLE trap.idempotency_request ADD CONSTRAINT idempotency_request_tenant_key "
        "UNIQUE (idempotency_scope, idempotency_key, tenant_id)"
    )
    return conn


def _insert_key(conn, tenant: str | None) -> int:
    return conn.execute(
        """
        INSERT INTO trap.idempotency_request (idempotency_scope, idempotency_key, tenant_id, request_hash, status,
                                              expires_at)
        VALUES ('orders', 'k-1', %s, 'h', 'processing', now() + interval '1 day')
        ON CONFLICT (idempotency_scope, idempotency_key, tenant_id) DO NOTHING""",
        (tenant,),
    ).rowcount


def test_the_null_trap_fails_idemdash_check_with_the_sql_that_closes_it(database_url, trap_schema):
    # the trap is real: the second insert of the same key does not conflict
    assert _insert_key(trap_schema, None) == 1
    assert _insert_key(trap_schema, None) == 1
    assert trap_schema.execute("SELECT count(*) FROM trap.idempotency_request").fetchone()[0] == 2

    result = check_cli(database_url, schema="trap")
    assert result.exit_code == 1, result.output
    title = (
        "fail     tenant_id may be NULL in unique constraint idempotency_request_tenant_key of "
        "trap.idempotency_request: duplicates get through  [null_trap.keys.idempotency_request_tenant_key]"
    )
    assert title in result.output.splitlines()
    assert "1 health check failed" in result.output
    fix_sql = printed_fix_sql(result.output, "fail     tenant_id may be NULL")
    assert fix_sql.splitlines()[1:] == [
        '-- SELECT count(*) FROM "trap"."idempotency_request" WHERE "tenant_id" IS NULL;',
        'ALTER TABLE "trap"."idempotency_request" ALTER COLUMN "tenant_id" SET NOT NULL',
    ]

    # the comment's query counts the rows that block the fix; they get the sentinel first, as the finding says
    count = fix_sql.splitlines()[1].removeprefix("-- ").removesuffix(";")
    assert trap_schema.execute(count).fetchone()[0] == 2
    with pytest.raises(psycopg.errors.NotNullViolation):
        trap_schema.execute(fix_sql)
    trap_schema.execute(
        "DELETE FROM trap.idempotency_request WHERE ctid <> (SELECT min(ctid) FROM trap.idempotency_request)"
    )
    trap_schema.execute("UPDATE trap.idempotency_request SET tenant_id = '' WHERE tenant_id IS NULL")
    trap_schema.execute(fix_sql)

    assert _insert_key(trap_schema, "") == 0  # now a retry conflicts
    fixed = check_cli(database_url, "--apply-indexes", schema="trap")
    assert fixed.exit_code == 0, fixed.output
    assert "ok       No nullable column in a unique key of the three tables  [null_trap]" in fixed.output
    assert "0 health checks failed" in fixed.output


def test_the_reference_schema_has_no_null_trap(client):
    items = checks(client)
    assert with_prefix(items, "null_trap") == {"null_trap": items["null_trap"]}
    assert items["null_trap"]["status"] == "ok"
    assert items["null_trap"]["title"] == "No nullable column in a unique key of the three tables"


def test_unique_indexes_count_by_their_plain_key_columns_and_nulls_not_distinct_is_no_trap(client, conn):
    # INCLUDE columns take no part in uniqueness: not a trap
    conn.execute(
        "CREATE UNIQUE INDEX inbox_covering ON app.processed_message (consumer_name, message_id) "
        "INCLUDE (result_ref_type)"
    )
    assert checks(client)["null_trap"]["status"] == "ok"
    if conn.info.server_version >= 150000:
        conn.execute(
            "CREATE UNIQUE INDEX outbox_ref ON app.outbox_event (idempotency_scope, published_at) NULLS NOT DISTINCT"
        )
        ok = checks(client)["null_trap"]
        assert ok["status"] == "ok" and "outbox_ref (published_at)" in ok["detail"]
    # a partial expression index: its plain nullable column is the trap, the expression is not reported
    conn.execute(
        "CREATE UNIQUE INDEX inbox_ref ON app.processed_message (lower(message_id), result_ref_type, "
        "result_ref_id) WHERE consumer_name <> ''"
    )
    items = checks(client)
    finding = items["null_trap.inbox.inbox_ref"]
    assert finding["status"] == "fail"
    assert finding["title"].startswith("result_ref_type, result_ref_id may be NULL in partial unique index inbox_ref")
    assert finding["fix_sql"].endswith(
        'ALTER TABLE "app"."processed_message" ALTER COLUMN "result_ref_type" SET NOT NULL;\n'
        'ALTER TABLE "app"."processed_message" ALTER COLUMN "result_ref_id" SET NOT NULL'
    )
    assert "NULLS NOT DISTINCT" in finding["detail"]
    assert "null_trap" not in items and client.get("/api/v1/health/schema").get_json()["status"] == "fail"


# -- dead tuples and vacuum ------------------------------------------------------------------------------


def _add_keys(conn, n: int) -> None:
    conn.execute(
        """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        expires_at)
                    SELECT 'bulk', 'k' || g, 'h', 'succeeded', now() + interval '1 day'
                    FROM generate_series(1, %s) g""",
        (n,),
    )


def test_dead_tuples_warn_with_vacuum_and_the_autovacuum_setting_and_vacuum_clears_it(client, conn):
    conn.execute("ALTER TABLE app.idempotency_request SET (autovacuum_enabled = false)")  # no vacuum behind our back
    _add_keys(conn, 15_000)
    conn.execute("DELETE FROM app.idempotency_request WHERE idempotency_scope = 'bulk'")
    flush_stats(conn)
    items = checks(client)
    finding = items["vacuum.keys"]
    assert finding["status"] == "warn"
    assert "15,000 dead tuples against 0 live" in finding["title"]
    vacuum, autovacuum = finding["fix_sql"].split(";\n", 1)
    assert vacuum == 'VACUUM (ANALYZE, VERBOSE) "app"."idempotency_request"'
    assert (
        autovacuum.splitlines()[-1]
        == 'ALTER TABLE "app"."idempotency_request" SET (autovacuum_vacuum_scale_factor = 0.02)'
    )
    assert "vacuum" not in items and "vacuum.inbox" not in items

    conn.execute(vacuum)
    conn.execute(autovacuum)
    items = checks(client)
    assert with_prefix(items, "vacuum") == {"vacuum": items["vacuum"]}
    assert items["vacuum"]["status"] == "ok"
    assert "app.idempotency_request: 0 live and 0 dead tuples, last vacuumed" in items["vacuum"]["detail"]
    options = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'app.idempotency_request'::regclass")
    assert "autovacuum_vacuum_scale_factor=0.02" in options.fetchone()[0]


def test_a_busy_table_never_vacuumed_or_analyzed_warns(client, conn, monkeypatch):
    monkeypatch.setattr(maintenance, "NEVER_VACUUMED_CHANGES", 1_000)
    conn.execute("ALTER TABLE app.idempotency_request SET (autovacuum_enabled = false)")
    _add_keys(conn, 2_000)
    flush_stats(conn)
    finding = checks(client)["vacuum.keys"]
    assert finding["status"] == "warn"
    assert "2,000 rows inserted, updated or deleted and never vacuumed" in finding["title"]
    assert "2,000 rows changed and never analyzed" in finding["title"]
    conn.execute(finding["fix_sql"].split(";\n")[0])
    assert checks(client)["vacuum"]["status"] == "ok"


# -- long-running and idle-in-transaction sessions -------------------------------------------------------


@pytest.mark.system  # over a second: a session held idle in a transaction
def test_a_session_idle_in_a_transaction_is_reported_until_it_commits(client, database_url, monkeypatch):
    monkeypatch.setattr(activity, "IDLE_IN_TRANSACTION_SECONDS", 1)
    with psycopg.connect(database_url, application_name="stuck-worker") as idle:
        idle.execute("SELECT 1 AS forgotten")  # opens a transaction and leaves it open
        pid = idle.info.backend_pid
        time.sleep(1.2)
        items = checks(client)
        finding = items[f"session.{pid}"]
        assert finding["status"] == "warn"
        assert finding["title"].startswith(f"Session {pid} idle in a transaction for ")
        assert "application 'stuck-worker'" in finding["detail"]
        assert "Last query: 'SELECT 1 AS forgotten'." in finding["detail"]
        assert finding["fix_sql"].splitlines()[-1] == f"SELECT pg_terminate_backend({pid})"
        assert "idle_in_transaction_session_timeout = '5min'" in finding["fix"]
        assert "sessions" not in items

        monkeypatch.setattr(activity, "LONG_SESSION_FAIL_SECONDS", 1)
        assert checks(client)[f"session.{pid}"]["status"] == "fail"

        idle.commit()
        items = checks(client)
        assert f"session.{pid}" not in items
        assert items["sessions"]["status"] == "ok"


@pytest.mark.system  # over a second: a long query held open
def test_a_long_query_is_reported_and_its_cancel_statement_stops_it(client, conn, database_url, monkeypatch):
    monkeypatch.setattr(activity, "LONG_QUERY_SECONDS", 1)
    errors: list[Exception] = []
    with psycopg.connect(database_url, autocommit=True, application_name="report") as slow:
        pid = slow.info.backend_pid

        def run() -> None:
            try:
                slow.execute("SELECT pg_sleep(60)")
            except psycopg.Error as exc:
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            # no row until the thread's query has started
            wait_until(
                lambda: conn.execute(
                    "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s AND "
                    "state = 'active' AND now() - query_start > interval '1.2 s')",
                    (pid,),
                ).fetchone()[0]
            )
            finding = checks(client)[f"session.{pid}"]
            assert finding["status"] == "warn"
            assert finding["title"].startswith(f"Session {pid} running one query for ")
            assert "Query: 'SELECT pg_sleep(60)'." in finding["detail"]
            cancel = finding["fix_sql"].split(";\n")[0]
            assert cancel.endswith(f"SELECT pg_cancel_backend({pid})")
            conn.execute(cancel)
        finally:
            thread.join(10)
        assert isinstance(errors[0], psycopg.errors.QueryCanceled)
        assert f"session.{pid}" not in checks(client)


# -- advisory locks --------------------------------------------------------------------------------------


def test_advisory_locks_name_their_session_and_link_the_key_they_guard(client, conn, database_url, monkeypatch):
    tables = Tables()
    for key in ("k-1", "k-2", "k-3"):
        assert claim_key(conn, tables, "orders", key, "h", f"worker-{key}").claim_kind == "new_claim"
    monkeypatch.setattr(activity, "ADVISORY_LOCK_IDLE_SECONDS", 0)
    sessions = []
    waiter, waiting_thread = None, None

    def session(name: str, autocommit: bool = True) -> psycopg.Connection:
        sessions.append(psycopg.connect(database_url, autocommit=autocommit, application_name=name))
        return sessions[-1]

    try:
        # the common pattern (docs/concepts.md, Advisory locks per key): a session-level lock on the hash of
        # scope:key, by the worker that claimed it
        holder = session("worker-k-1")
        holder.execute("SELECT pg_advisory_lock(hashtextextended('orders:k-1', 0))")
        lock_key = holder.execute("SELECT hashtextextended('orders:k-1', 0)").fetchone()[0]
        # a transaction-level lock on the int4 hash, its session left idle in the transaction
        idle = session("some-app", autocommit=False)
        idle.execute("SELECT pg_advisory_xact_lock(hashtext('orders:k-2'))")
        # a lock no derivation explains, held by the application that claimed k-3
        hunch = session("worker-k-3")
        hunch.execute("SELECT pg_advisory_lock(7)")
        # unrelated to any key, and a second session waiting for it
        other = session("cron")
        other.execute("SELECT pg_advisory_lock(42)")
        waiter = psycopg.connect(database_url, autocommit=True, application_name="waiter")
        waiting_thread = threading.Thread(target=lambda: waiter.execute("SELECT pg_advisory_lock(42)"))
        waiting_thread.start()
        wait_until(
            lambda: (
                conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()[0]
                == 1
            )
        )
        # idemdash's own purge lock
        purger = session("idemdash-purge-keys")
        assert try_purge_lock(purger, "keys")

        items = checks(client)
        locks = with_prefix(items, "advisory_lock.")

        linked = locks[f"advisory_lock.{holder.info.backend_pid}.{lock_key}"]
        assert linked["status"] == "ok"
        assert (
            linked["title"] == f"Session {holder.info.backend_pid} holds advisory lock {lock_key} for key 'k-1' "
            "in scope 'orders'"
        )
        assert linked["keys"] == [{"scope": "orders", "key": "k-1"}]
        assert (
            "'k-1' in scope 'orders': hashtextextended(idempotency_scope || ':' || idempotency_key, 0) equals "
            "the lock key and the key is claimed_by this session's application_name"
        ) in linked["detail"]
        assert "application 'worker-k-1'" in linked["detail"]

        idle_lock = next(c for c in locks.values() if c["keys"] == [{"scope": "orders", "key": "k-2"}])
        assert idle_lock["status"] == "warn" and f"Session {idle.info.backend_pid} holds" in idle_lock["title"]
        assert "hashtext(idempotency_scope || ':' || idempotency_key) equals the lock key" in idle_lock["detail"]
        assert idle_lock["fix_sql"].endswith(f"SELECT pg_terminate_backend({idle.info.backend_pid})")

        guess = locks[f"advisory_lock.{hunch.info.backend_pid}.7"]
        assert guess["keys"] == [{"scope": "orders", "key": "k-3"}] and "probably guards" in guess["detail"]

        unrelated = locks[f"advisory_lock.{other.info.backend_pid}.42"]
        assert unrelated["status"] == "ok" and unrelated["keys"] == []
        assert "Not linked to a key" in unrelated["detail"] and "hashtext(idempotency_key)" in unrelated["detail"]
        waiting = locks[f"advisory_lock.{waiter.info.backend_pid}.42"]
        assert waiting["status"] == "warn"
        assert waiting["title"] == f"Session {waiter.info.backend_pid} waits for advisory lock 42"
        assert f"behind session {other.info.backend_pid}" in waiting["detail"]
        assert waiting["fix_sql"].endswith(f"SELECT pg_terminate_backend({other.info.backend_pid})")

        own = next(c for c in locks.values() if f"Session {purger.info.backend_pid} " in c["title"])
        assert own["title"] == f"Session {purger.info.backend_pid} holds idemdash's keys purge's lock"
        assert own["status"] == "ok" and own["keys"] == []

        soup = BeautifulSoup(client.get("/health").data, "html.parser")
        item = soup.select_one(f'[data-check="advisory_lock.{holder.info.backend_pid}.{lock_key}"]')
        link = item.select_one("a[data-key-link]")
        assert link["href"] == "/keys/orders/k-1" and link.get_text() == "k-1"
        assert str(holder.info.backend_pid) in item.select_one("strong").get_text()
        assert soup.select_one(f'[data-check="advisory_lock.{other.info.backend_pid}.42"] a[data-key-link]') is None

        printed = check_cli(database_url).output
        assert f"Session {holder.info.backend_pid} holds advisory lock {lock_key}" in printed
        assert "key: scope 'orders', key 'k-1'" in printed

    finally:
        for connection in sessions:
            connection.close()  # releases lock 42, so the waiter's thread returns
        if waiting_thread is not None:
            waiting_thread.join(10)
        if waiter is not None:
            waiter.close()
    items = checks(client)
    assert with_prefix(items, "advisory_lock") == {"advisory_lock": items["advisory_lock"]}
    assert items["advisory_lock"]["title"] == "No advisory locks held in this database"


def test_sessions_and_locks_of_other_roles_need_pg_read_all_stats(conn, database_url, tables):
    role = f"idemdash_viewer_{uuid.uuid4().hex[:12]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'viewer'").format(sql.Identifier(role)))
    try:
        conn.execute(
            sql.SQL("GRANT USAGE ON SCHEMA app TO {0}; GRANT SELECT ON ALL TABLES IN SCHEMA app TO {0}").format(
                sql.Identifier(role)
            )
        )
        conn.execute("SELECT pg_advisory_lock(99)")  # this test's own (superuser) session
        url = make_conninfo(database_url, user=role, password="viewer")
        with psycopg.connect(url, autocommit=True) as viewer:
            config = Settings(statement_timeout_ms=3000)
            hidden = {c.id: c for c in activity.check_sessions(viewer, tables, config)}["sessions.hidden"]
            assert hidden.status == "warn" and "cannot be checked" in hidden.title
            assert hidden.fix_sql == f'GRANT pg_read_all_stats TO "{role}"'
            lock = activity.check_advisory_locks(viewer, tables, config)[0]
            assert lock.title == f"Session {conn.info.backend_pid} holds advisory lock 99"
            assert "this role may not see that session" in lock.detail

            conn.execute(hidden.fix_sql)
            assert "sessions.hidden" not in {c.id for c in activity.check_sessions(viewer, tables, config)}
            lock = activity.check_advisory_locks(viewer, tables, config)[0]
            assert f"user {conn.info.user}, " in lock.detail
    finally:
        conn.execute("SELECT pg_advisory_unlock_all()")
        conn.execute(sql.SQL("DROP OWNED BY {0}; DROP ROLE {0}").format(sql.Identifier(role)))
