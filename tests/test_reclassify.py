"""Reclassifying stuck keys: each outcome, what a client's retry then gets, and every refusal."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.dashboard.targets import app_settings
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key
from idemdash.queries.target import Target

T = Tables()
API = "/api/v1/keys/reclassify"


def stuck_key(conn, key: str, scope: str = "create_order", worker: str = "api-1") -> dict:
    """A key whose worker claimed it and died: processing, lease already over."""
    claim_key(conn, T, scope, key, "hash-1", worker, lock_seconds=0)
    return row(conn, key, scope)


def row(conn, key: str, scope: str = "create_order") -> dict:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute(
            "SELECT *, status::text AS status FROM app.idempotency_request "
            "WHERE idempotency_scope = %s AND idempotency_key = %s",
            (scope, key),
        ).fetchone()


def audit(conn) -> list[dict]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM idemdash.audit_log ORDER BY audit_id").fetchall()


def test_safe_to_retry_lets_the_next_retry_run_again(client, conn):
    stuck_key(conn, "k")
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "k",
            "to": "safe_to_retry",
            "reason": "pod died",
            "expected_attempt_count": 1,
        },
    )
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["status"] == "failed_retryable" and body["locked_until"] is None and body["key"] == "k"
    r = row(conn, "k")
    assert (r["status"], r["locked_until"], r["failure_message"]) == ("failed_retryable", None, "pod died")
    claim = claim_key(conn, T, "create_order", "k", "hash-1", "api-2")
    assert (claim.claim_kind, claim.attempt_count) == ("retry_reclaim", 2)
    [entry] = audit(conn)
    assert entry["actor"].startswith("anonymous@") and entry["action"] == "reclassify:safe_to_retry"
    assert (entry["from_status"], entry["to_status"], entry["reason"]) == ("processing", "failed_retryable", "pod died")
    assert entry["evidence"] and "outbox" in entry["evidence"][0]
    assert entry["audit_id"] == body["audit_id"]


def test_abandoned_gives_retries_the_final_failure(client, conn):
    stuck_key(conn, "k")
    response = client.post(
        API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "customer gave up"}
    )
    assert response.status_code == 200
    r = row(conn, "k")
    assert (r["status"], r["failure_code"], r["failure_message"]) == ("failed_final", "abandoned", "customer gave up")
    claim = claim_key(conn, T, "create_order", "k", "hash-1", "api-2")
    assert (claim.claim_kind, claim.failure_code, claim.failure_message) == (
        "final_failure",
        "abandoned",
        "customer gave up",
    )


def test_already_succeeded_replays_the_given_result(client, conn):
    stuck_key(conn, "k")
    ref = "6a1f0d5e-8a4e-4c55-9d55-1b4f3e0b2a10"
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "k",
            "to": "already_succeeded",
            "reason": "order exists",
            "result_ref_type": "order",
            "result_ref_id": ref,
            "response_body": {"orderId": ref, "status": "created"},
        },
    )
    assert response.status_code == 200, response.get_json()
    claim = claim_key(conn, T, "create_order", "k", "hash-1", "api-2")
    assert claim.claim_kind == "replay_success"
    assert claim.response_body == {"orderId": ref, "status": "created"}
    assert (claim.result_ref_type, str(claim.result_ref_id)) == ("order", ref)


def test_needs_review_holds_the_key_and_can_be_decided_later(client, conn):
    stuck_key(conn, "k")
    response = client.post(
        API, json={"scope": "create_order", "key": "k", "to": "needs_review", "reason": "looking", "hold_for": "2h"}
    )
    assert response.status_code == 200
    r = row(conn, "k")
    now = conn.execute("SELECT now()").fetchone()[0]
    assert r["status"] == "processing" and r["claimed_by"] == "idemdash:needs_review"
    assert timedelta(hours=2) - timedelta(seconds=30) < r["locked_until"] - now <= timedelta(hours=2)
    assert claim_key(conn, T, "create_order", "k", "hash-1", "api-2").claim_kind == "in_progress"
    # held by idemdash, so it can still be reclassified although its lease is live
    decided = client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "decided"})
    assert decided.status_code == 200 and row(conn, "k")["status"] == "failed_final"
    assert [a["action"] for a in audit(conn)] == ["reclassify:needs_review", "reclassify:abandoned"]


def test_a_live_key_or_a_finished_key_is_refused_with_the_current_row(client, conn):
    claim_key(conn, T, "create_order", "live", "h", "api-1", lock_seconds=600)
    stuck_key(conn, "done")
    complete_key(conn, T, "create_order", "done", "order", None, {"ok": True}, 1)
    for key, status in (("live", "processing"), ("done", "succeeded")):
        before = row(conn, key)
        response = client.post(API, json={"scope": "create_order", "key": key, "to": "abandoned", "reason": "x"})
        assert response.status_code == 409
        body = response.get_json()
        assert body["key"]["status"] == status and "Nothing was" in body["error"]
        assert row(conn, key) == before
    assert audit(conn) == []


def test_compare_and_set_refuses_a_key_that_changed_since_you_looked(client, conn):
    seen = stuck_key(conn, "k")
    claim_key(conn, T, "create_order", "k", "hash-1", "api-2", lock_seconds=0)  # a retry re-claimed it meanwhile
    before = row(conn, "k")
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "k",
            "to": "safe_to_retry",
            "reason": "x",
            "expected_attempt_count": seen["attempt_count"],
            "expected_locked_until": seen["locked_until"].isoformat(),
        },
    )
    assert response.status_code == 409
    assert "changed since you looked" in response.get_json()["error"]
    assert row(conn, "k") == before
    # the same with only the lease changed (attempt_count equal)
    conn.execute(
        "UPDATE app.idempotency_request SET locked_until = locked_until - interval '1 second' "
        "WHERE idempotency_key = 'k'"
    )
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "k",
            "to": "safe_to_retry",
            "reason": "x",
            "expected_attempt_count": 2,
            "expected_locked_until": before["locked_until"].isoformat(),
        },
    )
    assert response.status_code == 409 and "locked_until" in response.get_json()["error"]


def test_a_key_locked_by_an_application_transaction_answers_409_at_once(client, conn, database_url):
    stuck_key(conn, "k")
    with psycopg.connect(database_url) as app_tx:
        app_tx.execute("SELECT 1 FROM app.idempotency_request WHERE idempotency_key = 'k' FOR UPDATE")
        started = time.monotonic()
        response = client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x"})
        elapsed = time.monotonic() - started
        app_tx.rollback()
    assert response.status_code == 409
    error = response.get_json()["error"]
    assert "application transaction holds this key" in error and "try again" in error and "nothing was changed" in error
    assert elapsed < 2.0  # NOWAIT: not the lock timeout, not the statement timeout
    assert row(conn, "k")["status"] == "processing" and audit(conn) == []


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        ({"scope": "create_order", "key": "k", "to": "abandoned"}, 400, "reason is required"),
        ({"scope": "create_order", "key": "k", "to": "abandoned", "reason": "   "}, 400, "reason is required"),
        ({"scope": "create_order", "key": "k", "to": "delete", "reason": "x"}, 400, "to must be one of"),
        ({"scope": "create_order", "to": "abandoned", "reason": "x"}, 400, "key is required"),
        ({"scope": "create_order", "key": "k", "to": "already_succeeded", "reason": "x"}, 400, "response_body"),
        (
            {
                "scope": "create_order",
                "key": "k",
                "to": "already_succeeded",
                "reason": "x",
                "response_body": {},
                "result_ref_id": "nope",
            },
            400,
            "UUID",
        ),
        (
            {"scope": "create_order", "key": "k", "to": "needs_review", "reason": "x", "hold_for": "forever"},
            400,
            "hold_for",
        ),
        (
            {"scope": "create_order", "key": "k", "to": "needs_review", "reason": "x", "hold_for": 10**9},
            400,
            "hold_for",
        ),
        (
            {"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x", "expected_attempt_count": "two"},
            400,
            "expected_attempt_count",
        ),
        (
            {
                "scope": "create_order",
                "key": "k",
                "to": "abandoned",
                "reason": "x",
                "expected_locked_until": "yesterday",
            },
            400,
            "expected_locked_until",
        ),
        ({"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x" * 2001}, 400, "reason"),
        ({"scope": "create_order", "key": "nope", "to": "abandoned", "reason": "x"}, 404, "no key"),
        (["not", "an", "object"], 400, "JSON object"),
    ],
)
def test_bad_input_is_a_clear_4xx_and_changes_nothing(client, conn, body, status, fragment):
    stuck_key(conn, "k")
    before = row(conn, "k")
    response = client.post(API, json=body)
    assert response.status_code == status
    assert fragment in response.get_json()["error"]
    assert row(conn, "k") == before and audit(conn) == []


def test_the_api_wants_json(client, conn):
    stuck_key(conn, "k")
    response = client.post(API, data={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x"})
    assert response.status_code == 415
    assert row(conn, "k")["status"] == "processing"


def test_read_only_mode_refuses_the_api_and_hides_the_form(make_app, conn):
    stuck_key(conn, "k")
    client = make_app(READ_ONLY=True).test_client()
    response = client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x"})
    assert response.status_code == 403 and "read-only" in response.get_json()["error"]
    page = BeautifulSoup(client.get("/keys/create_order/k").data, "html.parser")
    assert page.select("form.reclassify") == [] and "Read-only mode" in page.get_text()
    stuck_list = BeautifulSoup(client.get("/keys?status=stuck").data, "html.parser")
    assert stuck_list.select("details.bulk") == []
    assert row(conn, "k")["status"] == "processing"


def _form_fields(client, url: str) -> dict:
    form = BeautifulSoup(client.get(url).data, "html.parser").select_one("form.reclassify")
    assert form is not None, "the key page shows the reclassify form for a stuck key"
    return {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}


def test_the_key_page_form_reclassifies_and_shows_history(client, conn):
    stuck_key(conn, "cart/42 x")
    fields = _form_fields(client, "/keys/create_order/cart/42 x")
    assert fields["expected_attempt_count"] == "1" and fields["expected_locked_until"]
    response = client.post("/keys/reclassify", data=fields | {"to": "safe_to_retry", "reason": "worker OOM"})
    assert response.status_code == 303
    page = client.get(response.headers["Location"])
    soup = BeautifulSoup(page.data, "html.parser")
    assert "Reclassified" in soup.select_one(".flash.ok").get_text()
    history = soup.select_one("section.history").get_text()
    assert "worker OOM" in history and "failed_retryable" in history
    assert soup.select("form.reclassify") == []  # no longer stuck: nothing left to reclassify


def test_the_form_refuses_a_stale_view_and_keeps_what_was_typed(client, conn):
    stuck_key(conn, "k")
    fields = _form_fields(client, "/keys/create_order/k")
    claim_key(conn, T, "create_order", "k", "hash-1", "api-2", lock_seconds=0)  # re-claimed meanwhile
    response = client.post("/keys/reclassify", data=fields | {"to": "abandoned", "reason": "typed reason"})
    assert response.status_code == 409
    soup = BeautifulSoup(response.data, "html.parser")
    assert "changed since you looked" in soup.select_one(".flash.error").get_text()
    assert soup.select_one("textarea[name=reason]").get_text() == "typed reason"
    assert row(conn, "k")["status"] == "processing"


def test_form_with_invalid_json_body_is_400(client, conn):
    stuck_key(conn, "k")
    fields = _form_fields(client, "/keys/create_order/k")
    response = client.post(
        "/keys/reclassify", data=fields | {"to": "already_succeeded", "reason": "x", "response_body": "{not json"}
    )
    assert response.status_code == 400
    assert "not valid JSON" in BeautifulSoup(response.data, "html.parser").select_one(".flash.error").get_text()
    assert row(conn, "k")["status"] == "processing"


def test_hostile_key_text_in_the_form_is_inert(client, conn):
    key = "<script>alert(1)</script>\"'><img src=x>"
    stuck_key(conn, key)
    fields = _form_fields(
        client, "/key?scope=create_order&key=" + re.sub("[<>\"'/ ]", lambda m: f"%{ord(m.group()):02X}", key)
    )
    assert fields["key"] == key
    response = client.post("/keys/reclassify", data=fields | {"to": "abandoned", "reason": "<b>why</b>"})
    assert response.status_code == 303
    assert row(conn, key)["failure_message"] == "<b>why</b>"


@pytest.mark.parametrize(
    "to, extra",
    [
        ("already_succeeded", {"response_body": {"order": 1}, "result_ref_type": "order"}),
        ("abandoned", {}),
    ],
)
def test_a_decision_on_a_long_stuck_key_survives_the_next_purge(make_app, conn, to, extra):
    """A key stuck past its own expiry (a 24 h needs_review hold, say) is kept for the replay horizon after the
    decision: the next purge must not delete it, or the client's retry would claim it afresh and run it again."""
    from idemdash.jobs.purge_run import run_purge

    stuck_key(conn, "k")
    conn.execute(
        "UPDATE app.idempotency_request SET created_at = now() - interval '3 days', "
        "claimed_at = now() - interval '2 days', expires_at = now() - interval '1 day' "
        "WHERE idempotency_key = 'k'"
    )
    app = make_app(REPLAY_HORIZON=8 * 3600)
    response = app.test_client().post(API, json={"scope": "create_order", "key": "k", "to": to, "reason": "x", **extra})
    assert response.status_code == 200, response.get_json()
    left = row(conn, "k")["expires_at"] - conn.execute("SELECT now()").fetchone()[0]
    assert timedelta(hours=7, minutes=59) < left <= timedelta(hours=8)

    result = run_purge(Target.from_settings(app_settings(app)), "keys", dry_run=False, started_by="test")
    assert (result.outcome, result.rows) == ("succeeded", 0)
    claim = claim_key(conn, T, "create_order", "k", "hash-1", "api-2")
    assert claim.claim_kind == ("replay_success" if to == "already_succeeded" else "final_failure")


