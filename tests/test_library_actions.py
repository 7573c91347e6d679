"""A library's own documented actions on its rows (core/profiles: ``Profile.actions``), Wolverine's two: releasing
an envelope owned by a dead node (owner_id = 0, what its orphan sweep writes) and replaying a dead letter
(replayable = true). Off unless the database's LIBRARY_ACTIONS names them; a compare-and-set on the library's
condition and on what the operator saw, with a reason and an audit row in the same statement."""

from __future__ import annotations

import json
import threading

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.core import settings
from idemdash.core.databases import load_databases
from idemdash.core.settings import ConfigError
from idemdash.queries.migrate import migrate
from tests import library_ddl as ddl
from tests.test_detect import _create_case

NODE_ALIVE, NODE_DEAD = 1, 7
ORPHAN, LIVE, OUT_ORPHAN = (
    "11111111-1111-1111-1111-111111111111",
    "22222222-2222-2222-2222-222222222222",
    "33333333-3333-3333-3333-333333333333",
)
LETTER, QUEUED = "44444444-4444-4444-4444-444444444444", "55555555-5555-5555-5555-555555555555"
ROWS = f"""
INSERT INTO wolverine.wolverine_nodes (id, node_number, description, uri)
VALUES (gen_random_uuid(), {NODE_ALIVE}, 'n1', 'u1');
INSERT INTO wolverine.wolverine_incoming_envelopes (id, status, owner_id, body, message_type) VALUES
  ('{ORPHAN}', 'Incoming', {NODE_DEAD}, '\\x00', 'm'), ('{LIVE}', 'Incoming', {NODE_ALIVE}, '\\x00', 'm');
INSERT INTO wolverine.wolverine_outgoing_envelopes (id, owner_id, destination, body, message_type) VALUES
  ('{OUT_ORPHAN}', {NODE_DEAD}, 'd', '\\x00', 'm');
INSERT INTO wolverine.wolverine_dead_letters (id, body, message_type, exception_type, exception_message, sent_at,
                                              replayable) VALUES
  ('{LETTER}', '\\x00', 'm', 'E', 'boom', now(), false), ('{QUEUED}', '\\x00', 'm', 'E', 'boom', now(), true)
"""
BOTH = "release-dead-node,replay-dead-letter"
REASON = "INC-88: node 7 was terminated"


def seed_wolverine(url: str) -> str:
    """Wolverine's own tables with ROWS, and idemdash's schema (where the actions are audited)."""
    _create_case(url, "wolverine", [ddl.WOLVERINE])
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(ROWS)
    return url


@pytest.fixture
def wolverine(empty_database_url):
    return seed_wolverine(empty_database_url)


def _ident(uuid: str) -> str:
    return json.dumps([uuid])


def _owner(url: str, table: str, uuid: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(f"SELECT owner_id FROM wolverine.{table} WHERE id = %s", (uuid,)).fetchone()[0]


def _replayable(url: str, uuid: str) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT replayable FROM wolverine.wolverine_dead_letters WHERE id = %s", (uuid,)
        ).fetchone()[0]


def _audit(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT actor, action, scope, key, from_status, to_status, reason, detail"
            " FROM idemdash.audit_log ORDER BY audit_id"
        ).fetchall()


def _release(client, uuid: str = ORPHAN, role: str = "inbox", **body):
    return client.post(
        f"/api/v1/tables/{role}/row/release-dead-node",
        json={"id": _ident(uuid), "reason": REASON, "expected": {"owner_id": NODE_DEAD}} | body,
    )


