"""/audit filtered by kind of action, actor and time range, and a bulk action's one line saying what it did."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest
from bs4 import BeautifulSoup

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key
from tests.test_audit_page import BASE, insert_audit


@pytest.fixture
def log(conn):
    """Actions of every kind at known times: BASE - 0 h, 1 h, ... ."""
    rows = {}
    for hours, action, actor in (
        (0, "note", "alice"),
        (1, "reclassify:abandoned", "bob"),
        (2, "purge:keys", "alice"),
        (3, "purge-dry-run:inbox", "carol"),
        (4, "reclassify-bulk:safe_to_retry", "bob"),
        (30, "reclassify:needs_review", "alice"),
    ):
        rows[action] = insert_audit(
            conn,
            at=BASE - timedelta(hours=hours),
            action=action,
            actor=actor,
            key=None if action.startswith(("purge", "reclassify-bulk")) else "k",
        )
    return rows


def _actions(client, query: str) -> list[str]:
    response = client.get("/api/v1/audit?" + query)
    assert response.status_code == 200, response.get_json()
    return [i["action"] for i in response.get_json()["items"]]


@pytest.mark.system
def test_filter_by_kind_of_action(client, log):
    assert _actions(client, "action=note") == ["note"]
    assert _actions(client, "action=reclassify") == ["reclassify:abandoned", "reclassify:needs_review"]
    assert _actions(client, "action=reclassify-bulk") == ["reclassify-bulk:safe_to_retry"]
    assert _actions(client, "action=purge") == ["purge:keys"]
    assert _actions(client, "action=purge-dry-run") == ["purge-dry-run:inbox"]
    assert _actions(client, "action=purge&actor=carol") == []
    soup = BeautifulSoup(client.get("/audit?action=purge").data, "html.parser")
    assert soup.select_one("select[name=action] option[selected]")["value"] == "purge"
    assert len(soup.select("#audit-panel table.audit > tbody > tr")) == 1


def test_filter_by_time_range(client, conn, log):
    iso = lambda moment: quote(moment.isoformat())  # noqa: E731
    assert _actions(client, f"since={iso(BASE - timedelta(hours=2))}") == ["note", "reclassify:abandoned", "purge:keys"]
    assert _actions(client, f"since={iso(BASE - timedelta(hours=3))}&until={iso(BASE - timedelta(hours=1))}") == [
        "reclassify:abandoned",
        "purge:keys",
        "purge-dry-run:inbox",
    ]
    # a time without a zone is UTC; datetime-local's form (no seconds) works
    naive = (BASE - timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M")
    assert _actions(client, f"until={naive}") == ["reclassify-bulk:safe_to_retry", "reclassify:needs_review"]
    # how long ago: the rows written now are inside 1h, the fixture's (in 2026-11-20) are not
    insert_audit(conn, at=datetime.now(timezone.utc), action="note", actor="dave", key="fresh")
    assert _actions(client, "since=1h") == ["note"]
    assert _actions(client, "since=1h&actor=dave") == ["note"]


def test_a_duration_longer_than_a_century_means_since_ever(client, log):
    """How long ago past 100 years is the same as 100 years (nothing is older): every entry, never an overflow."""
    assert len(_actions(client, "since=999999999d")) == len(log)
    assert client.get("/audit?since=999999999d").status_code == 200


@pytest.mark.parametrize(
    "query, words",
    [
        ("action=delete", "action must be one of"),
        ("since=yesterday", "since must be a time"),
        ("until=2026-13-40", "until must be a time"),
    ],
)
def test_bad_filters_are_a_400_that_says_what_to_send(client, log, query, words):
    for path in ("/api/v1/audit?", "/audit?"):
        response = client.get(path + query)
        assert response.status_code == 400, (path, query)
        assert words in response.get_data(as_text=True)


def test_a_time_range_that_ends_before_it_starts_lists_nothing(client, log):
    """A well-formed range that holds no time is an empty answer, not bad input (the API's document cannot tell
    one order of two valid times from the other)."""
    assert _actions(client, "since=2026-11-21&until=2026-11-20") == []
    assert client.get("/audit?since=2026-11-21&until=2026-11-20").status_code == 200


def test_a_bulk_line_says_filter_outcome_reason_and_counts(client, conn):
    for i in range(3):
        claim_key(conn, Tables(), "refund", f"r{i}", "h", "api-1", lock_seconds=0)
    api = "/api/v1/keys/reclassify-bulk"
    preview = client.post(api, json={"filter": {"scope": "refund"}, "to": "abandoned", "preview": True}).get_json()
    claim_key(conn, Tables(), "refund", "r2", "h", "api-2", lock_seconds=600)  # a retry took one back meanwhile
    done = client.post(
        api,
        json={"filter": {"scope": "refund"}, "to": "abandoned", "reason": "INC-3: refunds", "as_of": preview["as_of"]},
    ).get_json()
    assert done["changed"] == 2
    soup = BeautifulSoup(client.get("/audit?action=reclassify-bulk").data, "html.parser")
    (line,) = soup.select("#audit-panel table.audit > tbody > tr")
    text = line.get_text(" ", strip=True)
    assert "reclassify-bulk:abandoned" in text and "INC-3: refunds" in text
    summary = line.select_one("details.children summary").get_text(" ", strip=True)
    assert summary.startswith("2 keys changed of 3 previewed") and "scope 'refund'" in summary
