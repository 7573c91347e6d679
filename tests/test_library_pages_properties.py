"""No page or API answer of a library's database is a 5xx, whatever rows its tables hold: Hypothesis writes rows in
every state each library has (the cases of tests/test_library_purge_properties.py, with their time units and time
zones), then every state's count, its rows' first and second page, and each listed row's page are asked for, as
JSON (checked against the OpenAPI document by make_app) and as HTML."""

from __future__ import annotations

import json

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_detect import _create_case
from tests.test_library_purge_properties import CASES, Case, _write

# a Hypothesis property per library table: in the full run, out of the fast loop
pytestmark = [
    pytest.mark.system,
    # The app's connection pools (psycopg_pool) draw from the random module in their own threads (each connection's
    # lifetime is jittered) whenever they open one, which can fall while Hypothesis draws an example; the
    # strategies themselves use none.
    pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_page_of_a_librarys_tables_answers_whatever_rows_they_hold(make_app, empty_database_url, case: Case):
    url = empty_database_url
    _create_case(url, case.schema, case.statements)
    with psycopg.connect(url, autocommit=True) as conn:
        case.setup(conn, url)
    client = make_app(url, PROFILE=case.profile, DEFAULT_LEASE_SECONDS=300).test_client()

    @settings(
        max_examples=6,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(rows=st.lists(case.row, min_size=3, max_size=12))
    def check(rows):
        with psycopg.connect(url, autocommit=True) as conn:
            _write(conn, case, rows, 30)
        for path in ("/", "/tables", "/api/v1/tables", "/health", "/api/v1/health/schema", "/metrics"):
            response = client.get(path)
            assert response.status_code < 500, (path, response.status_code, response.data[:300])
        answer = client.get("/api/v1/tables").get_json()
        assert answer["problem"] is None, answer["problem"]
        [table] = [t for t in answer["tables"] if t["role"] == case.role]
        listed = 0
        for state in (s for s in table["states"] if s["recorded"]):
            query = {"state": state["meaning"], "limit": 2}
            first = client.get(f"/api/v1/tables/{case.role}", query_string=query)
            assert first.status_code == 200, (state, first.get_json())
            body = first.get_json()
            items = body["items"]
            if body["next_cursor"]:
                second = client.get(
                    f"/api/v1/tables/{case.role}", query_string={**query, "cursor": body["next_cursor"]}
                )
                assert second.status_code == 200, second.get_json()
                items += second.get_json()["items"]
            assert len({i["identity"] for i in items}) == len(items)  # no row twice across pages
            assert len(items) == min(state["count"], 4) or state["computed_at"] is not None
            page = client.get(f"/tables/{case.role}", query_string={"state": state["meaning"]})
            assert page.status_code == 200
            for item in items[:2]:
                row = client.get(f"/api/v1/tables/{case.role}/row", query_string={"id": item["identity"]})
                assert row.status_code == 200, row.get_json()
                inside = {s["meaning"] for s in row.get_json()["states"] if s["inside"]}
                assert state["meaning"] in inside, (state["meaning"], inside, json.dumps(item)[:200])
                assert client.get(f"/tables/{case.role}/row", query_string={"id": item["identity"]}).status_code == 200
                listed += 1
        # a row in any state the library records was listed and opened
        assert listed or not any(s["count"] for s in table["states"] if s["recorded"])

    check()