def test_the_setting_names_only_the_profiles_actions_one_line_per_mistake(tmp_path):
    assert (
        settings.load(
            {
                "IDEMDASH_PROFILE": "wolverine",
                "IDEMDASH_LIBRARY_ACTIONS": "replay-dead-letter, release-dead-node, replay-dead-letter",
            }
        ).library_actions
        == "replay-dead-letter,release-dead-node"
    )
    assert settings.load({"IDEMDASH_PROFILE": "wolverine"}).library_actions == ""
    with pytest.raises(ConfigError) as wrong:
        settings.load({"IDEMDASH_PROFILE": "spring-modulith", "IDEMDASH_LIBRARY_ACTIONS": "release-dead-node,resubmit"})
    lines = str(wrong.value).splitlines()
    assert len(lines) == 2 and all(line.startswith("IDEMDASH_LIBRARY_ACTIONS: ") for line in lines)
    assert "'resubmit' is not an action of profile 'spring-modulith'" in lines[1]
    assert "documents no action" in lines[1]
    config = tmp_path / "idemdash.toml"
    config.write_text(
        '[databases.bus]\nurl = "postgresql://x/y"\nprofile = "wolverine"\n'
        'library_actions = ["release-dead-node", "replay-dead-letter"]\n'
        '[databases.bus2]\nurl = "postgresql://x/z"\nprofile = "wolverine"\n'
        'library_actions = "replay-dead-letter"\n',
        encoding="utf-8",
    )
    loaded = {d.name: d.settings for d in load_databases(settings.load({}, CONFIG=str(config)))}
    assert loaded["bus"].library_actions == BOTH and loaded["bus2"].library_actions == "replay-dead-letter"
    config.write_text(
        '[databases.bus]\nurl = "postgresql://x/y"\nprofile = "wolverine"\nlibrary_actions = ["release-dead-nodes"]\n',
        encoding="utf-8",
    )
    with pytest.raises(
        ConfigError,
        match=r"\[databases.bus\]: library_actions: 'release-dead-nodes' is not an action "
        r"of profile 'wolverine' \(its actions are release-dead-node, "
        r"replay-dead-letter\)",
    ):
        load_databases(settings.load({}, CONFIG=str(config)))


def test_a_disabled_action_is_403_naming_the_setting_and_changes_nothing(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS="replay-dead-letter").test_client()
    refused = _release(client)
    assert refused.status_code == 403
    assert "LIBRARY_ACTIONS" in refused.get_json()["error"] and "release-dead-node" in refused.get_json()["error"]
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == NODE_DEAD and _audit(wolverine) == []
    # the row page offers only what is enabled
    page = BeautifulSoup(client.get(f"/tables/inbox/row?id={_ident(ORPHAN)}").data, "html.parser")
    assert page.select("section[data-action]") == []
    answer = client.get(f"/api/v1/tables/inbox/row?id={_ident(ORPHAN)}").get_json()
    assert [(a["name"], a["enabled"], a["applies"], a["expected"]) for a in answer["actions"]] == [
        ("release-dead-node", False, True, {"owner_id": NODE_DEAD})
    ]
    # read-only mode wins over the setting
    read_only = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH, READ_ONLY=True).test_client()
    assert _release(read_only).status_code == 403 and _audit(wolverine) == []


def test_a_viewer_is_refused(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH, AUTH="proxy").test_client()
    viewer = {"X-Forwarded-User": "bob@example.com", "X-Forwarded-Groups": "sre"}
    refused = client.post(
        "/api/v1/tables/inbox/row/release-dead-node",
        headers=viewer,
        json={"id": _ident(ORPHAN), "reason": REASON, "expected": {"owner_id": NODE_DEAD}},
    )
    assert refused.status_code == 403 and "viewer" in refused.get_json()["error"]
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == NODE_DEAD and _audit(wolverine) == []


