"""A database of another library's profile, served: configured with `profile` (IDEMDASH_PROFILE, or in
IDEMDASH_CONFIG beside reference databases on the same URL), read through its own states on `/tables` and
`/api/v1/tables` (also its `/`), and never written to nor read as if it held the reference tables."""

from __future__ import annotations

import json

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from bs4 import BeautifulSoup
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.core.settings import ConfigError
from idemdash.jobs.scheduler import build
from tests import library_ddl as ddl
from tests.test_databases import answered
from tests.test_detect import CASES, IDS, _create_case, _masstransit_snake, _nservicebus

# Spring Modulith v2 rows with their states known in advance, under a one-day retention and a 300 s staleness
SPRING_ROWS = """
INSERT INTO modulith.event_publication (id, listener_id, event_type, serialized_event, publication_date,
                                        completion_date, status) VALUES
  (gen_random_uuid(), 'l', 't', 'done, old', now() - interval '3 days', now() - interval '2 days', 'COMPLETED'),
  (gen_random_uuid(), 'l', 't', 'done, new', now() - interval '3 hours', now() - interval '2 hours', 'COMPLETED'),
  (gen_random_uuid(), 'l', 't', 'failed, old', now() - interval '3 days', now() - interval '2 days', 'FAILED'),
  (gen_random_uuid(), 'l', 't', 'processing, stale', now() - interval '1 hour', NULL, 'PROCESSING'),
  (gen_random_uuid(), 'l', 't', 'published, fresh', now(), NULL, 'PUBLISHED'),
  (gen_random_uuid(), 'l', 't', 'v1-era, complete', now() - interval '3 days', now() - interval '2 days', NULL)
"""
SPRING_COUNTS = {"pending": 2, "in progress": 1, "stuck": 1, "done": 3, "failed": 1, "purgeable": 2}


@pytest.fixture(autouse=True)
def _no_config(monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)


def _states(answer: dict) -> dict[tuple[str, str], int | None | str]:
    return {
        (t["role"], s["meaning"]): (s["count"] if s["recorded"] else "not recorded")
        for t in answer["tables"]
        for s in t["states"]
    }


def test_a_library_profile_takes_the_librarys_own_names_where_none_are_set(tmp_path):
    values = settings.load({"IDEMDASH_PROFILE": "masstransit"})
    assert (values.app_schema, values.outbox_table, values.inbox_table, values.outbox_state_table) == (
        "public",
        "OutboxMessage",
        "InboxState",
        "OutboxState",
    )
    assert settings.load({"IDEMDASH_PROFILE": "masstransit", "IDEMDASH_APP_SCHEMA": "bus"}).app_schema == "bus"
    assert settings.load({}).outbox_table == "outbox_event"  # the reference's, as before
    with pytest.raises(ConfigError, match="IDEMDASH_PROFILE: expected one of reference, spring-modulith"):
        settings.load({"IDEMDASH_PROFILE": "spring"})


