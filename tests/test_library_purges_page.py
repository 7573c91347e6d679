"""`/purges` on a database of another library's profile: it lists the library's tables that have rows the library
counts as finished and old (by their role), starts a dry run and then a purge of one of them through the page and
the API (deleting exactly the purgeable rows, recorded under the table's schema.table), filters the history by
role, refuses a table the database has no purge for, and keeps the library's rows read-only for everything else."""

from __future__ import annotations

import psycopg
import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.queries.migrate import migrate
from tests import library_ddl as ddl
from tests.test_detect import _create_case
from tests.test_profile_pages import SPRING_ROWS
from tests.test_purges_page import OPERATOR_HEADERS, VIEWER_HEADERS, form_fields, table_card, wait_finished

# SPRING_ROWS under a one-day retention: 'done, old' and the NULL-status 'v1-era, complete' are purgeable
PURGEABLE = {"done, old", "v1-era, complete"}


@pytest.fixture(autouse=True)
def _no_config(monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)


@pytest.fixture
def spring(empty_database_url):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        migrate(conn)
    return empty_database_url


def _app(make_app, url, **settings):
    return make_app(
        url, PROFILE="spring-modulith", APP_SCHEMA="modulith", OUTBOX_RETENTION_DAYS=1, PURGE_PAUSE_MS=0, **settings
    )