def test_release_sets_owner_zero_on_inbox_and_outbox_rows_of_a_dead_node_with_an_audit_row(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    done = _release(client)
    assert done.status_code == 200, done.get_json()
    answer = done.get_json()
    assert (answer["action"], answer["table"], answer["row"]["owner_id"]) == (
        "release-dead-node",
        "wolverine_incoming_envelopes",
        0,
    )
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == 0
    assert _release(client, OUT_ORPHAN, "outbox").status_code == 200
    assert _owner(wolverine, "wolverine_outgoing_envelopes", OUT_ORPHAN) == 0
    audit = _audit(wolverine)
    assert [a[:7] for a in audit] == [
        (
            "anonymous@127.0.0.1",
            "library:release-dead-node",
            "wolverine_incoming_envelopes",
            _ident(ORPHAN),
            '{"owner_id": 7}',
            '{"owner_id": 0}',
            REASON,
        ),
        (
            "anonymous@127.0.0.1",
            "library:release-dead-node",
            "wolverine_outgoing_envelopes",
            _ident(OUT_ORPHAN),
            '{"owner_id": 7}',
            '{"owner_id": 0}',
            REASON,
        ),
    ]
    assert audit[0][7]["expected"] == {"owner_id": "7"} and audit[0][7]["role"] == "inbox"
    assert audit[0][7]["source"].endswith("ReleaseOrphanedMessagesCommand.cs")
    # the audit page is read on this database now, and lists it
    listed = client.get("/api/v1/audit?action=library").get_json()["items"]
    assert [i["action"] for i in listed] == ["library:release-dead-node"] * 2
    # a live node's envelope is not the sweep's: 409, unchanged
    live = _release(client, LIVE, expected={"owner_id": NODE_ALIVE})
    assert live.status_code == 409 and "condition" in live.get_json()["error"]
    assert _owner(wolverine, "wolverine_incoming_envelopes", LIVE) == NODE_ALIVE and len(_audit(wolverine)) == 2


def test_an_empty_node_table_condemns_nobody(make_app, wolverine):
    with psycopg.connect(wolverine, autocommit=True) as conn:
        conn.execute("DELETE FROM wolverine.wolverine_nodes")
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    assert client.get(f"/api/v1/tables/inbox/row?id={_ident(LIVE)}").get_json()["actions"][0]["applies"] is False
    refused = _release(client)
    assert refused.status_code == 409 and _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == NODE_DEAD


def test_the_node_coming_back_between_view_and_submit_is_409_and_changes_nothing(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    seen = client.get(f"/api/v1/tables/inbox/row?id={_ident(ORPHAN)}").get_json()["actions"][0]
    assert seen["applies"] and seen["expected"] == {"owner_id": NODE_DEAD}
    failure: list[Exception] = []

    def node_returns() -> None:  # Wolverine registers node 7 again, from its own connection
        try:
            with psycopg.connect(wolverine, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO wolverine.wolverine_nodes (id, node_number, description, uri) "
                    f"VALUES (gen_random_uuid(), {NODE_DEAD}, 'n7', 'u7')"
                )
        except Exception as exc:  # noqa: BLE001 - shown by the assertion below
            failure.append(exc)

    thread = threading.Thread(target=node_returns)
    thread.start()
    thread.join(30)
    assert not failure
    refused = _release(client, expected=seen["expected"])
    assert refused.status_code == 409
    assert "no longer meets" in refused.get_json()["error"] and refused.get_json()["row"]["owner_id"] == NODE_DEAD
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == NODE_DEAD and _audit(wolverine) == []


def test_the_row_changing_between_view_and_submit_is_409_saying_what_changed(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    with psycopg.connect(wolverine, autocommit=True) as conn:  # another dead node took it over
        conn.execute(f"UPDATE wolverine.wolverine_incoming_envelopes SET owner_id = 9 WHERE id = '{ORPHAN}'")
    refused = _release(client)
    assert refused.status_code == 409
    assert refused.get_json()["error"].startswith("owner_id is 9 now, you saw 7")
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == 9 and _audit(wolverine) == []


def test_a_row_the_library_holds_is_409_without_waiting(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # a Wolverine node's open transaction on the envelope
        with psycopg.connect(wolverine) as conn, conn.transaction():
            conn.execute(f"SELECT 1 FROM wolverine.wolverine_incoming_envelopes WHERE id = '{ORPHAN}' FOR UPDATE")
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(30)
        refused = _release(client)
    finally:
        release.set()
        thread.join(30)
    assert refused.status_code == 409 and "holds this row" in refused.get_json()["error"]
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == NODE_DEAD and _audit(wolverine) == []


@pytest.mark.parametrize(
    ("role", "action", "body", "status"),
    [
        ("inbox", "release-dead-node", {"id": _ident(ORPHAN), "expected": {"owner_id": 7}}, 400),  # no reason
        ("inbox", "release-dead-node", {"id": _ident(ORPHAN), "reason": " ", "expected": {"owner_id": 7}}, 400),
        ("inbox", "release-dead-node", {"id": _ident(ORPHAN), "reason": "r", "expected": {}}, 400),  # not seen
        ("inbox", "release-dead-node", {"id": _ident(ORPHAN), "reason": "r", "expected": {"owner_id": 7, "x": 1}}, 400),
        ("inbox", "release-dead-node", {"id": _ident(ORPHAN), "reason": "r", "expected": {"owner_id": 7}, "y": 1}, 400),
        ("inbox", "release-dead-node", {"id": "not json", "reason": "r", "expected": {"owner_id": 7}}, 404),
        ("dead_letters", "release-dead-node", {"id": _ident(LETTER), "reason": "r", "expected": {"owner_id": 7}}, 404),
        ("nodes", "replay-dead-letter", {"id": "[1]", "reason": "r", "expected": {"replayable": False}}, 404),
    ],
)
def test_bad_input_is_4xx_and_changes_nothing(make_app, wolverine, role, action, body, status):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    answer = client.post(f"/api/v1/tables/{role}/row/{action}", json=body)
    assert answer.status_code == status, answer.get_json()
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == NODE_DEAD
    assert _replayable(wolverine, LETTER) is False and _audit(wolverine) == []


def test_replay_marks_the_dead_letter_replayable_through_the_row_pages_form(make_app, wolverine):
    client = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    page = BeautifulSoup(client.get(f"/tables/dead_letters/row?id={_ident(LETTER)}").data, "html.parser")
    form = page.select_one("section[data-action=replay-dead-letter] form")
    assert form["action"] == "/tables/dead_letters/row/replay-dead-letter"
    fields = {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}
    assert fields["expected_replayable"] == "false"
    unconfirmed = client.post(form["action"], data=fields | {"reason": "replay after the fix"})
    assert unconfirmed.status_code == 400 and _replayable(wolverine, LETTER) is False
    assert "replay after the fix" in unconfirmed.get_data(as_text=True)  # what was typed is kept
    done = client.post(form["action"], data=fields | {"reason": "replay after the fix", "confirm": "yes"})
    assert done.status_code == 303 and "done=" in done.headers["Location"]
    assert _replayable(wolverine, LETTER) is True
    after = BeautifulSoup(client.get(done.headers["Location"]).data, "html.parser")
    assert after.select_one("[data-done]") is not None and after.select("section[data-action]") == []
    # the same stale form again: already replayable, 409 on the page, nothing more recorded
    again = client.post(form["action"], data=fields | {"reason": "twice", "confirm": "yes"})
    assert again.status_code == 409 and "replayable is true now, you saw false" in again.get_data(as_text=True)
    assert [(a[1], a[4], a[5]) for a in _audit(wolverine)] == [
        ("library:replay-dead-letter", '{"replayable": false}', '{"replayable": true}')
    ]
    # one already queued for replay offers nothing
    queued = client.get(f"/api/v1/tables/dead_letters/row?id={_ident(QUEUED)}").get_json()["actions"]
    assert [(a["name"], a["applies"]) for a in queued] == [("replay-dead-letter", False)]
    audit_page = BeautifulSoup(client.get("/audit").data, "html.parser")
    assert audit_page.select_one("a[href*='/tables/dead_letters/row']") is not None


def test_the_audit_is_served_whatever_actions_a_database_enables_and_keeps_what_ran(make_app, wolverine):
    enabled = make_app(wolverine, PROFILE="wolverine", LIBRARY_ACTIONS=BOTH).test_client()
    assert enabled.get("/api/v1/tables").get_json()["read_only"] is False
    assert _release(enabled).status_code == 200
    # the actions switched off again: the rows are read-only, and what an operator did is still on the record
    client = make_app(wolverine, PROFILE="wolverine").test_client()
    assert client.get("/api/v1/tables").get_json()["read_only"] is True
    assert [i["action"] for i in client.get("/api/v1/audit").get_json()["items"]] == ["library:release-dead-node"]
    page = BeautifulSoup(client.get("/audit").data, "html.parser")
    assert "Audit" in [a.get_text() for a in page.select("nav a")] and REASON in page.get_text()


def test_every_declared_action_names_blocks_that_exist_and_its_librarys_source():
    from idemdash.core.profiles import PROFILES
    from idemdash.queries import QUERIES

    declared = [(p, a) for p in PROFILES.values() for a in p.actions]
    assert {(p.name, a.name) for p, a in declared} == {
        ("wolverine", "release-dead-node"),
        ("wolverine", "replay-dead-letter"),
    }
    for chosen, action in declared:
        assert action.condition in QUERIES and action.sets in QUERIES, action.name
        assert set(action.tables) <= {t.role for t in chosen.tables} and action.expected and action.changes
        assert action.source.repo == chosen.sources[0].repo and action.source.path.endswith(".cs")


def test_a_spring_modulith_row_says_how_the_application_resubmits_and_offers_no_action(make_app, empty_database_url):
    from tests.test_profile_pages import SPRING_ROWS

    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        (ident,) = conn.execute(
            "SELECT jsonb_build_array(id)::text FROM modulith.event_publication WHERE status = 'FAILED'"
        ).fetchone()
    client = make_app(empty_database_url, PROFILE="spring-modulith", APP_SCHEMA="modulith").test_client()
    answer = client.get("/api/v1/tables/outbox/row", query_string={"id": ident}).get_json()
    assert answer["actions"] == [] and "FailedEventPublications.resubmit" in answer["application_acts"]
    page = BeautifulSoup(client.get("/tables/outbox/row", query_string={"id": ident}).data, "html.parser")
    assert "resubmitIncompletePublications" in page.select_one("[data-application-acts]").get_text()
    assert not any("/row/" in f.get("action", "") for f in page.select("form"))


@pytest.mark.system
def test_beside_a_reference_database_the_actions_live_under_the_databases_own_urls(
    make_app, wolverine, database_url, tmp_path
):
    from tests.test_databases import write_config

    config = tmp_path / "idemdash.toml"
    write_config(config, {"orders": {"url": database_url}})
    config.write_text(
        config.read_text() + f'[databases.bus]\nurl = "{wolverine}"\nprofile = "wolverine"\n'
        'library_actions = ["release-dead-node"]\n'
    )
    client = make_app(CONFIG=str(config)).test_client()
    page = BeautifulSoup(client.get(f"/db/bus/tables/inbox/row?id={_ident(ORPHAN)}").data, "html.parser")
    form = page.select_one("section[data-action=release-dead-node] form")
    assert form["action"] == "/db/bus/tables/inbox/row/release-dead-node"
    # the reference database is not a library's: the action is refused there, naming the setting
    refused = client.post(
        "/api/v1/tables/inbox/row/release-dead-node",
        json={"id": _ident(ORPHAN), "reason": REASON, "expected": {"owner_id": NODE_DEAD}},
    )
    assert refused.status_code == 403 and "LIBRARY_ACTIONS" in refused.get_json()["error"]
    done = client.post(
        "/api/v1/db/bus/tables/inbox/row/release-dead-node",
        json={"id": _ident(ORPHAN), "reason": REASON, "expected": {"owner_id": NODE_DEAD}},
    )
    assert done.status_code == 200 and done.get_json()["database"] == "bus"
    assert _owner(wolverine, "wolverine_incoming_envelopes", ORPHAN) == 0
    assert "audit log" in client.get("/db/bus/tables").get_data(as_text=True)
