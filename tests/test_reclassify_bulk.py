"""Bulk reclassification: preview, then confirm; only keys stuck at the preview and still stuck change."""

from __future__ import annotations

from datetime import datetime, timedelta

import psycopg
from bs4 import BeautifulSoup

from idemdash.dashboard.targets import app_settings
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key
from idemdash.queries.target import Target
from tests.test_keys import insert_key

T = Tables()
API = "/api/v1/keys/reclassify-bulk"


def stuck(conn, key, scope="create_order", worker="api-1"):
    claim_key(conn, T, scope, key, "h", worker, lock_seconds=0)


def status(conn, key, scope="create_order"):
    return conn.execute(
        "SELECT status::text FROM app.idempotency_request WHERE idempotency_scope = %s AND idempotency_key = %s",
        (scope, key),
    ).fetchone()[0]


def test_preview_then_confirm_changes_only_matching_stuck_keys(client, conn):
    for i in range(6):
        stuck(conn, f"a{i}", worker="api-1")
    for i in range(3):
        stuck(conn, f"b{i}", worker="api-2")
    claim_key(conn, T, "create_order", "live", "h", "api-1", lock_seconds=600)
    preview = client.post(API, json={"filter": {"claimed_by": "api-1"}, "to": "safe_to_retry", "preview": True})
    assert preview.status_code == 200
    body = preview.get_json()
    assert body["count"] == 6 and len(body["sample"]) == 6
    assert {s["key"] for s in body["sample"]} == {f"a{i}" for i in range(6)}
    assert all(status(conn, f"a{i}") == "processing" for i in range(6))  # a preview changes nothing

    assert body["by_scope"] == [{"scope": "create_order", "keys": 6}]
    assert body["filter_text"] == "stuck keys in every scope, claimed by 'api-1' (exact matches)"
    done = client.post(
        API,
        json={
            "filter": {"claimed_by": "api-1"},
            "to": "safe_to_retry",
            "reason": "api-1 died",
            "as_of": body["as_of"],
            "all_scopes": True,
        },
    )
    assert done.status_code == 200, done.get_json()
    result = done.get_json()
    assert (result["changed"], result["skipped"], result["capped"]) == (6, 0, False)
    assert all(status(conn, f"a{i}") == "failed_retryable" for i in range(6))
    assert all(status(conn, f"b{i}") == "processing" for i in range(3))
    assert status(conn, "live") == "processing"
    # one audit entry for the action, which the six per-key rows point to
    parent = conn.execute(
        "SELECT audit_id, action, reason, key, detail FROM idemdash.audit_log WHERE parent_id IS NULL"
    ).fetchall()
    assert len(parent) == 1
    audit_id, action, reason, key, detail = parent[0]
    assert (audit_id, action, reason, key) == (result["audit_id"], "reclassify-bulk:safe_to_retry", "api-1 died", None)
    assert detail["bulk_id"] == result["bulk_id"] and detail["previewed"] == 6
    assert detail["filter"] == {"scope": None, "claimed_by": "api-1", "min_attempts": None, "overdue_seconds": None}
    children = conn.execute(
        "SELECT key, action, reason, detail->>'claimed_by' FROM idemdash.audit_log WHERE parent_id = %s ORDER BY key",
        (audit_id,),
    ).fetchall()
    assert children == [(f"a{i}", "reclassify-bulk:safe_to_retry", "api-1 died", "api-1") for i in range(6)]


def test_a_key_that_became_stuck_after_the_preview_is_untouched(client, conn):
    stuck(conn, "old")
    claim_key(conn, T, "create_order", "new", "h", "api-1", lock_seconds=600)
    preview = client.post(API, json={"filter": {}, "to": "abandoned", "preview": True}).get_json()
    assert preview["count"] == 1
    # 'new' loses its lease just after the preview was taken: stuck now, but not when the operator looked
    conn.execute(
        "UPDATE app.idempotency_request SET locked_until = %s::timestamptz + interval '1 millisecond' "
        "WHERE idempotency_key = 'new'",
        (preview["as_of"],),
    )
    assert client.get("/api/v1/keys?status=stuck").get_json()["items"][0]["key"] in ("old", "new")
    result = client.post(
        API, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": True}
    ).get_json()
    assert result["changed"] == 1
    assert status(conn, "old") == "failed_final" and status(conn, "new") == "processing"


def test_a_key_a_retry_took_back_after_the_preview_is_untouched(client, conn):
    stuck(conn, "k")
    preview = client.post(API, json={"filter": {}, "to": "abandoned", "preview": True}).get_json()
    claim_key(conn, T, "create_order", "k", "h", "api-9", lock_seconds=600)
    result = client.post(
        API, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": True}
    ).get_json()
    assert (result["changed"], result["skipped"]) == (0, 0)
    assert status(conn, "k") == "processing"