def _events(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {e for (e,) in conn.execute("SELECT serialized_event FROM modulith.event_publication")}


def test_the_page_lists_the_librarys_purgeable_tables_by_role(make_app, spring):
    client = _app(make_app, spring).test_client()
    page = client.get("/purges")
    assert page.status_code == 200
    soup = BeautifulSoup(page.data, "html.parser")
    cards = {card["data-table"]: card for card in soup.select("article.purge-table")}
    assert list(cards) == ["outbox", "archive"]
    outbox = cards["outbox"]
    assert outbox.select_one(".relation").get_text() == "modulith.event_publication"
    assert "never a FAILED row" in outbox.select_one(".deletes").get_text()
    assert "1 day after Spring Modulith" in outbox.get_text() and "IDEMDASH_OUTBOX_RETENTION_DAYS" in outbox.get_text()
    assert outbox.select_one("[data-action=dry-run]") is not None  # an operator (no sign-in, this machine)
    assert [a.get_text() for a in soup.select("nav a")] == [
        "Overview",
        "Hotspots",
        "Workers",
        "Suppression",
        "Outbox",
        "Audit",
        "Purges",
        "Health",
        "Runbooks",
        "Tables",
    ]
    answer = client.get("/api/v1/purges").get_json()
    assert [(t["table"], t["relation"], t["retention_days"]) for t in answer["tables"]] == [
        ("outbox", "modulith.event_publication", 1),
        ("archive", "modulith.event_publication_archive", 1),
    ]


def test_a_dry_run_then_a_purge_from_the_page_deletes_exactly_what_the_library_counts_as_finished_and_old(
    make_app, spring
):
    client = _app(make_app, spring).test_client()
    before = _events(spring)
    fields = form_fields(table_card(client, "outbox"), "dry-run")
    assert fields | {"table": "outbox", "dry_run": "1"} == fields
    dry = client.post("/purges/run", data=fields)
    assert dry.status_code == 303
    dry_id = int(dry.headers["Location"].split("started=")[1])
    with psycopg.connect(spring, autocommit=True) as conn:
        counted = wait_finished(conn, dry_id)
    assert (counted["outcome"], counted["rows_deleted"], counted["table_name"]) == (
        "succeeded",
        len(PURGEABLE),
        "modulith.event_publication",
    )
    assert _events(spring) == before  # a dry run deletes nothing
    card = table_card(client, "outbox")
    assert card.select_one("[data-dry-count]").get_text() == str(len(PURGEABLE))
    fields = form_fields(card, "purge")
    assert fields | {"table": "outbox", "dry_run": "0", "after_dry_run": str(dry_id)} == fields
    purge = client.post("/purges/run", data=fields)
    assert purge.status_code == 303
    run_id = int(purge.headers["Location"].split("started=")[1])
    with psycopg.connect(spring, autocommit=True) as conn:
        done = wait_finished(conn, run_id)
        audited = conn.execute("SELECT count(*) FROM idemdash.audit_log WHERE action LIKE 'purge%%'").fetchone()[0]
    assert (done["outcome"], done["rows_deleted"], done["dry_run"]) == ("succeeded", len(PURGEABLE), False)
    assert _events(spring) == before - PURGEABLE
    assert audited == 2  # a person started both
    history = client.get("/api/v1/purges?table=outbox").get_json()["items"]
    assert [(r["run_id"], r["table_name"]) for r in history] == [
        (run_id, "modulith.event_publication"),
        (dry_id, "modulith.event_publication"),
    ]
    assert client.get("/api/v1/purges?table=archive").get_json()["items"] == []


def test_the_api_starts_a_run_by_role_and_refuses_a_table_the_database_has_no_purge_for(make_app, spring):
    client = _app(make_app, spring).test_client()
    started = client.post("/api/v1/purges/run", json={"table": "outbox", "dry_run": True})
    assert started.status_code == 202, started.get_json()
    assert started.get_json()["table"] == "outbox"
    with psycopg.connect(spring, autocommit=True) as conn:
        assert wait_finished(conn, started.get_json()["run_id"])["rows_deleted"] == len(PURGEABLE)
    for table in ("keys", "inbox"):
        refused = client.post("/api/v1/purges/run", json={"table": table, "dry_run": True})
        assert refused.status_code == 400
        assert "table must be one of 'outbox' or 'archive'" in refused.get_json()["error"]
    assert client.get("/api/v1/purges?table=keys").status_code == 400
    with psycopg.connect(spring) as conn:
        assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 1


def test_a_viewer_or_read_only_cannot_start_one_and_the_librarys_rows_stay_read_only(make_app, spring):
    viewer = _app(make_app, spring, AUTH="proxy").test_client()
    refused = viewer.post("/api/v1/purges/run", json={"table": "outbox", "dry_run": True}, headers=VIEWER_HEADERS)
    assert refused.status_code == 403 and "viewer" in refused.get_json()["error"]
    page = BeautifulSoup(viewer.get("/purges", headers=VIEWER_HEADERS).data, "html.parser")
    assert page.select("[data-action]") == []
    operator = viewer.post("/api/v1/purges/run", json={"table": "outbox", "dry_run": True}, headers=OPERATOR_HEADERS)
    assert operator.status_code == 202
    read_only = _app(make_app, spring, READ_ONLY=True).test_client()
    refused = read_only.post("/api/v1/purges/run", json={"table": "outbox", "dry_run": True})
    assert refused.status_code == 403 and "IDEMDASH_READ_ONLY" in refused.get_json()["error"]
    # a purge is the scheduler's job; an action on the library's rows is still refused, naming the profile
    reclassify = (
        _app(make_app, spring)
        .test_client()
        .post("/api/v1/keys/reclassify", json={"scope": "s", "key": "k", "to": "safe_to_retry", "reason": "r"})
    )
    assert reclassify.status_code == 403 and "spring-modulith" in reclassify.get_json()["error"]


def test_the_command_line_purges_a_librarys_table_by_role_and_refuses_one_it_lacks(spring, monkeypatch):
    for name, value in (
        ("PROFILE", "spring-modulith"),
        ("APP_SCHEMA", "modulith"),
        ("OUTBOX_RETENTION_DAYS", "1"),
        ("PURGE_PAUSE_MS", "0"),
    ):
        monkeypatch.setenv(f"IDEMDASH_{name}", value)
    before = _events(spring)
    archive = CliRunner().invoke(main, ["purge", "--table", "archive", "--database-url", spring])
    assert archive.exit_code == 0 and "modulith.event_publication_archive succeeded" in archive.output, archive.output
    assert _events(spring) == before  # the archive's purge leaves the registry alone
    outbox = CliRunner().invoke(main, ["purge", "--table", "outbox", "--database-url", spring])
    assert outbox.exit_code == 0 and "modulith.event_publication succeeded" in outbox.output, outbox.output
    assert _events(spring) == before - PURGEABLE
    monkeypatch.setenv("IDEMDASH_PROFILE", "reference")
    wrong = CliRunner().invoke(main, ["purge", "--table", "archive", "--database-url", spring])
    assert wrong.exit_code == 1, wrong.output
    assert "--table archive: not a table of this database's purges" in wrong.output + (wrong.stderr or ""), wrong


def test_a_library_that_keeps_its_own_expiry_shows_no_retention_setting(make_app, empty_database_url):
    _create_case(empty_database_url, "wolverine", [ddl.WOLVERINE])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrate(conn)
    answer = make_app(empty_database_url, PROFILE="wolverine").test_client().get("/api/v1/purges").get_json()
    assert [(t["table"], t["relation"], t["retention_days"]) for t in answer["tables"]] == [
        ("inbox", "wolverine.wolverine_incoming_envelopes", None)
    ]
    assert "own expiry" in answer["tables"][0]["retention"]
