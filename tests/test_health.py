"""/health and GET /api/v1/health/schema: each check finds what is wrong, and its fix_sql fixes it."""

from __future__ import annotations

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.queries import Tables
from idemdash.queries.indexes import ADVICE
from idemdash.queries.migrate import list_migrations, migrate


def checks(client) -> dict[str, dict]:
    response = client.get("/api/v1/health/schema")
    assert response.status_code == 200
    body = response.get_json()
    items = {c["id"]: c for c in body["items"]}
    assert len(items) == len(body["items"]), "check ids are unique"
    for c in body["items"]:
        assert set(c) >= {"id", "status", "title", "detail", "fix_sql"} and c["status"] in ("ok", "warn", "fail")
    assert body["counts"] == {s: sum(c["status"] == s for c in body["items"]) for s in ("fail", "warn", "ok")}
    return items


def problems(items: dict[str, dict]) -> dict[str, str]:
    return {i: c["status"] for i, c in items.items() if c["status"] != "ok"}


def create_recommended_indexes(conn) -> None:
    for advice in ADVICE.values():
        conn.execute(advice.create_statement(Tables()))


@pytest.fixture
def indexed(conn):
    create_recommended_indexes(conn)
    return conn


def test_a_clean_database_has_no_failures(client, conn):
    items = checks(client)
    assert [i for i, c in items.items() if c["status"] == "fail"] == []
    assert items["migrations"]["status"] == "ok"
    assert all(items[f"table.{t}"]["status"] == "ok" for t in ("keys", "inbox", "outbox"))
    assert items["retention.inbox"]["status"] == "ok" and items["retention.outbox"]["status"] == "ok"
    assert items["retention.keys"]["status"] == "ok"


def test_with_the_recommended_indexes_everything_is_ok(client, indexed):
    items = checks(client)
    assert problems(items) == {}
    assert items["index"]["title"] == f"All {len(ADVICE)} recommended indexes exist"
    assert client.get("/api/v1/health/schema").get_json()["status"] == "ok"


def test_a_missing_index_is_a_warning_whose_fix_sql_creates_it(client, indexed):
    advice = ADVICE["index_outbox_pending"]
    name = advice.index_name(Tables())
    indexed.execute(f'DROP INDEX app."{name}"')
    items = checks(client)
    assert problems(items) == {"index.index_outbox_pending": "warn"}
    finding = items["index.index_outbox_pending"]
    assert name in finding["title"]
    assert finding["fix_sql"].startswith("CREATE INDEX CONCURRENTLY")
    assert advice.why in finding["detail"]
    indexed.execute(finding["fix_sql"])
    assert problems(checks(client)) == {}


def test_an_invalid_index_is_a_warning_with_drop_and_create(client, indexed):
    name = ADVICE["index_keys_leases"].index_name(Tables())
    indexed.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (f'app."{name}"',))
    finding = checks(client)["index.index_keys_leases"]
    assert finding["status"] == "warn" and "invalid" in finding["title"]
    drop, create = finding["fix_sql"].split(";\n")
    indexed.execute(drop)
    indexed.execute(create)
    assert problems(checks(client)) == {}


def test_a_missing_required_column_fails_and_an_optional_one_warns(client, indexed):
    indexed.execute("ALTER TABLE app.idempotency_request DROP COLUMN locked_until CASCADE")
    indexed.execute("ALTER TABLE app.outbox_event DROP COLUMN payload")
    items = checks(client)
    # the CASCADE took the indexes on locked_until with it
    assert problems(items) == {
        "column.keys.locked_until": "fail",
        "column.outbox.payload": "warn",
        "index.index_keys_leases": "warn",
        "index.index_keys_unleased_filters": "warn",
        "index.index_keys_held": "warn",
    }
    required = items["column.keys.locked_until"]
    assert "required" in required["detail"]
    assert required["fix_sql"] == 'ALTER TABLE "app"."idempotency_request" ADD COLUMN "locked_until" timestamptz'
    optional = items["column.outbox.payload"]
    assert "outbox page's row list" in optional["detail"]  # names the feature that degrades
    assert optional["fix_sql"] == 'ALTER TABLE "app"."outbox_event" ADD COLUMN "payload" jsonb'
    assert client.get("/api/v1/health/schema").get_json()["status"] == "fail"
    for finding in (
        required,
        optional,
        items["index.index_keys_leases"],
        items["index.index_keys_unleased_filters"],
        items["index.index_keys_held"],
    ):
        indexed.execute(finding["fix_sql"])
    assert problems(checks(client)) == {}


def test_a_missing_table_fails_and_the_other_checks_still_run(make_app, conn):
    items = checks(make_app(KEYS_TABLE="idem_keys").test_client())
    assert items["table.keys"]["status"] == "fail"
    assert "IDEMDASH_KEYS_TABLE" in items["table.keys"]["detail"]
    assert items["retention.keys"]["status"] == "warn" and "could not run" in items["retention.keys"]["title"]
    assert items["migrations"]["status"] == "ok" and items["table.inbox"]["status"] == "ok"
    assert not any(i.startswith("index.index_keys") for i in items)  # no index advice for a table that is not there


def test_settings_shorter_than_the_replay_horizon_warn_with_the_setting_that_fixes_it(make_app, conn):
    client = make_app(REPLAY_HORIZON=72 * 3600, INBOX_RETENTION_DAYS=2, OUTBOX_RETENTION_DAYS=3).test_client()
    items = checks(client)
    inbox = items["retention.inbox"]
    assert inbox["status"] == "warn" and "2 d" in inbox["title"] and "horizon (3 d)" in inbox["title"]
    assert inbox["fix"] == "IDEMDASH_INBOX_RETENTION_DAYS=3"
    assert items["retention.outbox"]["status"] == "ok"  # 3 days cover 72 hours
    items = checks(make_app(REPLAY_HORIZON=100 * 3600, INBOX_RETENTION_DAYS=30, OUTBOX_RETENTION_DAYS=4).test_client())
    assert items["retention.outbox"]["status"] == "warn"
    assert items["retention.outbox"]["fix"] == "IDEMDASH_OUTBOX_RETENTION_DAYS=5"
    assert items["retention.inbox"]["status"] == "ok"