def test_the_cap_limits_one_call_and_says_how_many_remain(make_app, conn):
    for i in range(12):
        stuck(conn, f"k{i:02d}")
    client = make_app(BULK_MAX_KEYS=5).test_client()
    preview = client.post(API, json={"filter": {}, "to": "abandoned", "preview": True}).get_json()
    assert (preview["count"], preview["cap"]) == (12, 5)
    result = client.post(
        API, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": True}
    ).get_json()
    assert (result["changed"], result["still_eligible"], result["capped"]) == (5, 7, True)
    changed = conn.execute("SELECT count(*) FROM app.idempotency_request WHERE status = 'failed_final'").fetchone()[0]
    assert changed == 5


def test_locked_keys_are_skipped_not_waited_for(client, conn, database_url):
    for i in range(4):
        stuck(conn, f"k{i}")
    preview = client.post(API, json={"filter": {}, "to": "abandoned", "preview": True}).get_json()
    with psycopg.connect(database_url) as app_tx:
        app_tx.execute("SELECT 1 FROM app.idempotency_request WHERE idempotency_key = 'k2' FOR UPDATE")
        result = client.post(
            API, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": True}
        ).get_json()
        app_tx.rollback()
    assert (result["changed"], result["skipped"]) == (3, 1)
    assert status(conn, "k2") == "processing"


def test_bulk_refuses_what_it_must(client, conn):
    stuck(conn, "k")
    cases = [
        ({"filter": {}, "to": "needs_review", "preview": True, "hold_for": "forever"}, 400, "hold_for"),
        ({"filter": {"suggested": "maybe"}, "to": "abandoned", "preview": True}, 400, "filter.suggested"),
        (
            {"filter": {}, "to": "already_succeeded", "reason": "x", "as_of": datetime.now().astimezone().isoformat()},
            400,
            "bulk to must be",
        ),
        ({"filter": {}, "to": "abandoned", "reason": "x"}, 400, "as_of is required"),
        (
            {"filter": {}, "to": "abandoned", "as_of": datetime.now().astimezone().isoformat(), "all_scopes": True},
            400,
            "reason",
        ),
        ({"filter": {"bogus": 1}, "to": "abandoned", "preview": True}, 400, "filter.bogus is not a field"),
        ({"filter": {"overdue": "soon"}, "to": "abandoned", "preview": True}, 400, "overdue"),
        (
            {
                "filter": {},
                "to": "abandoned",
                "reason": "x",
                "all_scopes": True,
                "as_of": (datetime.now().astimezone() - timedelta(hours=1)).isoformat(),
            },
            409,
            "preview again",
        ),
        (
            {
                "filter": {},
                "to": "abandoned",
                "reason": "x",
                "all_scopes": True,
                "as_of": (datetime.now().astimezone() + timedelta(hours=1)).isoformat(),
            },
            409,
            "no preview was taken",
        ),
        # no preview was taken at this time
        (
            {
                "filter": {"scope": "create_order"},
                "to": "abandoned",
                "reason": "x",
                "as_of": datetime.now().astimezone().isoformat(),
            },
            409,
            "no preview was taken",
        ),
    ]
    for body, code, fragment in cases:
        response = client.post(API, json=body)
        assert response.status_code == code, (body, response.get_json())
        assert fragment in response.get_json()["error"]
    assert status(conn, "k") == "processing"
    assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 0


def test_bulk_from_the_stuck_list_form(client, conn):
    for i in range(3):
        stuck(conn, f"k{i}", scope="refund")
    stuck(conn, "other", scope="create_order")
    page = BeautifulSoup(client.get("/keys?status=stuck&scope=refund").data, "html.parser")
    form = page.select_one("details.bulk form")
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    assert fields["default_scope"] == "refund"
    preview = client.post("/keys/reclassify-bulk", data=fields | {"to": "abandoned", "reason": "refunds broken"})
    assert preview.status_code == 200
    soup = BeautifulSoup(preview.data, "html.parser")
    assert soup.select_one("[data-bulk-count]").get_text() == "3"
    confirm = soup.select_one("form.confirm")
    data = {i["name"]: i.get("value", "") for i in confirm.select("input[type=hidden]")}
    data["reason"] = confirm.select_one("textarea[name=reason]").get_text()
    done = BeautifulSoup(client.post("/keys/reclassify-bulk", data=data).data, "html.parser")
    assert done.select_one("[data-bulk-changed]").get_text() == "3"
    assert [status(conn, f"k{i}", "refund") for i in range(3)] == ["failed_final"] * 3
    assert status(conn, "other") == "processing"


