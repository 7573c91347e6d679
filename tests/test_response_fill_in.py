"""already_succeeded's response_body is this key's own: never another key's response offered, never one saved.

A stored response is replayed to every retry of one client. The key page once offered "what succeeded keys of the
scope stored lately" with a Use this button: one click filled another customer's payment into a stuck key, and
the form saved it. The page now offers this key's own evidence on the shape of its scope's responses (values
blank), and a body whose id contradicts result_ref_id is refused, by the form and by the API alike.
"""

from __future__ import annotations

import json
import uuid

from bs4 import BeautifulSoup
from psycopg.types.json import Jsonb

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key

T = Tables()
API = "/api/v1/keys/reclassify"
OWN_ORDER = "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55"
OTHER_PAYMENT = "66627de0-1f0a-4b7e-8c55-2d9f3e4a5b61"
OTHER_KEY = "customer-4711-checkout"


def stuck_with_evidence(conn, key: str = "cart/9", *, amount: float = 12.5) -> None:
    claim_key(conn, T, "create_order", key, "hash-9", "api-1", lock_seconds=0)
    conn.execute(
        """INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload)
                    VALUES ('order.created', 'order', %s, 'create_order', %s, %s)""",
        (OWN_ORDER, key, Jsonb({"amount": amount, "key": key})),
    )


def another_customers_response(conn) -> None:
    claim_key(conn, T, "create_order", OTHER_KEY, "hash-o", "api-2")
    complete_key(
        conn,
        T,
        "create_order",
        OTHER_KEY,
        "order",
        uuid.UUID(OTHER_PAYMENT),
        {"id": OTHER_PAYMENT, "amount": 375.98, "status": "ok"},
        attempt=1,
    )


def state(conn, key: str = "cart/9") -> tuple:
    return conn.execute(
        "SELECT status::text, response_body, result_ref_id::text FROM app.idempotency_request "
        "WHERE idempotency_scope = 'create_order' AND idempotency_key = %s",
        (key,),
    ).fetchone()


def audit_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM idemdash.audit_log").fetchone()[0]


def offered(page: BeautifulSoup) -> list:
    return [json.loads(button["data-value"]) for button in page.select("form.reclassify [data-fill]")]


def test_the_key_page_never_shows_another_keys_stored_response(client, conn):
    stuck_with_evidence(conn)
    another_customers_response(conn)
    html = client.get("/keys/create_order/cart/9").get_data(as_text=True)
    assert "already_succeeded" in html and "Use this" in html  # the form and its fill-ins are there
    for value in (OTHER_PAYMENT, "375.98", OTHER_KEY):
        assert value not in html, f"the page shows {value!r}, another key's stored response"


def test_the_fill_in_is_this_keys_evidence_on_the_scopes_shape(client, conn):
    stuck_with_evidence(conn, amount=12.5)
    another_customers_response(conn)
    page = BeautifulSoup(client.get("/keys/create_order/cart/9").data, "html.parser")
    shaped, payload = offered(page)
    # the sibling's fields, with this key's own values where its outbox row tells, the rest blank
    assert shaped == {"id": OWN_ORDER, "amount": 12.5, "status": None}
    assert payload == {"amount": 12.5, "key": "cart/9"}
    sources = page.select_one("[data-fill-in] [data-sources]").get_text()
    assert "aggregate id of this key's outbox row order.created" in sources and "blank: fill in" in sources


def test_without_evidence_the_shape_is_offered_with_every_value_blank(client, conn):
    claim_key(conn, T, "create_order", "cart/10", "hash-10", "api-1", lock_seconds=0)
    another_customers_response(conn)
    page = BeautifulSoup(client.get("/keys/create_order/cart/10").data, "html.parser")
    assert offered(page) == [{"id": None, "amount": None, "status": None}]
    assert "3 blank" in page.select_one("[data-fill-in]").get_text()


def test_a_body_naming_another_effect_is_refused_by_the_api_and_changes_nothing(client, conn):
    stuck_with_evidence(conn)
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "cart/9",
            "to": "already_succeeded",
            "reason": "INC-1: order exists",
            "result_ref_type": "order",
            "result_ref_id": OWN_ORDER,
            "response_body": {"id": OTHER_PAYMENT, "amount": 375.98},
        },
    )
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert error.startswith("response_body names another effect than result_ref_id")
    assert OTHER_PAYMENT in error and OWN_ORDER in error and "nothing was changed" in error
    assert state(conn) == ("processing", None, None) and audit_rows(conn) == 0
    # this key's own id (in any case), under either name, is what the check wants; another entity's id is no
    # contradiction
    response = client.post(
        API,
        json={
            "scope": "create_order",
            "key": "cart/9",
            "to": "already_succeeded",
            "reason": "INC-1: order exists",
            "result_ref_type": "order",
            "result_ref_id": OWN_ORDER,
            "response_body": {
                "id": OWN_ORDER.upper(),
                "order_id": OWN_ORDER,
                "paymentId": OTHER_PAYMENT,
                "amount": 12.5,
            },
        },
    )
    assert response.status_code == 200, response.get_json()
    assert state(conn)[0] == "succeeded" and state(conn)[2] == OWN_ORDER and audit_rows(conn) == 1


def test_a_body_naming_another_effect_is_refused_by_the_form_and_keeps_what_was_typed(client, conn):
    stuck_with_evidence(conn)
    form = BeautifulSoup(client.get("/keys/create_order/cart/9").data, "html.parser").select_one("form.reclassify")
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    typed = json.dumps({"orderId": OTHER_PAYMENT.upper(), "amount": 375.98})
    response = client.post(
        "/keys/reclassify",
        data=fields
        | {
            "to": "already_succeeded",
            "reason": "INC-2",
            "result_ref_type": "order",
            "result_ref_id": OWN_ORDER,
            "response_body": typed,
        },
    )
    assert response.status_code == 400
    page = BeautifulSoup(response.data, "html.parser")
    assert "names another effect than result_ref_id" in page.select_one(".flash.error").get_text()
    assert page.select_one("#response-body-input").get_text() == typed
    assert state(conn) == ("processing", None, None) and audit_rows(conn) == 0