def test_a_spring_modulith_database_shows_the_registrys_own_states_in_a_zone_that_is_not_utc(
    make_app, empty_database_url
):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET timezone = 'Pacific/Auckland'")
    client = make_app(
        empty_database_url,
        PROFILE="spring-modulith",
        APP_SCHEMA="modulith",
        INBOX_RETENTION_DAYS=1,
        OUTBOX_RETENTION_DAYS=1,
        DEFAULT_LEASE_SECONDS=300,
    ).test_client()
    answer = client.get("/api/v1/tables").get_json()
    assert (answer["profile"], answer["version"], answer["app_schema"], answer["problem"], answer["read_only"]) == (
        "spring-modulith",
        "v2",
        "modulith",
        None,
        True,
    )
    assert [(t["role"], t["name"]) for t in answer["tables"]] == [
        ("outbox", "event_publication"),
        ("archive", "event_publication_archive"),
    ]
    states = _states(answer)
    assert {meaning: states[("outbox", meaning)] for meaning in SPRING_COUNTS} == SPRING_COUNTS
    # the archive records neither progress nor failure: said so, never 0
    assert states[("archive", "in progress")] == "not recorded" and states[("archive", "purgeable")] == 0
    # `/tables` shows the same numbers (`/` is the overview, read through the same profile:
    # tests/test_profile_on_call.py)
    soup = BeautifulSoup(client.get("/tables").data, "html.parser")
    row = soup.select_one("tr[data-role=outbox]")
    shown = {td["data-meaning"]: td.get_text(" ", strip=True) for td in row.select("td[data-meaning]")}
    assert shown == {meaning: str(n) for meaning, n in SPRING_COUNTS.items()}
    assert "not recorded" in soup.select_one("tr[data-role=archive] td[data-meaning='in progress']").get_text()
    assert [a.get_text() for a in soup.select("nav[aria-label=Pages] a")] == [
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
    assert "spring-modulith · read-only" in soup.select_one("header").get_text()


@pytest.mark.parametrize(("name", "version", "default_schema", "statements", "tables"), CASES, ids=IDS)
def test_every_library_is_read_through_its_profile_in_its_default_schema(
    make_app, empty_database_url, name, version, default_schema, statements, tables
):
    _create_case(empty_database_url, default_schema, statements)
    overrides = {"OUTBOX_TABLE": tables["outbox"]} if name == "nservicebus" else {}
    client = make_app(empty_database_url, PROFILE=name, **overrides).test_client()
    answer = client.get("/api/v1/tables").get_json()
    assert answer["problem"] is None, answer["problem"]
    assert (answer["version"], answer["app_schema"]) == (version, default_schema)
    assert {t["role"]: t["name"] for t in answer["tables"] if t["name"]} == tables
    # every state of a table that is there ran (an empty table: 0), every other one says why it has no count
    for table in answer["tables"]:
        for state in table["states"]:
            assert state["count"] == (0 if state["recorded"] and table["name"] else None), (table["role"], state)
            if state["recorded"] and table["name"]:  # its rows: none yet, on the page and in JSON
                rows = client.get(f"/api/v1/tables/{table['role']}", query_string={"state": state["meaning"]})
                assert rows.status_code == 200 and rows.get_json()["items"] == [], rows.get_json()
                page = client.get(f"/tables/{table['role']}", query_string={"state": state["meaning"]})
                assert page.status_code == 200 and b"No " in page.data
    assert client.get("/tables").status_code == 200


def test_the_on_call_routes_read_the_librarys_tables_and_the_reference_actions_answer_403(make_app, empty_database_url):
    _create_case(empty_database_url, "public", [ddl.BRANDUR])
    client = make_app(empty_database_url, PROFILE="brandur").test_client()
    api = client.get("/api/v1/keys?status=stuck")  # a runbook's link: the stuck keys by Brandur's own rule
    assert api.status_code == 200
    assert (api.get_json()["profile"], api.get_json()["state"], api.get_json()["items"]) == ("brandur", "stuck", [])
    page = client.get("/outbox")  # Brandur keeps no outbox: the page says so
    assert page.status_code == 200 and b"Brandur" in page.data and b"has no outbox table" in page.data
    refused = client.post(
        "/api/v1/keys/reclassify",
        json={"scope": "s", "key": "k", "to": "safe_to_retry", "reason": "r", "expected_attempt_count": 1},
    )
    assert refused.status_code == 403 and "IDEMDASH_PROFILE" in refused.get_json()["error"]
    assert client.get("/api/v1/tables").status_code == 200 and client.get("/healthz").status_code == 200


def test_tables_missing_where_the_configuration_points_say_where_detect_finds_them(make_app, empty_database_url):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    client = make_app(empty_database_url, PROFILE="spring-modulith").test_client()
    answer = client.get("/api/v1/tables").get_json()
    assert answer["tables"] == []
    assert answer["problem"].startswith(
        "no Spring Modulith event publication registry tables "
        "(event_publication (outbox)) with the library's columns in schema public"
    )
    assert "finds them in schema modulith (set app_schema)" in answer["problem"]
    assert "finds them in schema modulith" in BeautifulSoup(client.get("/").data, "html.parser").get_text()
    # the on-call pages say the same, each in its panel's place
    assert "finds them in schema modulith" in client.get("/api/v1/outbox").get_json()["no_table"]
    assert "finds them in schema modulith" in BeautifulSoup(client.get("/outbox").data, "html.parser").get_text()
    assert "finds them in schema modulith" in client.get("/api/v1/inbox").get_json()["no_table"]


@pytest.mark.system
def test_what_detect_prints_for_several_libraries_and_the_reference_serves_each_on_one_url(
    make_app, database_url, tmp_path
):
    """One database holding the reference tables, Spring Modulith's and MassTransit's (snake_case) and two NServiceBus
    endpoints: `idemdash detect`'s lines, pasted, serve each under /db/<name>/ with its own states."""
    _create_case(database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    _create_case(database_url, "public", [_masstransit_snake(), _nservicebus("Orders."), _nservicebus("Billing_")])
    result = CliRunner().invoke(main, ["detect", "--database-url", database_url])
    assert result.exit_code == 0, result.output
    path = tmp_path / "idemdash.toml"
    path.write_text(result.output.replace("postgresql://USER:PASSWORD@HOST:5432/DATABASE", database_url))
    client = make_app(None, CONFIG=str(path), DATABASE_URL="").test_client()
    names = [d["name"] for d in client.get("/api/v1/databases").get_json()["items"]]
    # none answered yet, none needing attention: by name
    assert names == sorted(["reference", "spring-modulith", "masstransit", "nservicebus", "nservicebus-public"])
    found = {name: client.get(f"/api/v1/db/{name}/tables").get_json() for name in names}
    assert {
        name: (a["profile"], a["problem"], [t["name"] for t in a["tables"] if t["name"]]) for name, a in found.items()
    } == {
        "reference": ("reference", None, ["idempotency_request", "processed_message", "outbox_event"]),
        "spring-modulith": ("spring-modulith", None, ["event_publication", "event_publication_archive"]),
        "masstransit": ("masstransit", None, ["inbox_state", "outbox_state", "outbox_message"]),
        "nservicebus": ("nservicebus", None, ["Billing_OutboxData"]),
        "nservicebus-public": ("nservicebus", None, ["Orders.OutboxData"]),
    }
    # the reference database keeps its pages; the others answer with their tables
    assert client.get("/api/v1/db/reference/keys").status_code == 200
    assert client.get("/api/v1/db/masstransit/keys").get_json()["no_table"].startswith("MassTransit")
    assert b"card-outbox-pending" in client.get("/db/masstransit/").data
    assert json.loads(client.get("/api/v1/db/reference/tables").data)["read_only"] is False


@pytest.mark.system
def test_all_databases_and_metrics_read_a_library_database_through_its_profile(make_app, database_url, tmp_path):
    _create_case(database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
    path = tmp_path / "idemdash.toml"
    path.write_text(
        f'[databases.orders]\nurl = "{database_url}"\n[databases.events]\nurl = "{database_url}"\n'
        'profile = "spring-modulith"\napp_schema = "modulith"\n[databases.lost]\n'
        f'url = "{database_url}"\nprofile = "brandur"\n'
    )
    client = make_app(None, CONFIG=str(path), DATABASE_URL="", DEFAULT_LEASE_SECONDS=300).test_client()
    listed = answered(client)  # the refresh asks in the background
    items = {i["name"]: i for i in listed}
    assert (
        items["orders"]["profile"],
        items["orders"]["reachable"],
        items["orders"]["stuck"],
        items["orders"]["failed"],
    ) == ("reference", True, 0, 0)
    events = items["events"]
    assert (events["profile"], events["reachable"], events["problem"]) == ("spring-modulith", True, None)
    # the same numbers as the reference tables', each by Spring Modulith's own meaning (SPRING_COUNTS): stuck, in
    # progress, pending and failed publications; it records no hold for review; the oldest pending row is an hour old
    assert (
        events["stuck"],
        events["processing"],
        events["outbox_pending"],
        events["failed"],
        events["needs_review"],
    ) == (SPRING_COUNTS["stuck"], SPRING_COUNTS["in progress"], SPRING_COUNTS["pending"], SPRING_COUNTS["failed"], None)
    assert 3500 < events["outbox_lag_seconds"] < 3700
    # and sorted with every other database by the same reasons: after the unreachable one, its stuck publication and
    # its lag put it before the reference database, which is fine
    assert events["attention"] == ["stuck_keys", "outbox_lag"]
    assert [i["name"] for i in listed] == ["lost", "events", "orders"]
    assert items["lost"]["reachable"] is False and items["lost"]["problem"].startswith("no Brandur")
    row = BeautifulSoup(client.get("/databases").data, "html.parser").select_one("tr[data-database=events]")
    shown = {td["data-metric"]: td.get_text(strip=True) for td in row.select("td[data-metric]")}
    assert shown == {"stuck": "1", "needs_review": "n/a", "outbox_pending": "2", "failed": "1"}
    scrape = client.get("/metrics").data.decode()
    assert 'idemdash_database_up{database="events"} 1.0' in scrape
    assert 'idemdash_database_up{database="lost"} 0.0' in scrape
    pending = (
        'idemdash_profile_rows{database="events",profile="spring-modulith",role="outbox",state="pending",'
        'table="event_publication"} 2.0'
    )
    assert pending in scrape
    assert 'idemdash_stuck_keys_total{database="events"}' not in scrape


def test_check_readyz_purge_and_the_scheduler_on_a_library_database(make_app, empty_database_url, monkeypatch):
    """A Brandur database without idemdash's own schema: ready (idemdash only reads it), `check` prints its states,
    `purge` deletes only finished keys (once idemdash's schema is there to record it), the scheduler purges that
    table; pointed at the wrong schema, each says why."""
    _create_case(empty_database_url, "public", [ddl.BRANDUR])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO public.idempotency_keys (created_at, idempotency_key, locked_at, request_method, "
            "request_params, request_path, recovery_point, user_id) VALUES "
            "(now() - interval '40 days', 'old', NULL, 'POST', '{}', '/rides', 'finished', 1), "
            "(now() - interval '40 days', 'stalled', NULL, 'POST', '{}', '/rides', 'started', 1)"
        )
    monkeypatch.setenv("IDEMDASH_PROFILE", "brandur")
    runner = CliRunner()
    check = runner.invoke(main, ["check", "--database-url", empty_database_url])
    assert check.exit_code == 0, check.output
    assert "brandur in schema public, read-only: idempotency_keys (keys)" in check.output
    assert "idempotency_keys purgeable: 1" in check.output
    unmigrated = runner.invoke(main, ["purge", "--database-url", empty_database_url])
    assert unmigrated.exit_code == 1 and "run `idemdash migrate`" in unmigrated.output, unmigrated.output
    assert runner.invoke(main, ["migrate", "--database-url", empty_database_url]).exit_code == 0
    dry = runner.invoke(main, ["purge", "--dry-run", "--database-url", empty_database_url])
    assert dry.exit_code == 0 and "public.idempotency_keys succeeded" in dry.output, dry.output
    assert "1 rows to delete" in " ".join(dry.output.split()), dry.output
    purge = runner.invoke(main, ["purge", "--database-url", empty_database_url])
    assert purge.exit_code == 0 and "1 rows deleted" in " ".join(purge.output.split()), purge.output
    with psycopg.connect(empty_database_url) as conn:  # the old key Brandur's reaper would take, unfinished: kept
        assert conn.execute("SELECT idempotency_key FROM public.idempotency_keys").fetchall() == [("stalled",)]
        runs = conn.execute(
            "SELECT table_name, dry_run, outcome, rows_deleted FROM idemdash.purge_run "
            "WHERE outcome <> 'failed' ORDER BY run_id"
        ).fetchall()
        assert runs == [
            ("public.idempotency_keys", True, "succeeded", 1),
            ("public.idempotency_keys", False, "succeeded", 1),
        ]
        assert conn.execute("SELECT count(*) FROM idemdash.audit_log WHERE action LIKE 'purge%%'").fetchone()[0] == 2
    assert make_app(empty_database_url, PROFILE="brandur").test_client().get("/readyz").status_code == 200

    jobs = build(settings.load(DATABASE_URL=empty_database_url), BackgroundScheduler).get_jobs()
    assert [job.id for job in jobs] == ["purge_keys", "rollups"]  # its one table on the keys' schedule; its counts

    monkeypatch.setenv("IDEMDASH_APP_SCHEMA", "rides")
    wrong = runner.invoke(main, ["check", "--database-url", empty_database_url])
    assert wrong.exit_code == 1 and "no Brandur" in wrong.output and "schema rides" in wrong.output, wrong.output
    ready = make_app(empty_database_url, PROFILE="brandur", APP_SCHEMA="rides").test_client().get("/readyz")
    assert ready.status_code == 503 and "finds them in schema public" in ready.get_json()["error"]


def test_a_states_rows_are_listed_oldest_first_page_by_page_and_a_row_shows_its_states(make_app, empty_database_url):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        # five more pending, published at known times, and one with a long payload
        for minutes in (50, 40, 30, 20, 10):
            conn.execute(
                "INSERT INTO modulith.event_publication (id, listener_id, event_type, serialized_event, "
                "publication_date, status) VALUES (gen_random_uuid(), 'l', 't', %s, "
                "now() - make_interval(mins => %s), 'PUBLISHED')",
                (f"pending {minutes}m" + "x" * 70_000, minutes),
            )
    client = make_app(
        empty_database_url,
        PROFILE="spring-modulith",
        APP_SCHEMA="modulith",
        DEFAULT_LEASE_SECONDS=300,
        OUTBOX_RETENTION_DAYS=1,
    ).test_client()
    first = client.get("/api/v1/tables/outbox?state=pending&limit=3").get_json()
    assert (first["table"], first["order_column"], first["state"]) == (
        "event_publication",
        "publication_date",
        "pending",
    )
    assert "serialized_event" not in first["items"][0]["row"]  # the payload is on the row's page
    seen = [item["row"]["status"] for item in first["items"]]
    pages = [first]
    while pages[-1]["next_cursor"]:
        pages.append(
            client.get(f"/api/v1/tables/outbox?state=pending&limit=3&cursor={pages[-1]['next_cursor']}").get_json()
        )
    items = [item for page in pages for item in page["items"]]
    assert len(items) == 7 and len({i["identity"] for i in items}) == 7  # 2 + 5 pending, each once
    times = [i["row"]["publication_date"] for i in items]
    assert times == sorted(times)  # oldest first, across pages
    # the FAILED row is incomplete for the registry, but it waits for a resubmit, not the relay: failed, not pending
    assert seen[:2] == ["PROCESSING", "PUBLISHED"] and "FAILED" not in {i["row"]["status"] for i in items}
    stuck = client.get("/api/v1/tables/outbox?state=stuck").get_json()["items"]
    assert {i["row"]["status"] for i in stuck} == {"PROCESSING", "PUBLISHED"} and len(stuck) == 6

    identity = first["items"][0]["identity"]
    row = client.get("/api/v1/tables/outbox/row", query_string={"id": identity}).get_json()
    assert row["row"]["status"] == "PROCESSING"
    assert {s["meaning"]: s["inside"] for s in row["states"]} == {
        "pending": True,
        "in progress": True,
        "stuck": True,
        "done": False,
        "failed": False,
        "purgeable": False,
    }
    long = client.get("/api/v1/tables/outbox/row", query_string={"id": items[2]["identity"]}).get_json()
    assert long["row"]["serialized_event"].endswith("(cut at 64 KiB of 70,011 characters)")
    page = BeautifulSoup(client.get("/tables/outbox/row", query_string={"id": identity}).data, "html.parser")
    assert "is stuck" in page.get_text() and "PROCESSING" in page.get_text()
    listing = BeautifulSoup(client.get("/tables/outbox?state=stuck").data, "html.parser")
    assert len(listing.select("table.library-rows tbody tr")) == 6
    # times as people read them (how long ago, the absolute time on hover), not the stored ISO text; the id links
    # to the row instead of a "Row" column repeating it
    headers = [th.get_text() for th in listing.select("table.library-rows thead th")]
    assert "Row" not in headers and headers.count("id") == 1
    first_row = listing.select_one("table.library-rows tbody tr")
    when = first_row.select("td")[headers.index("publication_date")]
    assert when.select_one("time[datetime]") and when.get_text(strip=True).endswith("ago"), when
    assert first_row.select("td")[headers.index("id")].select_one("a[href*='/tables/outbox/row']")
    row_page = BeautifulSoup(client.get("/tables/outbox/row", query_string={"id": identity}).data, "html.parser")
    published = row_page.find("code", string="publication_date").find_parent("tr")
    assert published.select_one("time[datetime]") and "UTC" in published.get_text(), published
    assert listing.select_one("nav.tabs a[aria-current=page]").get_text(strip=True) == "Stuck"

    assert client.get("/api/v1/tables/inbox?state=pending").status_code == 404  # Spring Modulith has no inbox
    assert client.get("/api/v1/tables/archive?state=in progress").status_code == 404  # not recorded there
    bad = client.get("/api/v1/tables/outbox?state=late")
    assert bad.status_code == 400 and "state" in bad.get_json()["error"]
    absent = client.get("/api/v1/tables/outbox/row", query_string={"id": '["00000000-0000-0000-0000-000000000000"]'})
    assert absent.status_code == 404 and "no row of event_publication" in absent.get_json()["error"]
    malformed = client.get("/api/v1/tables/outbox/row", query_string={"id": '["nope"]'})  # not a uuid: bad input
    assert malformed.status_code == 400 and "uuid" in malformed.get_json()["error"], malformed.get_json()
    assert client.get("/api/v1/tables/outbox/row", query_string={"id": "nope"}).status_code == 404
    assert client.get("/api/v1/tables/outbox?state=stuck&cursor=xyz").status_code == 400