def test_keys_that_expire_before_the_replay_horizon_warn_per_scope_with_sql_that_extends_them(client, conn):
    conn.execute("""INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                        created_at, expires_at)
                    SELECT scope, scope || g, 'h', 'succeeded', now() - g * interval '1 minute',
                           now() - g * interval '1 minute' + retention
                    FROM generate_series(1, 5) g,
                         (VALUES ('refund''s', interval '1 hour'), ('create_order', interval '2 days'),
                                 ('mixed', interval '3 days')) s(scope, retention)""")
    # one key of 'mixed' expires early: the shortest decides
    conn.execute(
        "UPDATE app.idempotency_request SET expires_at = created_at + interval '6 hours' "
        "WHERE idempotency_key = 'mixed3'"
    )
    items = checks(client)
    assert problems(items) == problems(items) | {"retention.keys.refund's": "warn", "retention.keys.mixed": "warn"}
    assert "retention.keys.create_order" not in items
    refund = items["retention.keys.refund's"]
    assert "1 h" in refund["title"] and "horizon (1 d)" in refund["title"]
    assert "'refund''s'" in refund["fix_sql"] and refund["fix_sql"].startswith("UPDATE")
    assert "6 h" in items["retention.keys.mixed"]["title"]
    conn.execute(refund["fix_sql"])
    conn.execute(items["retention.keys.mixed"]["fix_sql"])
    items = checks(client)
    assert not any(i.startswith("retention.keys.") for i in items)
    keys = items["retention.keys"]
    assert keys["status"] == "ok" and "15 recent key(s) in 3 scope(s)" in keys["detail"]


def test_an_unmigrated_database_fails_with_run_idemdash_migrate(make_app, empty_database_url):
    client = make_app(url=empty_database_url).test_client()
    items = checks(client)
    assert items["migrations"]["status"] == "fail"
    assert items["migrations"]["fix"] == "idemdash migrate"
    assert all(items[f"table.{t}"]["status"] == "fail" for t in ("keys", "inbox", "outbox"))
    soup = BeautifulSoup(client.get("/health").data, "html.parser")
    first = soup.select_one("li.check")
    assert first["data-status"] == "fail"  # failures first
    assert "idemdash migrate" in soup.select_one('[data-check="migrations"]').get_text()


def test_pending_migrations_are_named(make_app, empty_database_url):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrate(conn)
        last = list_migrations()[-1]
        conn.execute("DELETE FROM idemdash.schema_migration WHERE version = %s", (last.version,))
    items = checks(make_app(url=empty_database_url).test_client())
    finding = items["migrations"]
    assert finding["status"] == "fail" and f"{last.version:04d}_{last.name}" in finding["title"]


def test_an_edited_migration_fails(client, conn):
    conn.execute("UPDATE idemdash.schema_migration SET checksum = 'x' WHERE version = 1")
    items = checks(client)
    assert items["migrations.edited"]["status"] == "fail" and "0001_init" in items["migrations.edited"]["title"]


def test_the_page_lists_findings_worst_first_with_their_sql(client, indexed):
    indexed.execute("ALTER TABLE app.outbox_event DROP COLUMN attempt_count CASCADE")
    indexed.execute(f'DROP INDEX app."{ADVICE["index_inbox_processed"].index_name(Tables())}"')
    response = client.get("/health")
    assert response.status_code == 200
    soup = BeautifulSoup(response.data, "html.parser")
    statuses = [li["data-status"] for li in soup.select("li.check")]
    assert statuses == sorted(statuses, key=["fail", "warn", "ok"].index)
    assert soup.select_one('[data-count="warn"]').get_text().startswith(str(statuses.count("warn")))
    column = soup.select_one('[data-check="column.outbox.attempt_count"]')
    assert (
        column.select_one("pre[data-fix-sql]").get_text()
        == 'ALTER TABLE "app"."outbox_event" ADD COLUMN "attempt_count" integer;'
    )
    index = soup.select_one('[data-check="index.index_inbox_processed"]')
    assert index.select_one("pre[data-fix-sql]").get_text().startswith("CREATE INDEX CONCURRENTLY")
    fragment = client.get("/health", headers={"HX-Request": "true"})
    assert BeautifulSoup(fragment.data, "html.parser").select_one("header.topbar") is None


def test_a_check_that_fails_says_why_and_the_checks_after_it_still_run(client, monkeypatch):
    """The checks share one transaction; a check's error ends it, and the ones after it run in a new one."""
    from idemdash import checks as checks_module

    def broken(conn, tables, config):
        conn.execute("SELECT 1 FROM no_such_table_for_this_test")
        return []

    everything = checks_module.CHECKS
    middle = len(everything) // 2
    monkeypatch.setattr(
        checks_module,
        "CHECKS",
        (*everything[:middle], ("broken", "A broken check", broken), *everything[middle:]),
    )
    items = checks(client)
    assert items["broken"]["status"] == "warn" and "could not run" in items["broken"]["title"]
    assert "no_such_table_for_this_test" in items["broken"]["detail"]
    last_id = everything[-1][0]
    assert any(i == last_id or i.startswith(last_id + ".") for i in items), sorted(items)
