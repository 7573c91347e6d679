"""/purges and its JSON twin: history with keyset pagination, live progress, run now (dry run first), refusals."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import get_args

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard.schemas.purges import REFERENCE_TABLES, HistoryRun, PurgeHistory, PurgeOutcome, TableStatus
from idemdash.dashboard.targets import app_settings
from idemdash.jobs.purge_run import OUTCOMES, TABLES
from idemdash.queries.target import Target

OPERATOR_HEADERS = {"X-Forwarded-User": "alice@example.com", "X-Forwarded-Groups": "idemdash-operators"}
VIEWER_HEADERS = {"X-Forwarded-User": "bob@example.com", "X-Forwarded-Groups": "developers"}


# -- data -------------------------------------------------------------------------------------------------------


def add_run(
    conn,
    table="inbox",
    *,
    started_at=None,
    outcome="succeeded",
    dry_run=False,
    rows=0,
    batches=0,
    error=None,
    started_by="scheduler",
) -> int:
    return conn.execute(
        """INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted, dry_run,
                                           outcome, error, started_by)
           VALUES (%s, coalesce(%s, clock_timestamp()), CASE WHEN %s <> 'running' THEN clock_timestamp() END,
                   %s, %s, %s, %s, %s, %s)
           RETURNING run_id""",
        (table, started_at, outcome, batches, rows, dry_run, outcome, error, started_by),
    ).fetchone()[0]


def add_keys(conn) -> dict[str, int]:
    """Keys of every kind; returns how many of each, 'eligible' being what a keys purge deletes."""
    kinds = {
        # (status, expires_at offset) → count
        ("succeeded", "-1 hour"): 7,  # eligible
        ("failed_final", "-2 days"): 4,  # eligible
        ("succeeded", "+1 hour"): 3,  # not expired yet
        ("processing", "-1 hour"): 2,  # never purged, however old
        ("failed_retryable", "-1 hour"): 2,  # never purged
    }
    for (status, offset), count in kinds.items():
        conn.execute(
            """INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status,
                   claimed_by, claimed_at, locked_until, created_at, updated_at, expires_at)
               SELECT 'create_order', %s || '-' || g, 'h', %s, 'api-1', now() - interval '10 days',
                      now() - interval '10 days', now() - interval '10 days', now() - interval '9 days',
                      now() + %s::interval
               FROM generate_series(1, %s) g""",
            (f"{status}{offset}", status, offset, count),
        )
    return {"eligible": 11, "total": sum(kinds.values())}


def add_inbox(conn, old=9, recent=5) -> None:
    conn.execute(
        """INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)
                    SELECT 'billing', 'old-' || g, 'h', now() - interval '40 days' FROM generate_series(1, %s) g""",
        (old,),
    )
    conn.execute(
        """INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at)
                    SELECT 'billing', 'new-' || g, 'h', now() - interval '1 day' FROM generate_series(1, %s) g""",
        (recent,),
    )


def add_outbox(conn) -> None:
    for status, published, count in (
        ("published", "now() - interval '10 days'", 6),
        ("published", "now() - interval '1 day'", 2),
        ("pending", "NULL", 3),
    ):
        conn.execute(
            f"""INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                             idempotency_key, payload, status, created_at, published_at)
                         SELECT 'e', 'a', gen_random_uuid(), 's', gen_random_uuid()::text, '{{}}', %s,
                                now() - interval '20 days', {published}
                         FROM generate_series(1, %s) g""",
            (status, count),
        )


def count(conn, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM app.{table}").fetchone()[0]


def wait_finished(conn, run_id: int, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute(
            "SELECT outcome, rows_deleted, batches, dry_run, table_name, started_by, error "
            "FROM idemdash.purge_run WHERE run_id = %s",
            (run_id,),
        ).fetchone()
        if row is not None and row[0] != "running":
            return dict(
                zip(
                    ("outcome", "rows_deleted", "batches", "dry_run", "table_name", "started_by", "error"),
                    row,
                    strict=True,
                )
            )
        assert time.monotonic() < deadline, f"run {run_id} did not finish in {timeout} s: {row}"
        time.sleep(0.05)


def run_api(client, body, **kwargs):
    return client.post("/api/v1/purges/run", json=body, **kwargs)


def soup_of(response) -> BeautifulSoup:
    return BeautifulSoup(response.data, "html.parser")


def table_card(client, table: str, **kwargs):
    response = client.get("/purges", **kwargs)
    assert response.status_code == 200
    card = soup_of(response).select_one(f'article[data-table="{table}"]')
    assert card is not None
    return card


def form_fields(card, action: str) -> dict:
    button = card.select_one(f'button[data-action="{action}"]')
    assert button is not None, f"no {action} button on the {card['data-table']} card"
    form = button.find_parent("form")
    return {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}


# -- history ------------------------------------------------------------------------------------------------------


def test_history_with_ties_in_started_at_paginates_without_duplicates_or_gaps(client, conn):
    tie = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    ids = [add_run(conn, "keys", started_at=tie, rows=i) for i in range(7)]
    ids += [
        add_run(conn, "inbox", started_at=tie + timedelta(seconds=1)),
        add_run(conn, "outbox", started_at=tie - timedelta(seconds=1)),
    ]
    ids += [add_run(conn, "keys", started_at=tie, rows=99) for _ in range(2)]
    want = [
        r[0]
        for r in conn.execute("SELECT run_id FROM idemdash.purge_run ORDER BY started_at DESC, run_id DESC").fetchall()
    ]
    assert sorted(want) == sorted(ids)

    seen, cursor, pages = [], None, 0
    while True:
        body = client.get(
            "/api/v1/purges", query_string={"limit": 3, **({"cursor": cursor} if cursor else {})}
        ).get_json()
        seen += [item["run_id"] for item in body["items"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == want  # same order, nothing twice, nothing skipped
    assert pages == 4

    # the page's "Older" link walks the same way
    html_seen, url = [], "/purges?limit=4"
    while url:
        soup = soup_of(client.get(url))
        html_seen += [int(tr["data-run-id"]) for tr in soup.select("table.purge-history tbody tr")]
        older = soup.select_one('nav.pager a[rel="next"]')
        url = older["href"] if older else None
    assert html_seen == want


def test_history_filters_by_table_and_run(client, conn):
    keys_run = add_run(conn, "keys")
    add_run(conn, "inbox")
    body = client.get("/api/v1/purges?table=keys").get_json()
    assert [i["run_id"] for i in body["items"]] == [keys_run]
    body = client.get(f"/api/v1/purges?run_id={keys_run}").get_json()
    assert [i["table_name"] for i in body["items"]] == ["keys"]


def test_history_filters_by_outcome_and_starter(client, conn):
    failed = add_run(conn, "keys", outcome="failed", error="statement timeout")
    by_alice = add_run(conn, "inbox", started_by="alice@example.com")
    both = add_run(conn, "outbox", outcome="failed", started_by="alice@example.com")
    add_run(conn, "keys")
    running = add_run(conn, "inbox", outcome="running")

    def ids(query):
        response = client.get(f"/api/v1/purges?{query}")
        assert response.status_code == 200, response.get_json()
        return [i["run_id"] for i in response.get_json()["items"]]

    assert ids("outcome=failed") == [both, failed]
    assert ids("outcome=running") == [running]
    assert ids("started_by=alice@example.com") == [both, by_alice]
    assert ids("outcome=failed&started_by=alice@example.com") == [both]
    assert ids("outcome=cancelled") == []
    # the page shows the same runs, says which filter it applies, and keeps it on its poll and pager links
    soup = soup_of(client.get("/purges?outcome=failed&limit=1"))
    assert [int(tr["data-run-id"]) for tr in soup.select("table.purge-history tbody tr")] == [both]
    assert "showing failed runs only" in soup.select_one(".filter-links").get_text()
    assert "outcome=failed" in soup.select_one('nav.pager a[rel="next"]')["href"]


@pytest.mark.parametrize(
    "query, field",
    [
        ("outcome=zzz", "outcome"),  # once answered 200, unfiltered
        ("started_by=" + "s" * 201, "started_by"),
        ("outcome=failed&outcome=succeeded", "outcome"),
        ("started_by=", "started_by"),
    ],
)
def test_history_refuses_an_unknown_outcome_or_a_bad_starter(client, conn, query, field):
    add_run(conn, "keys")
    response = client.get(f"/api/v1/purges?{query}")
    assert response.status_code == 400
    assert response.get_json()["error"].startswith(field)


def test_the_models_name_every_table_and_outcome_the_engine_has():
    assert tuple(TABLES) == REFERENCE_TABLES
    assert get_args(PurgeOutcome) == ("running", *OUTCOMES)


def test_the_history_answer_has_exactly_the_documented_fields(client, conn):
    add_run(conn, "keys")
    body = client.get("/api/v1/purges").get_json()
    assert set(body) == set(PurgeHistory.model_fields)
    assert set(body["items"][0]) == set(HistoryRun.model_fields)
    assert set(body["tables"][0]) == set(TableStatus.model_fields)


@pytest.mark.parametrize(
    "query, fragment",
    [
        ("cursor=abc", "cursor is not valid"),
        ("cursor=" + "W10", "cursor is not valid"),
        ("table=users", "table must be one of 'keys', 'inbox' or 'outbox'"),
        ("limit=0", "limit must be at least 1"),
    ],
)
def test_bad_history_queries_are_400(client, query, fragment):
    response = client.get(f"/api/v1/purges?{query}")
    assert response.status_code == 400
    assert fragment in response.get_json()["error"]


def test_history_shows_outcomes_and_escapes_error_text(client, conn):
    add_run(conn, "outbox", outcome="failed", error="<script>alert(1)</script> statement timeout")
    add_run(conn, "keys", outcome="budget_exhausted", rows=5000, batches=1)
    soup = soup_of(client.get("/purges"))
    rows = {tr["data-outcome"]: tr for tr in soup.select("table.purge-history tbody tr")}
    assert set(rows) == {"failed", "budget_exhausted"}
    failed = rows["failed"]
    assert failed.select_one(".badge.failed").get_text() == "failed"
    assert failed.select_one(".error-text").get_text() == "<script>alert(1)</script> statement timeout"
    assert failed.find("script") is None  # shown as text, not markup
    assert rows["budget_exhausted"].select_one(".badge").get_text() == "budget exhausted"


def test_no_runs_yet_says_so(client):
    soup = soup_of(client.get("/purges"))
    assert "No purge has run yet" in soup.select_one("p.empty").get_text()
    assert soup.select_one('article[data-table="keys"] [data-last-run]').get_text(strip=True) == "never"


# -- tables: retention, schedule, last runs --------------------------------------------------------------------


def test_tables_say_what_they_delete_retention_schedule_and_last_runs(make_app, conn):
    client = make_app(
        PURGE_INBOX_SCHEDULE="7 * * * *", PURGE_OUTBOX_SCHEDULE="off", INBOX_RETENTION_DAYS=12, OUTBOX_RETENTION_DAYS=3
    ).test_client()
    success = add_run(conn, "inbox", rows=40)
    add_run(conn, "inbox", outcome="failed", error="boom")
    body = client.get("/api/v1/purges").get_json()
    tables = {t["table"]: t for t in body["tables"]}
    assert list(tables) == ["keys", "inbox", "outbox"]
    inbox = tables["inbox"]
    assert inbox["retention_days"] == 12 and "12 days" in inbox["retention"]
    assert inbox["schedule"] == "7 * * * *"
    next_run = datetime.fromisoformat(inbox["next_run_at"])
    now = datetime.now(timezone.utc)
    assert next_run.minute == 7 and now < next_run <= now + timedelta(hours=1)
    assert inbox["last_run"]["outcome"] == "failed"
    success_at = conn.execute("SELECT finished_at FROM idemdash.purge_run WHERE run_id = %s", (success,)).fetchone()[0]
    assert datetime.fromisoformat(inbox["last_success_at"]) == success_at
    assert tables["outbox"]["schedule"] == "off" and tables["outbox"]["next_run_at"] is None
    assert tables["outbox"]["retention_days"] == 3
    assert tables["keys"]["retention_days"] is None and "expires_at" in tables["keys"]["retention"]
    assert tables["keys"]["last_run"] is None and tables["keys"]["last_success_at"] is None

    card = table_card(client, "inbox")
    assert "processed_at is older than the retention" in card.select_one(".deletes").get_text()
    assert card.select_one("[data-next-run]").get_text() == next_run.strftime("%H:%M UTC")
    assert "failed" in card.select_one("[data-last-run]").get_text()
    assert "40 deleted" in card.select_one("[data-last-success]").get_text()
    assert "off" in table_card(client, "outbox").select_one("dl.facts").get_text()
    assert "never pending" in table_card(client, "outbox").select_one(".deletes").get_text()


# -- live progress -----------------------------------------------------------------------------------------------


def test_running_runs_show_live_progress_in_the_polling_fragment(client, conn):
    run_id = add_run(conn, "outbox", outcome="running", dry_run=False, batches=0, rows=0)
    fragment = client.get("/purges", headers={"HX-Request": "true"})
    soup = soup_of(fragment)
    panel = soup.select_one("#purges-panel")
    assert soup.select_one("header.topbar") is None  # only the fragment
    assert panel["hx-trigger"] == "every 3s, refresh"  # fast while something runs
    progress = soup.select_one(f'article[data-table="outbox"] [data-running-run="{run_id}"]')
    assert progress.select_one("[data-batches]").get_text() == "0"
    # no run buttons for a table that is being purged right now: only the running run's Cancel
    buttons = soup.select('article[data-table="outbox"] button')
    assert [b["data-action"] for b in buttons] == ["cancel"]

    conn.execute("UPDATE idemdash.purge_run SET batches = 3, rows_deleted = 12345 WHERE run_id = %s", (run_id,))
    soup = soup_of(client.get("/purges", headers={"HX-Request": "true"}))
    progress = soup.select_one(f'[data-running-run="{run_id}"]')
    assert progress.select_one("[data-batches]").get_text() == "3"
    assert progress.select_one("[data-rows]").get_text() == "12,345"
    assert client.get("/api/v1/purges").get_json()["running"][0]["rows_deleted"] == 12345

    conn.execute(
        "UPDATE idemdash.purge_run SET outcome = 'succeeded', finished_at = clock_timestamp() WHERE run_id = %s",
        (run_id,),
    )
    soup = soup_of(client.get("/purges", headers={"HX-Request": "true"}))
    assert soup.select_one("[data-running-run]") is None
    assert soup.select_one("#purges-panel")["hx-trigger"] == "every 15s, refresh"
    assert client.get("/api/v1/purges").get_json()["running"] == []


# -- run now: the API -------------------------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize(
    "table, setup, eligible, remaining_check",
    [
        (
            "keys",
            add_keys,
            11,
            "SELECT count(*) FROM app.idempotency_request"
            " WHERE status IN ('succeeded', 'failed_final') AND expires_at < now()",
        ),
        (
            "inbox",
            add_inbox,
            9,
            "SELECT count(*) FROM app.processed_message WHERE processed_at < now() - interval '30 days'",
        ),
        (
            "outbox",
            add_outbox,
            6,
            "SELECT count(*) FROM app.outbox_event WHERE status = 'published' AND published_at < now() - interval '7 "
            "days'",
        ),
    ],
)
def test_run_api_dry_run_counts_then_purge_deletes_exactly_the_eligible_rows(
    client, conn, table, setup, eligible, remaining_check
):
    setup(conn)
    relation = {"keys": "idempotency_request", "inbox": "processed_message", "outbox": "outbox_event"}[table]
    before = count(conn, relation)

    response = run_api(client, {"table": table, "dry_run": True})
    assert response.status_code == 202, response.get_json()
    body = response.get_json()
    assert body["table"] == table and body["dry_run"] is True and isinstance(body["run_id"], int)
    assert body["status_url"] == f"/api/v1/purges?run_id={body['run_id']}"
    dry = wait_finished(conn, body["run_id"])
    assert dry["outcome"] == "succeeded" and dry["dry_run"] is True and dry["rows_deleted"] == eligible
    assert dry["started_by"].startswith("anonymous@")
    assert count(conn, relation) == before  # a dry run deletes nothing
    status = client.get(body["status_url"]).get_json()
    assert [i["rows_deleted"] for i in status["items"]] == [eligible]

    response = run_api(client, {"table": table, "dry_run": False})
    assert response.status_code == 202
    real = wait_finished(conn, response.get_json()["run_id"])
    assert real["outcome"] == "succeeded" and real["rows_deleted"] == eligible and real["dry_run"] is False
    assert count(conn, relation) == before - eligible
    assert conn.execute(remaining_check).fetchone()[0] == 0


def test_keys_purge_never_touches_processing_retryable_or_unexpired_keys(client, conn):
    add_keys(conn)
    run_id = run_api(client, {"table": "keys", "dry_run": False}).get_json()["run_id"]
    assert wait_finished(conn, run_id)["rows_deleted"] == 11
    left = dict(conn.execute("SELECT status::text, count(*) FROM app.idempotency_request GROUP BY 1").fetchall())
    assert left == {"succeeded": 3, "processing": 2, "failed_retryable": 2}


def test_a_purge_already_running_for_the_table_is_reported_as_skipped(client, conn, database_url):
    # hold the engine's per-table lock, as a running purge on another replica would
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(hashtextextended('idemdash.purge.' || 'inbox', 0))")
        response = run_api(client, {"table": "inbox", "dry_run": True})
        assert response.status_code == 409
        body = response.get_json()
        assert body["outcome"] == "skipped" and "already running" in body["error"]
        assert body["status_url"] == f"/api/v1/purges?run_id={body['run_id']}"
        assert (
            conn.execute("SELECT outcome FROM idemdash.purge_run WHERE run_id = %s", (body["run_id"],)).fetchone()[0]
            == "skipped"
        )
        # the other tables are not blocked
        other = run_api(client, {"table": "outbox", "dry_run": True})
        assert other.status_code == 202
        wait_finished(conn, other.get_json()["run_id"])


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"table": "users", "dry_run": True}, "table must be one of 'keys', 'inbox' or 'outbox'"),
        ({"table": "archive", "dry_run": True}, "table must be one of 'keys', 'inbox' or 'outbox'"),
        ({"table": None, "dry_run": True}, "table must be a string"),
        ({"table": "keys"}, "dry_run is required"),
        ({"table": "keys", "dry_run": "false"}, "dry_run must be true or false"),
        ({"table": "keys", "dry_run": 0}, "dry_run must be true or false"),
        ({"table": "keys", "dry_run": True, "force": True}, "force is not a field of this request"),
        (["keys"], "send a JSON object"),
    ],
)
def test_run_api_bad_input_is_400_and_starts_nothing(client, conn, body, fragment):
    response = run_api(client, body)
    assert response.status_code == 400
    assert fragment in response.get_json()["error"]
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0


def test_run_api_wants_json(client, conn):
    response = client.post("/api/v1/purges/run", data={"table": "keys", "dry_run": "true"})
    assert response.status_code in (400, 415)
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0


# -- run now: the page (dry run first) ----------------------------------------------------------------------------


def test_page_flow_dry_run_then_purge_now(client, conn):
    add_inbox(conn, old=9, recent=5)
    card = table_card(client, "inbox")
    assert card.select_one('button[data-action="purge"]') is None  # no purge before a dry run
    fields = form_fields(card, "dry-run")
    assert fields["dry_run"] == "1" and fields["csrf_token"]
    response = client.post("/purges/run", data=fields)
    assert response.status_code == 303
    run_id = int(response.headers["Location"].split("started=")[1])
    assert wait_finished(conn, run_id)["rows_deleted"] == 9
    assert count(conn, "processed_message") == 14

    card = table_card(client, "inbox")
    assert card.select_one("[data-dry-count]").get_text() == "9"
    fields = form_fields(card, "purge")
    assert fields == fields | {"table": "inbox", "dry_run": "0", "after_dry_run": str(run_id)}
    response = client.post("/purges/run", data=fields)
    assert response.status_code == 303
    purge_id = int(response.headers["Location"].split("started=")[1])
    finished = wait_finished(conn, purge_id)
    assert finished["outcome"] == "succeeded" and finished["rows_deleted"] == 9 and not finished["dry_run"]
    assert count(conn, "processed_message") == 5

    # the purge used the dry run up: the next purge needs a new one
    card = table_card(client, "inbox")
    assert card.select_one('button[data-action="purge"]') is None
    assert card.select_one('button[data-action="dry-run"]') is not None
    assert "9 deleted" in card.select_one("[data-last-success]").get_text()


def test_htmx_form_answers_with_the_panel_and_a_message(client, conn):
    add_outbox(conn)
    fields = form_fields(table_card(client, "outbox"), "dry-run")
    response = client.post("/purges/run", data=fields, headers={"HX-Request": "true"})
    assert response.status_code == 200
    soup = soup_of(response)
    assert soup.select_one("header.topbar") is None and soup.select_one("#purges-panel") is not None
    message = soup.select_one("[data-message]").get_text()
    assert "Dry run of outbox" in message
    run_id = conn.execute("SELECT max(run_id) FROM idemdash.purge_run").fetchone()[0]
    assert wait_finished(conn, run_id)["rows_deleted"] == 6


def test_purge_now_without_a_fresh_dry_run_is_refused(client, conn):
    add_inbox(conn)
    fields = form_fields(table_card(client, "inbox"), "dry-run")
    token = fields["csrf_token"]
    # no dry run at all
    response = client.post(
        "/purges/run", data={"csrf_token": token, "table": "inbox", "dry_run": "0", "after_dry_run": "1"}
    )
    assert response.status_code == 409
    assert "run a dry run again" in soup_of(response).select_one(".flash.error").get_text()
    # a dry run that a real run has overtaken since
    dry = add_run(conn, "inbox", dry_run=True, rows=9)
    add_run(conn, "inbox", dry_run=False, rows=9)
    response = client.post(
        "/purges/run", data={"csrf_token": token, "table": "inbox", "dry_run": "0", "after_dry_run": str(dry)}
    )
    assert response.status_code == 409
    # a dry run over an hour old
    old = add_run(conn, "inbox", dry_run=True, rows=9)
    conn.execute(
        "UPDATE idemdash.purge_run SET started_at = now() - interval '2 hours', "
        "finished_at = now() - interval '2 hours' WHERE run_id = %s",
        (old,),
    )
    response = client.post(
        "/purges/run", data={"csrf_token": token, "table": "inbox", "dry_run": "0", "after_dry_run": str(old)}
    )
    assert response.status_code == 409
    # htmx gets the panel with the message (htmx does not swap 4xx answers)
    response = client.post(
        "/purges/run",
        data={"csrf_token": token, "table": "inbox", "dry_run": "0", "after_dry_run": str(old)},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert "run a dry run again" in soup_of(response).select_one(".flash.error").get_text()
    assert count(conn, "processed_message") == 14  # nothing was purged
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run WHERE NOT dry_run").fetchone()[0] == 1


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"table": "users", "dry_run": "1"}, "table must be one of"),
        ({"table": "inbox", "dry_run": "yes"}, "dry_run must be 1"),
        ({"table": "inbox", "dry_run": "0", "after_dry_run": "x"}, "after_dry_run must be the run id"),
    ],
)
def test_form_bad_input_is_400(client, conn, data, fragment):
    token = form_fields(table_card(client, "inbox"), "dry-run")["csrf_token"]
    response = client.post("/purges/run", data={"csrf_token": token, **data})
    assert response.status_code == 400
    assert fragment in response.get_data(as_text=True)
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0


def test_form_without_csrf_token_is_refused(client, conn):
    response = client.post("/purges/run", data={"table": "inbox", "dry_run": "1"})
    assert response.status_code == 400
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0


# -- who may run purges ------------------------------------------------------------------------------------------


def test_read_only_mode_refuses_and_shows_no_buttons(make_app, conn):
    add_inbox(conn)
    add_run(conn, "inbox", dry_run=True, rows=9)
    client = make_app(READ_ONLY=True).test_client()
    soup = soup_of(client.get("/purges"))
    assert soup.select("#purges-panel button") == [] and soup.select("#purges-panel form") == []
    response = run_api(client, {"table": "inbox", "dry_run": True})
    assert response.status_code == 403 and "read-only" in response.get_json()["error"]
    response = client.post("/purges/run", data={"table": "inbox", "dry_run": "1"})
    assert response.status_code in (400, 403)  # refused either way: no token can be had in read-only mode
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 1
    assert count(conn, "processed_message") == 14


def test_viewers_cannot_run_purges_and_see_no_buttons(make_app, conn):
    add_inbox(conn)
    client = make_app(AUTH="proxy").test_client()
    soup = soup_of(client.get("/purges", headers=VIEWER_HEADERS))
    assert soup.select("#purges-panel button") == []
    response = run_api(client, {"table": "inbox", "dry_run": True}, headers=VIEWER_HEADERS)
    assert response.status_code == 403 and "viewer" in response.get_json()["error"]
    # an operator sees the buttons, and a viewer with the operator's token is still refused
    card = table_card(client, "inbox", headers=OPERATOR_HEADERS)
    fields = form_fields(card, "dry-run")
    response = client.post("/purges/run", data=fields, headers=VIEWER_HEADERS)
    assert response.status_code in (400, 403)
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0
    response = run_api(client, {"table": "inbox", "dry_run": True}, headers=OPERATOR_HEADERS)
    assert response.status_code == 202
    run = wait_finished(conn, response.get_json()["run_id"])
    assert run["started_by"] == "alice@example.com"


def test_a_run_that_cannot_start_is_a_503_that_says_why(make_app, conn):
    client = make_app(PURGE_BATCH_SIZE=0).test_client()
    response = run_api(client, {"table": "inbox", "dry_run": True})
    assert response.status_code == 503
    assert "IDEMDASH_PURGE_BATCH_SIZE" in response.get_json()["error"]
    # the database is unreachable: the engine records nothing and says so; the password never shows
    client = make_app(url="postgresql://idem:s3cret-pw@127.0.0.1:1/nothing?connect_timeout=1").test_client()
    response = run_api(client, {"table": "keys", "dry_run": False})
    assert response.status_code == 503
    error = response.get_json()["error"]
    assert "could not start" in error and "s3cret-pw" not in error
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0


def test_purges_started_by_people_are_in_the_audit_log_and_scheduled_ones_are_not(client, conn, make_app):
    from idemdash.jobs.purge_run import run_purge

    add_keys(conn)
    dry = run_api(client, {"table": "keys", "dry_run": True}).get_json()["run_id"]
    wait_finished(conn, dry)
    real = run_api(client, {"table": "keys", "dry_run": False}).get_json()["run_id"]
    wait_finished(conn, real)
    # the scheduler's: not audited
    run_purge(Target.from_settings(app_settings(make_app())), "inbox", dry_run=False, started_by="scheduler")
    with psycopg.connect(conn.info.dsn, autocommit=True) as holder:  # a skipped run a person asked for is audited
        holder.execute("SELECT pg_advisory_lock(hashtextextended('idemdash.purge.' || 'outbox', 0))")
        skipped = run_api(client, {"table": "outbox", "dry_run": True}).get_json()["run_id"]
    rows = conn.execute(
        "SELECT actor, action, detail->>'run_id', detail->>'outcome', key, parent_id "
        "FROM idemdash.audit_log ORDER BY audit_id"
    ).fetchall()
    assert [(r[1], int(r[2]), r[3]) for r in rows] == [
        ("purge-dry-run:keys", dry, "running"),
        ("purge:keys", real, "running"),
        ("purge-dry-run:outbox", skipped, "skipped"),
    ]
    assert all(r[0].startswith("anonymous@") and r[4] is None and r[5] is None for r in rows)
    # and /audit shows them, linked to their run
    page = BeautifulSoup(client.get("/audit").data, "html.parser")
    links = {a.get_text(): a["href"] for a in page.select("#audit-panel td.keycell a")}
    assert links[f"run {real}"] == f"/purges?run_id={real}"


def test_a_purge_from_the_command_line_is_audited_with_the_os_user(conn, database_url):
    from click.testing import CliRunner

    from idemdash.cli import main

    result = CliRunner().invoke(main, ["purge", "--table", "inbox", "--dry-run", "--database-url", database_url])
    assert result.exit_code == 0, result.output
    [(actor, action)] = conn.execute("SELECT actor, action FROM idemdash.audit_log").fetchall()
    assert actor.startswith("cli") and action == "purge-dry-run:inbox"


def test_what_the_pacer_did_is_said_in_plain_words_with_the_numbers_on_hover(client, conn):
    """ "1.0× of 1.5× allowed · 0 backoffs · ended at 1,000 rows, 50 %" was jargon."""
    for p99, backoffs, size, duty in ((1.2, 0, 1000, 50.0), (4.8, 3, 250, 12.5)):
        conn.execute(
            "INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted,"
            " dry_run, outcome, started_by, method, latency_budget, probe_baseline_ms, probe_p99_ms, probes,"
            " backoffs, final_batch_size, final_duty_cycle) VALUES ('keys', now() - interval '1 minute',"
            " now(), 40, 40000, false, 'succeeded', 'scheduler', 'due_index', 1.5, 1.2, %s, 80, %s, %s, %s)",
            (p99, backoffs, size, duty),
        )
    html = BeautifulSoup(client.get("/purges").get_data(as_text=True), "html.parser")
    cells = [" ".join(td.get_text().split()) for td in html.select("table.purge-history td[data-pacing]")]
    calm, slowed = cells[1], cells[0]  # newest first
    assert (
        "Kept the application's commits within 1.5× their usual time; never slowed down; batches of 1,000 rows "
        "at the end, pausing half the time"
    ) in calm, calm
    assert (
        "The application's commits took 4.0× their usual time, more than the 1.5× allowed; slowed down 3 "
        "times; batches of 250 rows at the end, pausing 88 % of the time"
    ) in slowed, slowed
    assert all("backoffs ·" not in cell and "× allowed ·" not in cell for cell in cells)
    hover = html.select("table.purge-history td[data-pacing] .pacing-words")[1]["title"]
    assert hover == (
        "commit p99 1.2 ms idle, 1.2 ms during the run; 1.0× of 1.5× allowed "
        "(IDEMDASH_PURGE_LATENCY_BUDGET); 80 probes, 0 backoffs (batch or duty cycle halved); "
        "final batch size 1,000, duty cycle 50 %"
    )
    # the JSON keeps every number
    item = client.get("/api/v1/purges").get_json()["items"][1]
    assert (
        item["latency_budget"],
        item["probe_p99_ms"],
        item["backoffs"],
        item["final_batch_size"],
        item["final_duty_cycle"],
    ) == (1.5, 1.2, 0, 1000, 50.0)


def test_what_the_governor_saw_of_the_application_is_said_in_words(client, conn):
    """A run records what the application's sessions did (app_backends, their waits between and during batches)."""
    for between, during, seen, backoffs, locks in ((0.9, 1.2, 2, 0, 0), (0.8, 3.1, 3, 5, 2), (None, None, 0, 0, 0)):
        conn.execute(
            "INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, batches, rows_deleted,"
            " dry_run, outcome, started_by, method, latency_budget, probe_baseline_ms, probe_p99_ms, probes,"
            " backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs) VALUES ('keys',"
            " now() - interval '1 minute', now(), 40, 40000, false, 'succeeded', 'scheduler', 'heap', 1.5,"
            " %s, %s, 212, %s, 1000, 50, %s, %s)",
            (between, during, backoffs, seen, locks),
        )
    html = BeautifulSoup(client.get("/purges").get_data(as_text=True), "html.parser")
    idle, slowed, calm = (" ".join(td.get_text().split()) for td in html.select("table.purge-history td[data-pacing]"))
    assert (
        "Nobody else used the database while it ran (212 looks at its sessions), so it never slowed down; "
        "batches of 1,000 rows at the end, pausing half the time"
    ) in idle, idle
    assert (
        "Saw up to 2 application statements running at once; their commits waited 1.2 ms for the WAL or the "
        "purge's locks while batches ran and 0.9 ms between them, within the 1.5× allowed; never slowed down"
    ) in calm, calm
    assert (
        "their commits waited 3.1 ms for the WAL or the purge's locks while batches ran and 0.8 ms between them, "
        "more than the 1.5× allowed; slowed down 5 times (2 times because an application statement waited for a "
        "lock the purge held)"
    ) in slowed, slowed
    item = client.get("/api/v1/purges").get_json()["items"][1]
    assert (item["app_backends"], item["lock_backoffs"], item["backoffs"]) == (3, 2, 5)