def test_a_confirmation_with_another_filter_than_its_preview_is_refused(client, conn):
    for scope in ("create_order", "refund"):
        for i in range(3):
            stuck(conn, f"{scope}-{i}", scope=scope)
    preview = client.post(API, json={"filter": {"scope": "refund"}, "to": "abandoned", "preview": True}).get_json()
    assert preview["count"] == 3 and preview["filter_text"] == "stuck keys in scope 'refund' (exact matches)"
    refused = [
        ({"filter": {}, "all_scopes": True, "to": "abandoned"}, "every scope"),  # filter dropped
        ({"filter": {"scope": "create_order"}, "to": "abandoned"}, "'create_order'"),  # another scope
        ({"filter": {"scope": "refund", "min_attempts": 1}, "to": "abandoned"}, "at least 1 attempts"),
        ({"filter": {"scope": "refund"}, "to": "safe_to_retry"}, "→ safe_to_retry"),  # another outcome
    ]
    for body, fragment in refused:
        response = client.post(API, json=body | {"reason": "x", "as_of": preview["as_of"]})
        assert response.status_code == 409, (body, response.get_json())
        error = response.get_json()["error"]
        assert fragment in error and "the preview at" in error and "scope 'refund'" in error, error
    assert conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM app.idempotency_request WHERE status <> 'processing'").fetchone()[0] == 0

    done = client.post(
        API, json={"filter": {"scope": "refund"}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"]}
    ).get_json()
    assert done["changed"] == 3
    assert {status(conn, f"refund-{i}", "refund") for i in range(3)} == {"failed_final"}
    assert {status(conn, f"create_order-{i}") for i in range(3)} == {"processing"}


def test_a_bulk_decision_outlives_the_next_purge(make_app, conn):
    """abandoned keys whose expires_at had long passed are kept for the replay horizon, not purged at once."""
    from idemdash.jobs.purge_run import run_purge

    for i in range(3):
        stuck(conn, f"k{i}")
    conn.execute(
        "UPDATE app.idempotency_request SET created_at = now() - interval '3 days', "
        "expires_at = now() - interval '2 days'"
    )
    app = make_app(REPLAY_HORIZON=6 * 3600)
    client = app.test_client()
    preview = client.post(
        API, json={"filter": {"scope": "create_order"}, "to": "abandoned", "preview": True}
    ).get_json()
    done = client.post(
        API, json={"filter": {"scope": "create_order"}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"]}
    ).get_json()
    assert done["changed"] == 3
    expires = conn.execute("SELECT min(expires_at - now()) FROM app.idempotency_request").fetchone()[0]
    assert timedelta(hours=5, minutes=59) < expires <= timedelta(hours=6)
    result = run_purge(Target.from_settings(app_settings(app)), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 0)
    assert conn.execute("SELECT count(*) FROM app.idempotency_request").fetchone()[0] == 3


def test_every_scope_needs_an_explicit_all_scopes(client, conn):
    stuck(conn, "a", scope="create_order")
    stuck(conn, "b", scope="refund")
    preview = client.post(API, json={"filter": {}, "to": "abandoned", "preview": True}).get_json()
    assert preview["all_scopes"] is True and preview["filter_text"] == "stuck keys in every scope (exact matches)"
    assert sorted(s["scope"] for s in preview["by_scope"]) == ["create_order", "refund"]
    for extra in ({}, {"all_scopes": False}):
        response = client.post(
            API, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"]} | extra
        )
        assert response.status_code == 400 and "every scope" in response.get_json()["error"], extra
    # anything but the JSON true is not a yes: refused as it is, before any count
    response = client.post(
        API,
        json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": "yes please"},
    )
    assert response.status_code == 400
    assert response.get_json()["fields"] == [
        {"field": "all_scopes", "message": 'must be true or false (got "yes please")'}
    ]
    assert status(conn, "a") == "processing" and status(conn, "b", "refund") == "processing"
    done = client.post(
        API, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": True}
    ).get_json()
    assert done["changed"] == 2


def _preview(client, flt: dict, to: str) -> dict:
    answer = client.post(API, json={"filter": flt, "to": to, "preview": True})
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def _confirm(client, flt: dict, to: str, preview: dict, **extra):
    return client.post(API, json={"filter": flt, "to": to, "reason": "INC-5", "as_of": preview["as_of"], **extra})


def test_a_key_whose_replay_window_ends_between_preview_and_confirm_keeps_the_outcome_the_preview_said(client, conn):
    insert_key(conn, "refund", "window-open", expires_in=timedelta(hours=1))  # suggested: safe_to_retry
    insert_key(conn, "refund", "window-ended", expires_in=timedelta(minutes=-1))  # suggested: abandoned
    by_abandoned, by_retry = (
        {"scope": "refund", "suggested": "abandoned"},
        {"scope": "refund", "suggested": "safe_to_retry"},
    )
    abandon = _preview(client, by_abandoned, "abandoned")
    retry = _preview(client, by_retry, "safe_to_retry")
    assert (abandon["count"], [s["key"] for s in abandon["sample"]]) == (1, ["window-ended"])
    assert (retry["count"], [s["key"] for s in retry["sample"]]) == (1, ["window-open"])
    # window-open's replay window ends after both previews and before the confirmations: abandoned if judged now
    conn.execute(
        "UPDATE app.idempotency_request SET expires_at = %s::timestamptz + interval '1 millisecond' "
        "WHERE idempotency_key = 'window-open'",
        (max(abandon["as_of"], retry["as_of"]),),
    )
    assert conn.execute(
        "SELECT expires_at < now() FROM app.idempotency_request WHERE idempotency_key = 'window-open'"
    ).fetchone()[0]
    done = _confirm(client, by_abandoned, "abandoned", abandon, previewed=1)
    assert done.status_code == 200 and done.get_json()["changed"] == 1, done.get_json()
    assert (status(conn, "window-ended", "refund"), status(conn, "window-open", "refund")) == (
        "failed_final",
        "processing",
    )
    done = _confirm(client, by_retry, "safe_to_retry", retry, previewed=1)
    assert done.status_code == 200 and done.get_json()["changed"] == 1, done.get_json()
    assert status(conn, "window-open", "refund") == "failed_retryable"  # what its preview said


def test_a_confirmation_never_changes_more_keys_than_its_preview_counted(client, conn):
    for i in range(3):
        insert_key(conn, "refund", f"k{i}", locked_until=timedelta(minutes=-30 + i))
    # stuck too, but its effect committed (an outbox row): left out of the preview
    insert_key(conn, "refund", "k-late", locked_until=timedelta(minutes=-1))
    conn.execute(
        "INSERT INTO app.outbox_event (outbox_id, event_type, aggregate_type, aggregate_id, idempotency_scope,"
        " idempotency_key, payload, status) VALUES (gen_random_uuid(), 'refund.made', 'refund', "
        "gen_random_uuid(), 'refund', 'k-late', '{}', 'published')"
    )
    flt = {"scope": "refund"}
    preview = _preview(client, flt, "abandoned")
    assert (preview["count"], preview["left_out_committed"]) == (3, 1)
    # the outbox purge takes the row meanwhile: four keys match now
    conn.execute("DELETE FROM app.outbox_event WHERE idempotency_key = 'k-late'")
    wrong = _confirm(client, flt, "abandoned", preview, previewed=4)
    assert wrong.status_code == 409 and "counted 3" in wrong.get_json()["error"]
    assert conn.execute("SELECT count(*) FROM app.idempotency_request WHERE status = 'failed_final'").fetchone()[0] == 0
    done = _confirm(client, flt, "abandoned", preview, previewed=3.0)  # JSON Schema's integer: 3.0 is one too
    assert done.status_code == 200, done.get_json()
    assert (done.get_json()["previewed"], done.get_json()["changed"]) == (3, 3)
    assert [status(conn, k, "refund") for k in ("k0", "k1", "k2", "k-late")] == ["failed_final"] * 3 + ["processing"]
    # without the count (an older script) the recorded preview's count caps it just the same
    again = _preview(client, {"scope": "refund"}, "safe_to_retry")
    insert_key(conn, "refund", "k-after", locked_until=timedelta(minutes=-40), claimed_ago=timedelta(hours=2))
    done = _confirm(client, flt, "safe_to_retry", again)
    assert done.status_code == 200 and done.get_json()["changed"] == again["count"] == 1, done.get_json()


def test_the_confirm_form_carries_the_previewed_count(client, conn):
    for i in range(2):
        insert_key(conn, "refund", f"f{i}")
    page = BeautifulSoup(client.get("/keys?status=stuck&scope=refund").data, "html.parser")
    box = {i["name"]: i.get("value", "") for i in page.select_one("details.bulk form").select("input[type=hidden]")}
    preview = client.post("/keys/reclassify-bulk", data=box | {"to": "abandoned", "reason": "x"})
    confirm = BeautifulSoup(preview.data, "html.parser").select_one("form.confirm")
    assert confirm is not None, preview.get_data(as_text=True)[-3000:]
    fields = {i["name"]: i.get("value", "") for i in confirm.select("input[type=hidden]")}
    assert fields["previewed"] == "2"
    done = client.post("/keys/reclassify-bulk", data=fields | {"reason": "INC-6"})
    assert BeautifulSoup(done.data, "html.parser").select_one("[data-bulk-changed]").get_text() == "2"
