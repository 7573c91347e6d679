"""Counts and empty states that tell the truth: `matching` on every key list equals a count of the rows that match
every filter on that tab; an empty filtered list names what the filters hide; a filter that does not apply to a tab
is refused (API) or shown disabled (page); the stuck list groups by suggested outcome exactly as core/triage.py
suggests one key at a time, and a group can be acted on in bulk."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idemdash.core.triage import suggest
from tests.test_keys import insert_key

LEASE = 300  # IDEMDASH_DEFAULT_LEASE_SECONDS's default
HOT = 5  # IDEMDASH_HOTSPOT_MIN_ATTEMPTS's default
SCOPES = ("create_order", "refund", "send_invoice")
WORKERS = ("api-1", "api-2", "idemdash:needs_review")
STATUSES = ("processing", "succeeded", "failed_retryable", "failed_final")
OVERDUES = (None, "0s", "10m", "2h", "1d", "3d")


@dataclass
class Key:
    scope: str
    key: str
    status: str
    claimed_by: str
    attempts: int
    locked_until: timedelta | None  # relative to now
    claimed_ago: timedelta
    expires_in: timedelta
    outbox: bool

    @property
    def stuck(self) -> bool:
        if self.status != "processing":
            return False
        return (self.locked_until is not None and self.locked_until < timedelta(0)) or (
            self.locked_until is None and self.claimed_ago > timedelta(seconds=LEASE)
        )

    @property
    def overdue(self) -> timedelta:
        lease_end = self.locked_until if self.locked_until is not None else LEASE_END(self)
        return -lease_end


def LEASE_END(k: Key) -> timedelta:
    return timedelta(seconds=LEASE) - k.claimed_ago


def make_world(conn, seed: int = 7) -> list[Key]:
    """Keys in every state; times are whole minutes away from each overdue choice, so now() drifting by a few
    seconds between the count and the check cannot move a key across a boundary."""
    rng = random.Random(seed)
    world = []
    for i in range(160):
        status = rng.choice(STATUSES)
        lease = rng.choice([None, *[timedelta(minutes=m) for m in (-5000, -1500, -200, -37, -3, 7, 90)]])
        claimed_ago = timedelta(minutes=rng.choice((2, 20, 600, 4000)))
        # expires_at must come after created_at (the reference schema checks it): past only for older keys
        expires_in = timedelta(minutes=rng.choice((-90, 90)) if claimed_ago > timedelta(minutes=90) else 90)
        k = Key(
            rng.choice(SCOPES),
            f"k{i}",
            status,
            rng.choice(WORKERS),
            rng.choice((1, 2, 4, 5, 9)),
            lease,
            claimed_ago,
            expires_in,
            rng.random() < 0.3,
        )
        world.append(k)
        insert_key(
            conn,
            k.scope,
            k.key,
            status=k.status,
            claimed_by=k.claimed_by,
            attempts=k.attempts,
            locked_until=k.locked_until,
            claimed_ago=k.claimed_ago,
            expires_in=k.expires_in,
        )
        if k.outbox:
            conn.execute(
                "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,"
                " idempotency_key, payload) VALUES ('e', 'order', gen_random_uuid(), %s, %s, '{}')",
                (k.scope, k.key),
            )
    return world


def suggested_by_triage(k: Key) -> str | None:
    """The outcome core/triage.py suggests for the key, one key at a time (the reference for the SQL groups)."""

    @dataclass
    class Facts:
        status: str
        stuck: bool
        overdue_seconds: float | None
        claimed_by: str | None
        attempt_count: int
        expires_at: datetime

    now = datetime.now().astimezone()
    outbox = [type("Row", (), {"event_type": "e", "created_at": now})()] if k.outbox else []
    facts = Facts(k.status, k.stuck, k.overdue.total_seconds(), k.claimed_by, k.attempts, now + k.expires_in)
    return suggest(facts, outbox, hotspot_min_attempts=HOT, now=now).to


def expected(world: list[Key], tab: str, f: dict) -> int:
    def on_tab(k: Key) -> bool:
        if tab == "stuck":
            return k.stuck
        if tab == "needs_review":
            return k.status == "processing" and k.claimed_by == "idemdash:needs_review"
        return k.status == tab

    def matches(k: Key) -> bool:
        if f.get("scope") and k.scope != f["scope"]:
            return False
        if f.get("claimed_by") and k.claimed_by != f["claimed_by"]:
            return False
        if f.get("min_attempts") and k.attempts < f["min_attempts"]:
            return False
        if f.get("overdue") is not None:
            from idemdash.core.time_parsers import parse_duration

            if k.overdue.total_seconds() < parse_duration(f["overdue"]):
                return False
        return not (f.get("suggested") and suggested_by_triage(k) != f["suggested"])

    return sum(on_tab(k) and matches(k) for k in world)


TAB_FILTERS = st.fixed_dictionaries(
    {
        "scope": st.sampled_from((None, *SCOPES, "nope")),
        "claimed_by": st.sampled_from((None, *WORKERS)),
        "min_attempts": st.sampled_from((None, 2, 5)),
    }
)


@pytest.mark.system
def test_matching_equals_the_rows_that_match_for_every_filter_combination(client, conn):
    world = make_world(conn)

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        tab=st.sampled_from(("stuck", "needs_review", "processing", *STATUSES[1:])),
        common=TAB_FILTERS,
        overdue=st.sampled_from(OVERDUES),
        suggested=st.sampled_from((None, "already_succeeded", "safe_to_retry", "needs_review", "abandoned")),
    )
    def check(tab, common, overdue, suggested):
        f = {k: v for k, v in common.items() if v is not None}
        if tab in ("stuck", "needs_review", "processing") and overdue is not None:
            f["overdue"] = overdue
        if tab == "stuck" and suggested is not None:
            f["suggested"] = suggested
        body = client.get("/api/v1/keys", query_string={"status": tab, "limit": 500, **f}).get_json()
        want = expected(world, tab, f)
        assert body["matching"] == {"count": want, "more": False}, (tab, f)
        assert len(body["items"]) == want, (tab, f)

    check()


def test_the_stuck_groups_are_what_triage_suggests_key_by_key(client, conn):
    world = make_world(conn, seed=11)
    body = client.get("/api/v1/keys?status=stuck").get_json()
    groups = {g["suggested"]: g["keys"] for g in body["suggestions"]}
    want: dict[str, int] = {}
    for k in world:
        if k.stuck:
            want[suggested_by_triage(k)] = want.get(suggested_by_triage(k), 0) + 1
    assert groups == want and sum(groups.values()) == body["matching"]["count"]
    page = BeautifulSoup(client.get("/keys?status=stuck").data, "html.parser")
    chips = {
        a["data-group"]: int(a.select_one("[data-group-count]").get_text().replace(",", ""))
        for a in page.select("nav.suggestion-groups a.group")
    }
    assert chips == want
    assert "with an outbox row: already succeeded?" in page.select_one("nav.suggestion-groups").get_text()


def test_a_filtered_count_reads_7_of_all_and_an_empty_filtered_list_is_never_all_clear(client, conn):
    for i in range(7):
        insert_key(conn, "refund", f"r{i}", locked_until=timedelta(days=-2))
    for i in range(5):
        insert_key(conn, "create_order", f"c{i}", locked_until=timedelta(minutes=-5))
    page = BeautifulSoup(client.get("/keys?status=stuck&scope=refund&overdue=1d").data, "html.parser")
    line = page.select_one("p.matching")
    assert line["data-matching"] == "7"
    assert " ".join(line.get_text().split()).startswith("7 of 12 stuck match scope = refund, overdue ≥ 1 d")

    empty = BeautifulSoup(client.get("/keys?status=stuck&scope=refund&overdue=3d").data, "html.parser")
    text = " ".join(empty.select_one("#keys-panel").get_text().split())
    assert "live lease" not in text
    assert "No stuck keys match scope = refund, overdue ≥ 3 d, while 12 are stuck in all" in text
    assert empty.select_one("p.empty a")["href"] == "/keys?status=stuck"
    hides = " ".join(empty.select_one("[data-loosened]").get_text().split())
    assert "without scope, 0" not in hides and "without overdue, 7 match" in hides
    assert client.get("/api/v1/keys?status=stuck&scope=refund&overdue=3d").get_json()["matching"] == {
        "count": 0,
        "more": False,
    }


def test_a_filter_that_does_not_apply_is_named_by_the_api_and_shown_disabled_on_the_page(client, conn):
    insert_key(conn, "refund", "done", status="succeeded", locked_until=None)
    api = client.get("/api/v1/keys?status=succeeded&overdue=1d").get_json()
    assert api["not_applied"] == [{"filter": "overdue", "applies_to": ["stuck", "needs_review", "processing"]}]
    assert [item["key"] for item in api["items"]] == ["done"] and api["matching"]["count"] == 1
    processing = client.get("/api/v1/keys?status=processing&suggested=safe_to_retry").get_json()
    assert processing["not_applied"] == [{"filter": "suggested", "applies_to": ["stuck"]}]
    assert client.get("/api/v1/keys?status=stuck&overdue=1d").get_json()["not_applied"] == []
    page = BeautifulSoup(client.get("/keys?status=succeeded&overdue=1d").data, "html.parser")
    assert page.select_one("#filters input[name=overdue]").has_attr("disabled")
    assert page.select_one("#filters select[name=suggested]").has_attr("disabled")
    note = page.select_one("[data-ignored]").get_text()
    assert "overdue" in note and "not applied here" in note
    assert [tr.select_one("a.key").get_text() for tr in page.select("table.keys tbody tr")] == ["done"]
    stuck = BeautifulSoup(client.get("/keys?status=stuck").data, "html.parser")
    assert not stuck.select_one("#filters input[name=overdue]").has_attr("disabled")


def test_a_suggested_group_is_listed_and_reclassified_in_bulk_through_preview_and_confirm(client, conn):
    for i in range(3):
        insert_key(conn, "refund", f"fresh{i}", locked_until=timedelta(minutes=-10))  # safe_to_retry
    for i in range(2):
        insert_key(conn, "refund", f"hot{i}", attempts=9, locked_until=timedelta(minutes=-10))  # needs_review
    insert_key(conn, "refund", "done-elsewhere", locked_until=timedelta(minutes=-10))
    conn.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope, "
        "idempotency_key, payload) VALUES ('e', 'order', gen_random_uuid(), 'refund', 'done-elsewhere', '{}')"
    )
    listed = client.get("/api/v1/keys?status=stuck&suggested=needs_review").get_json()
    assert sorted(i["key"] for i in listed["items"]) == ["hot0", "hot1"]
    assert listed["matching"]["count"] == 2
    flt = {"scope": "refund", "suggested": "needs_review"}
    preview = client.post(
        "/api/v1/keys/reclassify-bulk", json={"filter": flt, "to": "needs_review", "preview": True}
    ).get_json()
    assert preview["count"] == 2 and "whose suggested outcome is needs_review" in preview["filter_text"]
    done = client.post(
        "/api/v1/keys/reclassify-bulk",
        json={
            "filter": flt,
            "to": "needs_review",
            "hold_for": "4h",
            "reason": "INC-9: look at the retried ones",
            "as_of": preview["as_of"],
        },
    ).get_json()
    assert done["changed"] == 2
    held = client.get("/api/v1/keys?status=needs_review").get_json()
    assert sorted(i["key"] for i in held["items"]) == ["hot0", "hot1"]
    assert all(i["hold"]["reason"] == "INC-9: look at the retried ones" for i in held["items"])
    remaining = client.get("/api/v1/keys?status=stuck").get_json()
    assert {g["suggested"]: g["keys"] for g in remaining["suggestions"]} == {"already_succeeded": 1, "safe_to_retry": 3}


def _outbox_row(conn, scope: str, key: str) -> None:
    conn.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,"
        " idempotency_key, payload) VALUES ('e', 'order', gen_random_uuid(), %s, %s, '{}')",
        (scope, key),
    )


def _groups(body: dict) -> dict[str, tuple[int, bool]]:
    return {g["suggested"]: (g["keys"], g["more"]) for g in body["suggestions"]}


def test_the_groups_count_only_the_keys_on_the_page_shown(client, conn):
    # most overdue first: the key without a lease (claimed long ago), then by lease end
    insert_key(conn, "refund", "no-lease", locked_until=None, claimed_ago=timedelta(hours=5))
    insert_key(conn, "refund", "hot", locked_until=timedelta(days=-3), attempts=9)
    insert_key(conn, "refund", "done", locked_until=timedelta(days=-2))
    _outbox_row(conn, "refund", "done")
    for i in range(4):  # less overdue (late3 the most of them): the second and third pages
        insert_key(conn, "refund", f"late{i}", locked_until=timedelta(minutes=-10 - i), attempts=9 if i == 1 else 1)
    _outbox_row(conn, "refund", "late0")  # the last key: its outbox row counts only on the page that shows it
    insert_key(conn, "refund", "live", locked_until=timedelta(minutes=10))  # not stuck
    first = client.get("/api/v1/keys?status=stuck&limit=3").get_json()
    assert [i["key"] for i in first["items"]] == ["no-lease", "hot", "done"]
    assert first["matching"] == {"count": 7, "more": False}  # the matching count is not the page's
    # late0's outbox row and late1's attempts are off this page: not looked up, not counted
    assert _groups(first) == {"already_succeeded": (1, True), "safe_to_retry": (1, True), "needs_review": (1, True)}
    assert [g["suggested"] for g in first["suggestions"]] == ["already_succeeded", "safe_to_retry", "needs_review"]
    assert first["suggestions_cap"] == 3
    second = client.get(f"/api/v1/keys?status=stuck&limit=3&cursor={first['next_cursor']}").get_json()
    assert [i["key"] for i in second["items"]] == ["late3", "late2", "late1"]
    assert _groups(second) == {"safe_to_retry": (2, True), "needs_review": (1, True)}
    last = client.get(f"/api/v1/keys?status=stuck&limit=3&cursor={second['next_cursor']}").get_json()
    assert [i["key"] for i in last["items"]] == ["late0"]
    assert _groups(last) == {"already_succeeded": (1, True)}  # a page before it: still not every stuck key
    # one page holding every stuck key: the groups are exact
    whole = client.get("/api/v1/keys?status=stuck").get_json()
    assert _groups(whole) == {"already_succeeded": (2, False), "safe_to_retry": (3, False), "needs_review": (2, False)}
    # a suggested filter counts up to a page, as the list finds them, and lists every match
    safe = client.get("/api/v1/keys?status=stuck&suggested=safe_to_retry&limit=2").get_json()
    assert safe["matching"] == {"count": 2, "more": True}
    assert [i["key"] for i in safe["items"]] == ["no-lease", "late3"]
    safe = client.get("/api/v1/keys?status=stuck&suggested=safe_to_retry&limit=3").get_json()
    assert safe["matching"] == {"count": 3, "more": False}
    page = BeautifulSoup(client.get("/keys?status=stuck&limit=3").data, "html.parser")
    nav = " ".join(page.select_one("nav.suggestion-groups").get_text().split())
    assert "on this page" in nav and "1+ with no effect recorded" in nav
