"""The pieces of a response_body to start from (core/fill_in.py, queries/keys.py list_response_fields) and the
ids that contradict result_ref_id; the pages that use them: tests/test_response_fill_in.py."""

from __future__ import annotations

import uuid

import pytest

from idemdash.core.fill_in import contradicting_ids, fill_ins
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key
from idemdash.queries.keys import ResponseField, list_response_fields

T = Tables()
OWN_ORDER = "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55"
OTHER_PAYMENT = "66627de0-1f0a-4b7e-8c55-2d9f3e4a5b61"


@pytest.mark.parametrize(
    "body, ref_type, found",
    [
        ({"id": OTHER_PAYMENT}, None, [("id", OTHER_PAYMENT)]),
        ({"ID": OTHER_PAYMENT}, "order", [("ID", OTHER_PAYMENT)]),
        ({"orderId": OTHER_PAYMENT, "order_id": OWN_ORDER}, "order", [("orderId", OTHER_PAYMENT)]),
        ({"orderId": OTHER_PAYMENT}, None, []),  # without a type, orderId is not known to be the effect's id
        ({"paymentId": OTHER_PAYMENT}, "order", []),  # another entity's id: nothing to tell
        ({"id": "pay_123"}, "order", []),  # not a UUID: may be another system's id
        ({"id": None}, "order", []),  # a blank left by the fill-in
        ([{"id": OTHER_PAYMENT}], "order", []),  # not an object
    ],
)
def test_which_ids_contradict_result_ref_id(body, ref_type, found):
    assert contradicting_ids(body, ref_type, uuid.UUID(OWN_ORDER)) == found
    assert contradicting_ids(body, ref_type, None) == []


def test_fill_ins_without_shape_or_evidence_offer_nothing():
    assert fill_ins([], []) == []
    shaped = fill_ins([ResponseField("status", "string")], [])
    assert [o.body for o in shaped] == [{"status": None}] and shaped[0].blanks == 1


def test_the_shape_is_read_from_the_keys_neighbours_only(conn):
    """Bounded: the primary key beside the key, span entries each way; a response farther off is not looked for."""
    claim_key(conn, T, "create_order", "m", "h", "api-1", lock_seconds=0)
    for i in range(3):  # nearer neighbours without a response
        claim_key(conn, T, "create_order", f"n{i}", "h", "api-1")
    claim_key(conn, T, "create_order", "z", "h", "api-1")
    complete_key(conn, T, "create_order", "z", None, None, {"status": "ok", "total": 3}, attempt=1)
    with conn.transaction():
        assert list_response_fields(conn, T, "create_order", "m", span=3) == []
        assert list_response_fields(conn, T, "create_order", "m", span=4) == [
            ResponseField("total", "number"),
            ResponseField("status", "string"),
        ]
