"""Durations are read in time linear in their length, and a long one is refused before any pattern sees it: the old
pattern's two '\\s*' side by side backtracked quadratically (16,000 characters of overdue= took over a second)."""

from __future__ import annotations

import re
import time

import pytest

from idemdash.core.time_parsers import parse_duration
from idemdash.dashboard.schemas.common import DURATION_PATTERN
from tests.test_reclassify import API, audit, row, stuck_key

# a number, a long run of spaces, then a character that is no unit: what made the old pattern quadratic
ADVERSARIAL = "1" + " " * 30_000 + "x"
LONG = "1" + " " * 100_000 + "h"


def _seconds_taken(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def test_the_parser_refuses_long_adversarial_input_at_once():
    def parse():
        with pytest.raises(ValueError, match="not a duration"):
            parse_duration(ADVERSARIAL)

    # the old pattern took about 2 s on this input (and 25 s on 100,000 characters)
    assert _seconds_taken(parse) < 0.5
    assert parse_duration(" 90 s ") == 90 and parse_duration("1.5H") == 5400 and parse_duration("15 min") == 900


def test_the_documents_pattern_does_not_backtrack_quadratically():
    # a validator (schemathesis, a client) runs the document's pattern on whatever it is given
    assert _seconds_taken(lambda: re.fullmatch(DURATION_PATTERN, ADVERSARIAL)) < 0.5
    assert all(re.fullmatch(DURATION_PATTERN, ok) for ok in ("90", " 90 s ", "15 min", "2H", "1.5d"))
    assert not any(re.fullmatch(DURATION_PATTERN, bad) for bad in ("", "s", "90 x", "1.d", "soon"))


def test_a_long_duration_in_the_query_string_is_a_quick_400(client):
    started = time.perf_counter()
    for url, said in (
        ("/api/v1/keys?status=stuck&overdue=" + LONG, "at most 64 characters"),
        ("/keys?status=stuck&overdue=" + LONG, "at most 64 characters"),
        ("/api/v1/audit?since=" + LONG, "since must be a time"),
    ):
        response = client.get(url)
        assert response.status_code == 400 and said in response.get_data(as_text=True), url[:40]
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize("hold_for", [LONG, " " * 100_000 + "4h"])
def test_a_long_hold_for_in_a_body_is_a_quick_400_and_changes_nothing(client, conn, hold_for):
    stuck_key(conn, "k")
    before = row(conn, "k")
    started = time.perf_counter()
    response = client.post(
        API, json={"scope": "create_order", "key": "k", "to": "needs_review", "reason": "x", "hold_for": hold_for}
    )
    assert time.perf_counter() - started < 1
    assert response.status_code == 400 and "hold_for" in response.get_json()["error"]
    assert row(conn, "k") == before and audit(conn) == []
    bulk = client.post(
        "/api/v1/keys/reclassify-bulk", json={"filter": {"overdue": hold_for}, "to": "abandoned", "preview": True}
    )
    assert bulk.status_code == 400 and "overdue" in bulk.get_json()["error"]
    assert row(conn, "k") == before and audit(conn) == []
