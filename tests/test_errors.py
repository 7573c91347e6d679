"""The HTTP answer for each database failure: a held lock is 409, a statement timeout 503 that says it timed
out, and only a database that cannot be reached is "unreachable".

Each failure is real: another connection holds a row or table lock while the request runs. The error handlers
are exercised through a tiny blueprint registered here (a write and a read of idemdash's own tables) and then
through real endpoints.
"""

from __future__ import annotations

from datetime import datetime, timezone

import psycopg
import pytest
from bs4 import BeautifulSoup
from flask import Blueprint, jsonify

from idemdash.dashboard.targets import get_target
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key
from idemdash.queries.keys import list_scopes
from idemdash.queries.rollup_store import upsert_rollup

LOCKED = "An application transaction holds this row right now; nothing was changed, try again in a moment."
BULK = "/api/v1/keys/reclassify-bulk"


@pytest.fixture
def failing(make_app):
    """make_app plus a write and a read that wait for whatever lock another connection holds."""

    def build(**settings):
        app = make_app(**settings)
        bp = Blueprint("error_test", __name__)

        def write():
            with get_target().write() as conn:
                upsert_rollup(conn, "error_test", "", datetime.now(timezone.utc), 1.0, [])
            return jsonify({"ok": True})

        def read():
            db = get_target()
            with db.read() as conn:
                return jsonify({"scopes": list_scopes(conn, db.tables)})

        for path, view in (("/test-write", write), ("/test-read", read)):
            bp.add_url_rule(path, view.__name__, view)
            bp.add_url_rule("/api/v1" + path, "api_" + view.__name__, view)
        app.register_blueprint(bp)
        return app

    return build


@pytest.fixture
def holder(database_url):
    """Another connection, inside a transaction, as an application would hold it."""
    with psycopg.connect(database_url) as other:
        yield other
        other.rollback()


def _text(response) -> str:
    return BeautifulSoup(response.data, "html.parser").get_text(" ", strip=True)


@pytest.mark.system
def test_a_row_lock_is_409_and_says_to_try_again(failing, holder, conn):
    client = failing(LOCK_TIMEOUT_MS=100).test_client()
    assert client.get("/api/v1/test-write").status_code == 200  # the row exists now
    holder.execute("SELECT 1 FROM idemdash.rollup WHERE name = 'error_test' FOR UPDATE")

    api = client.get("/api/v1/test-write")
    assert api.status_code == 409 and api.get_json() == {"error": LOCKED}
    page = client.get("/test-write")
    assert page.status_code == 409 and LOCKED in _text(page)
    assert BeautifulSoup(page.data, "html.parser").find("meta", attrs={"http-equiv": "refresh"}) is None
    fragment = client.get("/test-write", headers={"HX-Request": "true"})
    assert fragment.status_code == 409
    assert BeautifulSoup(fragment.data, "html.parser").select_one(".flash.error").get_text() == LOCKED
    assert "<html" not in fragment.get_data(as_text=True)

    holder.rollback()
    assert client.get("/api/v1/test-write").status_code == 200


def test_a_table_lock_is_409_too(failing, holder):
    client = failing(LOCK_TIMEOUT_MS=100).test_client()
    holder.execute("LOCK TABLE idemdash.rollup IN SHARE MODE")  # reads pass, writes wait
    assert client.get("/api/v1/test-read").status_code == 200
    response = client.get("/api/v1/test-write")
    assert response.status_code == 409 and "unreachable" not in response.get_json()["error"]


def test_a_statement_timeout_is_503_that_says_it_timed_out(failing, holder):
    client = failing(STATEMENT_TIMEOUT_MS=100).test_client()
    holder.execute("LOCK TABLE app.idempotency_request IN ACCESS EXCLUSIVE MODE")

    api = client.get("/api/v1/test-read")
    assert api.status_code == 503
    error = api.get_json()["error"]
    assert "timed out" in error and "100 ms statement timeout" in error and "unreachable" not in error
    page = client.get("/test-read")
    assert page.status_code == 503 and "timed out" in _text(page) and "unreachable" not in _text(page)
    # not reloaded every few seconds like an outage page: each reload would run the slow query again
    assert BeautifulSoup(page.data, "html.parser").find("meta", attrs={"http-equiv": "refresh"}) is None
    assert "Retry-After" not in page.headers


@pytest.mark.system
def test_a_json_read_that_times_out_says_so(make_app, holder):
    client = make_app(STATEMENT_TIMEOUT_MS=100).test_client()
    holder.execute("LOCK TABLE app.idempotency_request IN ACCESS EXCLUSIVE MODE")
    # through a panel (what the pages degrade to) ...
    keys = client.get("/api/v1/keys?status=stuck")
    assert keys.status_code == 503
    assert "ran longer than the 100 ms statement timeout" in keys.get_json()["error"]
    assert "unreachable" not in keys.get_json()["error"]
    # ... and a bulk preview (it records what it counted, so it waits for locks only as long as a write may)
    preview = client.post(BULK, json={"filter": {}, "to": "abandoned", "preview": True})
    assert preview.status_code == 409
    assert "try again" in preview.get_json()["error"] and "unreachable" not in preview.get_json()["error"]


@pytest.mark.system
def test_a_bulk_reclassification_against_a_locked_table_is_409_and_changes_nothing(client, conn, holder):
    for i in range(3):
        claim_key(conn, Tables(), "create_order", f"k{i}", "h", "api-1", lock_seconds=0)
    preview = client.post(BULK, json={"filter": {}, "to": "abandoned", "preview": True}).get_json()
    assert preview["count"] == 3
    holder.execute("LOCK TABLE app.idempotency_request IN SHARE MODE")  # an application's migration, say
    response = client.post(
        BULK, json={"filter": {}, "to": "abandoned", "reason": "x", "as_of": preview["as_of"], "all_scopes": True}
    )
    assert response.status_code == 409, response.get_json()
    assert "nothing was changed" in response.get_json()["error"]
    holder.rollback()
    statuses = conn.execute("SELECT DISTINCT status::text FROM app.idempotency_request").fetchall()
    assert statuses == [("processing",)]