def test_a_later_expiry_is_never_shortened_by_a_decision(client, conn):
    stuck_key(conn, "k")
    conn.execute(
        "UPDATE app.idempotency_request SET expires_at = now() + interval '30 days' WHERE idempotency_key = 'k'"
    )
    before = row(conn, "k")["expires_at"]
    assert (
        client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x"}).status_code
        == 200
    )
    assert row(conn, "k")["expires_at"] == before


@pytest.mark.system  # over a second: a purge run after the decision
def test_the_purge_keeps_a_key_decided_within_the_horizon_even_if_its_expiry_passed(make_app, conn):
    """Belt and braces: the application may set expires_at itself afterwards; the decision still holds the key."""
    from idemdash.jobs.purge_run import run_purge

    stuck_key(conn, "decided")
    stuck_key(conn, "other")
    app = make_app(REPLAY_HORIZON=3600)
    assert (
        app.test_client()
        .post(API, json={"scope": "create_order", "key": "decided", "to": "abandoned", "reason": "x"})
        .status_code
        == 200
    )
    complete_key(conn, T, "create_order", "other", None, None, {}, 1)
    conn.execute(
        "UPDATE app.idempotency_request SET created_at = now() - interval '2 days', "
        "expires_at = now() - interval '1 day'"
    )
    assert run_purge(Target.from_settings(app_settings(app)), "keys", dry_run=True, started_by="test").rows == 1
    assert run_purge(Target.from_settings(app_settings(app)), "keys", dry_run=False, started_by="test").rows == 1
    assert [r[0] for r in conn.execute("SELECT idempotency_key FROM app.idempotency_request")] == ["decided"]
    # once the decision is older than the horizon, the key goes like any other
    time.sleep(1.1)
    result = run_purge(
        Target.from_settings(replace(app_settings(app), replay_horizon=1)), "keys", dry_run=False, started_by="test"
    )
    assert result.rows == 1
    assert conn.execute("SELECT count(*) FROM app.idempotency_request").fetchone()[0] == 0
