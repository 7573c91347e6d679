"""The cache rule: every answer but a static file carries ``Cache-Control: no-store``, so that no browser, proxy or
shared cache keeps a key, a response body, a payload or an error page (docs/security.md, The cache rule)."""

from __future__ import annotations

from tests.test_auth import page_token
from tests.test_keys import insert_key


def test_every_answer_but_static_files_is_no_store(make_app, conn):
    insert_key(conn, "refund", "order-7", response_body={"card": "4111-secret"})
    client = make_app().test_client()
    token = page_token(client)
    answers = {
        "key page": client.get("/keys/refund/order-7"),
        "key JSON": client.get("/api/v1/keys/refund/order-7"),
        "list fragment": client.get("/keys?status=stuck", headers={"HX-Request": "true"}),
        "overview": client.get("/api/v1/overview"),
        "note (form post)": client.post(
            "/keys/notes", data={"scope": "refund", "key": "order-7", "text": "looked", "csrf_token": token}
        ),
        "refusal": client.post("/api/v1/keys/reclassify", json={"scope": "refund"}),
        "404": client.get("/keys/refund/no-such-key"),
        "probe": client.get("/readyz"),
        "metrics": client.get("/metrics"),
    }
    assert "4111-secret" in answers["key JSON"].get_data(as_text=True)
    assert {what: answer.status_code for what, answer in answers.items()} == {
        "key page": 200,
        "key JSON": 200,
        "list fragment": 200,
        "overview": 200,
        "note (form post)": 303,
        "refusal": 400,
        "404": 404,
        "probe": 200,
        "metrics": 200,
    }
    for what, answer in answers.items():
        assert answer.headers.get("Cache-Control") == "no-store", (what, answer.status_code, answer.headers)
    static = client.get("/static/css/idemdash.css")
    assert static.status_code == 200 and "no-store" not in static.headers.get("Cache-Control", "")
