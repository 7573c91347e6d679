"""No decision that contradicts the evidence, and a refusal that names who got there first.

An outbox row for a key means its business effect committed: `abandoned` would tell the client the request
failed while the order exists, so it is refused like `safe_to_retry` (single and bulk) unless the operator
overrides the evidence explicitly, which the audit records.
"""

from __future__ import annotations

import psycopg
from bs4 import BeautifulSoup

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key

T = Tables()
API = "/api/v1/keys/reclassify"
BULK = "/api/v1/keys/reclassify-bulk"


def stuck(conn, key: str, scope: str = "create_order", worker: str = "api-1") -> None:
    claim_key(conn, T, scope, key, "hash-1", worker, lock_seconds=0)


def with_outbox_row(conn, key: str, scope: str = "create_order") -> str:
    row = conn.execute(
        """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                              idempotency_key, payload)
                          VALUES ('order.created', 'order', '0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55', %s, %s, '{}')
                          RETURNING outbox_id::text""",
        (scope, key),
    ).fetchone()
    return row[0]


def status(conn, key: str, scope: str = "create_order") -> str:
    return conn.execute(
        "SELECT status::text FROM app.idempotency_request WHERE idempotency_scope = %s AND idempotency_key = %s",
        (scope, key),
    ).fetchone()[0]


def audit(conn) -> list[dict]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM idemdash.audit_log ORDER BY audit_id").fetchall()


def test_abandoned_is_refused_when_an_outbox_row_shows_the_effect_committed(client, conn):
    stuck(conn, "k")
    outbox_id = with_outbox_row(conn, "k")
    response = client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "gave up"})
    assert response.status_code == 409
    error = response.get_json()["error"]
    assert outbox_id in error and "order.created" in error and "already_succeeded" in error
    assert "override_evidence" in error
    assert status(conn, "k") == "processing" and audit(conn) == []


def test_an_explicit_override_abandons_it_and_the_audit_says_so(client, conn):
    stuck(conn, "k")
    with_outbox_row(conn, "k")
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "k",
            "to": "abandoned",
            "reason": "INC-7: the outbox row is a test event",
            "override_evidence": True,
        },
    )
    assert response.status_code == 200, response.get_json()
    assert status(conn, "k") == "failed_final"
    [entry] = audit(conn)
    assert entry["detail"]["override_evidence"] is True and entry["action"] == "reclassify:abandoned"


def test_override_is_refused_for_anything_but_abandoned_and_must_be_a_boolean(client, conn):
    stuck(conn, "k")
    with_outbox_row(conn, "k")
    retry = client.post(
        API, json={"scope": "create_order", "key": "k", "to": "safe_to_retry", "reason": "x", "override_evidence": True}
    )
    assert retry.status_code == 400 and "abandoned only" in retry.get_json()["error"]
    odd = client.post(
        API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x", "override_evidence": "maybe"}
    )
    assert odd.status_code == 400 and "override_evidence" in odd.get_json()["error"]
    assert status(conn, "k") == "processing" and audit(conn) == []


def test_bulk_abandoned_leaves_out_keys_with_an_outbox_row_and_says_how_many(client, conn):
    for key in ("a", "b", "c"):
        stuck(conn, key)
    with_outbox_row(conn, "b")
    preview = client.post(BULK, json={"filter": {"scope": "create_order"}, "to": "abandoned", "preview": True})
    body = preview.get_json()
    assert (body["count"], body["left_out_committed"]) == (2, 1)
    assert {s["key"] for s in body["sample"]} == {"a", "c"}
    done = client.post(
        BULK,
        json={"filter": {"scope": "create_order"}, "to": "abandoned", "reason": "batch died", "as_of": body["as_of"]},
    )
    assert done.status_code == 200 and done.get_json()["changed"] == 2
    assert [status(conn, k) for k in ("a", "b", "c")] == ["failed_final", "processing", "failed_final"]


def test_the_bulk_preview_page_says_why_abandoned_leaves_them_out(client, conn):
    for key in ("a", "b"):
        stuck(conn, key)
    with_outbox_row(conn, "b")
    form = BeautifulSoup(client.get("/keys?status=stuck&scope=create_order").data, "html.parser").select_one(
        "details.bulk form"
    )
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    html = client.post("/keys/reclassify-bulk", data=fields | {"to": "abandoned", "reason": "x"})
    assert html.status_code == 200
    page = BeautifulSoup(html.data, "html.parser")
    assert page.select_one("[data-bulk-committed]").get_text() == "1"
    assert "tell their clients the request failed" in page.get_text()


def test_a_refusal_names_the_operator_who_decided_first(client, conn):
    stuck(conn, "k")
    seen = client.get("/api/v1/keys/create_order/k").get_json()["key"]
    first = client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "mine"})
    assert first.status_code == 200
    late = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "k",
            "to": "safe_to_retry",
            "reason": "theirs",
            "expected_attempt_count": seen["attempt_count"],
        },
    )
    assert late.status_code == 409
    error = late.get_json()["error"]
    actor = audit(conn)[0]["actor"]
    assert f"{actor} abandoned it" in error and " s ago" in error
    assert "worker" not in error


def test_a_refusal_names_the_worker_that_finished_it(client, conn):
    stuck(conn, "k", worker="api-7")
    complete_key(conn, T, "create_order", "k", "order", None, {"ok": True}, attempt=1)
    late = client.post(API, json={"scope": "create_order", "key": "k", "to": "abandoned", "reason": "x"})
    assert late.status_code == 409
    error = late.get_json()["error"]
    assert "succeeded now" in error and "api-7" in error and "Nothing was overwritten" in error


def test_the_key_page_fills_already_succeeded_from_the_outbox_row_and_offers_the_override(client, conn):
    stuck(conn, "k")
    with_outbox_row(conn, "k")
    page = BeautifulSoup(client.get("/keys/create_order/k").data, "html.parser")
    assert page.select_one("input[name=result_ref_type]")["value"] == "order"
    assert page.select_one("input[name=result_ref_id]")["value"] == "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55"
    assert page.select_one("input[name=override_evidence]") is not None


def test_without_an_outbox_row_nothing_is_prefilled_and_no_override_is_offered(client, conn):
    stuck(conn, "k")
    page = BeautifulSoup(client.get("/keys/create_order/k").data, "html.parser")
    assert page.select_one("input[name=result_ref_type]")["value"] == ""
    assert page.select_one("input[name=override_evidence]") is None


def test_the_form_offers_the_scopes_response_fields_blank_and_says_what_a_retry_will_receive(client, conn):
    stuck(conn, "k")
    claim_key(conn, T, "create_order", "done", "hash-1", "api-1")
    complete_key(conn, T, "create_order", "done", "order", None, {"orderId": "o-1", "status": "created"}, attempt=1)
    page = BeautifulSoup(client.get("/keys/create_order/k").data, "html.parser")
    example = page.select_one("[data-fill-ins] [data-fill]")
    assert example["data-fill"] == "response-body-input"
    assert example["data-value"] == '{"orderId": null, "status": null}'
    assert page.select_one("#response-body-input") is not None
    assert "replayed for at least 1 d" in page.select_one("[data-retry-gets]").get_text()
