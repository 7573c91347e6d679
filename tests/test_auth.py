"""Who may do what: the three sign-in modes, roles, READ_ONLY, CSRF, same-origin JSON, cookies, bind checks.

The guards are exercised through a tiny blueprint registered here (a form action and a JSON action),
so these tests do not depend on any real action's behaviour.
"""

from __future__ import annotations

import json
import os
import re
import socket

import pytest
from bs4 import BeautifulSoup
from click.testing import CliRunner
from flask import Blueprint, jsonify
from werkzeug.security import check_password_hash, generate_password_hash

from idemdash.cli import main
from idemdash.core.settings import ConfigError
from idemdash.dashboard import auth
from idemdash.dashboard.accounts import parse_users
from idemdash.dashboard.auth import actions_allowed, current_user, json_action, operator_required
from idemdash.dashboard.network import REPEATED_HEADERS, bind_host, is_loopback_host

UNTRUSTED = {"REMOTE_ADDR": "10.9.8.7"}
OPERATOR_HEADERS = {"X-Forwarded-User": "alice@example.com", "X-Forwarded-Groups": "sre, idemdash-operators"}
VIEWER_HEADERS = {"X-Forwarded-User": "bob@example.com", "X-Forwarded-Groups": "sre,developers"}


def _fast_hash(password: str) -> str:
    # a cheap work factor keeps the tests fast; the format is what production files hold
    return generate_password_hash(password, method="pbkdf2:sha256:1000")


@pytest.fixture(scope="module")
def database_url(shared_database_url):
    """The tests here only read the database (the guards are what they test): one database for the module."""
    return shared_database_url


@pytest.fixture
def users_file(tmp_path):
    path = tmp_path / "users"
    path.write_text(
        f"# idemdash users\n\nalice:operator:{_fast_hash('alice-pw')}\nbob:viewer:{_fast_hash('bob-pw')}\n",
        encoding="utf-8",
    )
    return str(path)


@pytest.fixture
def guarded(make_app):
    """make_app plus the test-only actions; each action appends the actor it would record to ``app.actors``."""

    def build(**settings):
        app = make_app(**settings)
        app.actors = []
        bp = Blueprint("guard_test", __name__)

        @bp.post("/test-action")
        @operator_required
        def form_action():
            app.actors.append(current_user().name)
            return "done"

        @bp.post("/api/v1/test-action")
        @json_action
        def api_action():
            app.actors.append(current_user().name)
            return jsonify({"actor": current_user().name})

        @bp.post("/api/v1/test-undecorated")
        def api_undecorated():
            # no json_action: the app-wide guard still holds /api/ to same-origin JSON
            return jsonify({"ok": True})

        @bp.get("/test-whoami")
        def whoami():
            user = current_user()
            return jsonify(
                {"name": user.name, "role": user.role, "source": user.source, "actions_allowed": actions_allowed()}
            )

        app.register_blueprint(bp)
        return app

    return build


def token_from(response) -> str:
    """The CSRF token a page puts in <body hx-headers> (what htmx sends as X-CSRFToken)."""
    assert response.status_code == 200, response.data[:500]
    body = BeautifulSoup(response.data, "html.parser").body
    return json.loads(body["hx-headers"])["X-CSRFToken"]


def page_token(client, **kwargs) -> str:
    return token_from(client.get("/runbook/stuck-keys", **kwargs))


def basic(name: str, password: str) -> dict:
    import base64

    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


# ---------------------------------------------------------------------------
# AUTH=none


def test_none_mode_everyone_is_an_operator_named_by_address(guarded):
    app = guarded()
    client = app.test_client()
    me = client.get("/test-whoami").get_json()
    assert me == {"name": "anonymous@127.0.0.1", "role": "operator", "source": "none", "actions_allowed": True}
    assert client.post("/test-action", data={"csrf_token": page_token(client)}).status_code == 200
    response = client.post("/api/v1/test-action", json={})
    assert response.status_code == 200 and response.get_json() == {"actor": "anonymous@127.0.0.1"}
    assert app.actors == ["anonymous@127.0.0.1"] * 2


REBOUND = {"Host": "evil.example:8000"}  # DNS rebinding: a hostile name pointed at 127.0.0.1
REMOTE = {"REMOTE_ADDR": "10.0.0.5"}


def _refused(response, *, json_body: bool) -> str:
    assert response.status_code == 403, response.get_data(as_text=True)[:300]
    text = response.get_json()["error"] if json_body else BeautifulSoup(response.data, "html.parser").get_text(" ")
    assert "IDEMDASH_ALLOW_UNAUTHENTICATED" in text and "IDEMDASH_AUTH" in text
    return text


def test_none_mode_refuses_another_host_on_every_kind_of_request(guarded, conn):
    app = guarded()
    client = app.test_client()
    token = page_token(client)  # a session and token from the real page: the form below is otherwise valid
    page = client.get("/keys?status=stuck", headers=REBOUND)
    assert "evil.example" in _refused(page, json_body=False)
    # not even which database (the top bar names it on every page for someone allowed in)
    label = BeautifulSoup(client.get("/keys").data, "html.parser").select_one(".dbname").get_text()
    assert "/idemdash_test" in label and label not in page.get_data(as_text=True)
    _refused(client.get("/api/v1/keys?status=stuck", headers=REBOUND), json_body=True)
    # a matching Origin passed the same-origin check before: the rebinding page is its own origin
    purge = client.post(
        "/api/v1/purges/run",
        json={"table": "keys", "dry_run": False},
        headers={**REBOUND, "Origin": "http://evil.example:8000"},
    )
    _refused(purge, json_body=True)
    form = client.post("/test-action", data={"csrf_token": token}, headers=REBOUND)
    _refused(form, json_body=False)
    _refused(client.get("/metrics", headers=REBOUND), json_body=False)
    _refused(client.get("/no-such-page", headers=REBOUND), json_body=False)
    assert app.actors == []
    assert conn.execute("SELECT count(*) FROM idemdash.purge_run").fetchone()[0] == 0
    # what a container probe asks with the pod's address as Host keeps working
    assert client.get("/healthz", headers=REBOUND).status_code == 200
    assert client.get("/readyz", headers=REBOUND).status_code == 200
    with client.get("/static/css/idemdash.css", headers=REBOUND) as css:
        assert css.status_code == 200


def test_none_mode_refuses_a_peer_on_another_machine(guarded):
    app = guarded()
    client = app.test_client()
    # the Host says localhost, but the connection came from elsewhere
    _refused(client.get("/test-whoami", environ_base=REMOTE), json_body=False)
    _refused(client.get("/api/v1/audit", environ_base=REMOTE), json_body=True)
    _refused(client.post("/api/v1/test-action", json={}, environ_base=REMOTE), json_body=True)
    assert app.actors == []
    assert client.get("/healthz", environ_base=REMOTE).status_code == 200


LOOPBACK_HOSTS = (
    "localhost",
    "localhost:8000",
    "LOCALHOST:8000",
    "localhost.",
    "localhost.:8000",
    "127.0.0.1",
    "127.0.0.1:8000",
    "127.1.2.3:80",
    "[::1]:8000",
    "[::1]",
)
LOOPBACK_PEERS = ("127.0.0.1", "::1", "::ffff:127.0.0.1")
NOT_LOOPBACK_HOSTS = (
    "evil.example",
    "localhost.evil.example",
    "127.0.0.1.evil.example",
    "10.0.0.1:8000",
    "0.0.0.0:8000",
    "[::]:8000",
    "foo.localhost",
    "127.0.0.1,evil.example",
    "unix:/tmp/x",
    "[::1",
    "evil.example:8000\x00",
)


# every host and peer asks the one app (the check reads each request alone): an app and a database per case cost the
# fast loop about 2 s for these 41 requests
def test_none_mode_answers_loopback_names_and_peers(guarded):
    client = guarded().test_client()
    for host in LOOPBACK_HOSTS:
        for peer in LOOPBACK_PEERS:
            response = client.get("/test-whoami", headers={"Host": host}, environ_base={"REMOTE_ADDR": peer})
            assert response.status_code == 200, (host, peer)
            assert response.get_json()["role"] == "operator", (host, peer)


def test_none_mode_refuses_names_that_are_not_loopback(guarded):
    client = guarded().test_client()
    for host in NOT_LOOPBACK_HOSTS:
        assert client.get("/test-whoami", headers={"Host": host}).status_code == 403, host
    # and a loopback name after them is still answered: each refusal was about its own request
    assert client.get("/test-whoami", headers={"Host": "localhost"}).status_code == 200


def test_allow_unauthenticated_lets_other_hosts_and_peers_in(guarded):
    app = guarded(ALLOW_UNAUTHENTICATED=True)
    client = app.test_client()
    assert client.get("/test-whoami", headers=REBOUND).get_json()["name"] == "anonymous@127.0.0.1"
    assert client.get("/test-whoami", environ_base=REMOTE).get_json()["name"] == "anonymous@10.0.0.5"
    response = client.post("/api/v1/test-action", json={}, headers={**REBOUND, "Origin": "http://evil.example:8000"})
    assert response.status_code == 200
    assert app.actors == ["anonymous@127.0.0.1"]


def test_signed_in_modes_answer_any_host(guarded, users_file):
    basic_client = guarded(AUTH="basic", USERS_FILE=users_file).test_client()
    alice = basic("alice", "alice-pw")
    assert basic_client.get("/test-whoami", headers={**REBOUND, **alice}).get_json()["name"] == "alice"
    assert basic_client.get("/test-whoami", headers=alice, environ_base=REMOTE).get_json()["name"] == "alice"
    proxy_client = guarded(AUTH="proxy").test_client()
    proxied = {**OPERATOR_HEADERS, "Host": "idemdash.example.com"}
    assert proxy_client.get("/test-whoami", headers=proxied).get_json()["name"] == "alice@example.com"


def test_none_mode_refuses_another_host_through_a_real_server(guarded, live_server):
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(live_server(guarded()))
    for method, path, body, headers in [
        ("GET", "/keys", None, {}),
        (
            "POST",
            "/api/v1/purges/run",
            '{"table": "keys", "dry_run": false}',
            {"Content-Type": "application/json", "Origin": "http://evil.example:8000"},
        ),
    ]:
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            connection.request(method, path, body=body, headers={"Host": "evil.example:8000", **headers})
            response = connection.getresponse()
            text = response.read().decode()
        finally:
            connection.close()
        assert response.status == 403, text[:300]
        assert "IDEMDASH_ALLOW_UNAUTHENTICATED" in text
    # the same server answers its own name
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request("GET", "/test-whoami")
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_top_bar_shows_the_user_and_role(guarded):
    client = guarded(AUTH="proxy").test_client()
    soup = BeautifulSoup(client.get("/runbook/stuck-keys", headers=VIEWER_HEADERS).data, "html.parser")
    who = soup.select_one("header.topbar .whoami")
    assert who.select_one(".username").get_text() == "bob@example.com"
    assert who.select_one(".badge").get_text() == "viewer"
    assert soup.select_one("header.topbar .read-only") is None
    assert soup.select_one('nav a[href="/audit"]').get_text() == "Audit"


# ---------------------------------------------------------------------------
# roles and READ_ONLY


def test_viewer_is_refused_on_forms_and_api(guarded):
    app = guarded(AUTH="proxy")
    client = app.test_client()
    token = page_token(client, headers=VIEWER_HEADERS)
    form = client.post("/test-action", data={"csrf_token": token}, headers=VIEWER_HEADERS)
    assert form.status_code == 403
    assert "bob@example.com is a viewer" in form.get_data(as_text=True)
    api = client.post("/api/v1/test-action", json={}, headers=VIEWER_HEADERS)
    assert api.status_code == 403
    assert "operator role" in api.get_json()["error"]
    assert client.get("/test-whoami", headers=VIEWER_HEADERS).get_json()["actions_allowed"] is False
    assert app.actors == []


def test_operator_may_act_and_is_the_recorded_actor(guarded):
    app = guarded(AUTH="proxy")
    client = app.test_client()
    token = page_token(client, headers=OPERATOR_HEADERS)
    assert client.post("/test-action", data={"csrf_token": token}, headers=OPERATOR_HEADERS).status_code == 200
    api = client.post("/api/v1/test-action", json={}, headers=OPERATOR_HEADERS)
    assert api.status_code == 200 and api.get_json() == {"actor": "alice@example.com"}
    assert app.actors == ["alice@example.com", "alice@example.com"]


def test_read_only_refuses_operators_and_hides_actions(guarded):
    app = guarded(AUTH="proxy", READ_ONLY=True)
    client = app.test_client()
    me = client.get("/test-whoami", headers=OPERATOR_HEADERS).get_json()
    assert me["role"] == "operator" and me["actions_allowed"] is False
    token = page_token(client, headers=OPERATOR_HEADERS)
    form = client.post("/test-action", data={"csrf_token": token}, headers=OPERATOR_HEADERS)
    assert form.status_code == 403 and "read-only" in form.get_data(as_text=True)
    api = client.post("/api/v1/test-action", json={}, headers=OPERATOR_HEADERS)
    assert api.status_code == 403 and "IDEMDASH_READ_ONLY" in api.get_json()["error"]
    assert app.actors == []
    badge = BeautifulSoup(client.get("/runbook/stuck-keys", headers=OPERATOR_HEADERS).data, "html.parser").select_one(
        "header.topbar .read-only"
    )
    assert badge is not None and badge.get_text() == "read-only"


# ---------------------------------------------------------------------------
# AUTH=basic


def test_basic_without_credentials_is_challenged(guarded, users_file):
    client = guarded(AUTH="basic", USERS_FILE=users_file).test_client()
    page = client.get("/audit")
    assert page.status_code == 401
    assert page.headers["WWW-Authenticate"].startswith('Basic realm="idemdash"')
    assert "user name and password" in page.get_data(as_text=True)
    api = client.get("/api/v1/audit")
    assert api.status_code == 401 and api.headers["WWW-Authenticate"].startswith("Basic")
    assert "user name and password" in api.get_json()["error"]
    # a different scheme is not a credential either
    assert client.get("/audit", headers={"Authorization": "Bearer abc"}).status_code == 401


@pytest.mark.parametrize(
    ("name", "password"),
    [("alice", "wrong"), ("alice", ""), ("mallory", "alice-pw"), ("", "alice-pw"), ("ALICE", "alice-pw")],
)
def test_basic_wrong_credentials_are_refused(guarded, users_file, name, password):
    client = guarded(AUTH="basic", USERS_FILE=users_file).test_client()
    response = client.get("/test-whoami", headers=basic(name, password))
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_basic_roles_come_from_the_users_file(guarded, users_file):
    app = guarded(AUTH="basic", USERS_FILE=users_file)
    client = app.test_client()
    alice, bob = basic("alice", "alice-pw"), basic("bob", "bob-pw")
    assert client.get("/test-whoami", headers=alice).get_json() == {
        "name": "alice",
        "role": "operator",
        "source": "basic",
        "actions_allowed": True,
    }
    assert client.get("/test-whoami", headers=bob).get_json()["role"] == "viewer"
    # asked twice: the second answer comes from the remembered check and must agree
    assert client.get("/test-whoami", headers=alice).get_json()["name"] == "alice"
    assert client.get("/test-whoami", headers=basic("alice", "bob-pw")).status_code == 401

    assert client.post("/api/v1/test-action", json={}, headers=bob).status_code == 403
    assert client.post("/api/v1/test-action", json={}, headers=alice).get_json() == {"actor": "alice"}
    token = page_token(client, headers=alice)
    assert client.post("/test-action", data={"csrf_token": token}, headers=alice).status_code == 200
    assert app.actors == ["alice", "alice"]


def test_probes_and_static_stay_open(guarded, users_file):
    client = guarded(AUTH="basic", USERS_FILE=users_file).test_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    if "metrics.scrape" in client.application.view_functions:
        assert client.get("/metrics").status_code == 200
    with client.get("/static/css/idemdash.css") as css:  # a file response: close it
        assert css.status_code == 200
    assert client.get("/no-such-page").status_code == 401  # not even whether a page exists


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "lists no users"),
        ("# only a comment\n", "lists no users"),
        ("alice:operator\n", "line 1: expected name:role:hash"),
        ("\nalice:admin:{h}\n", "line 2: role must be viewer or operator"),
        ("alice:operator:hunter2\n", "line 1: the password hash is not one werkzeug makes"),
        ("alice:operator:{h}\nalice:viewer:{h}\n", "line 2: user 'alice' appears twice"),
        ("al ice:operator:{h}\n", "line 1: user name"),
    ],
)
def test_bad_users_files_stop_the_start(make_app, tmp_path, content, message):
    path = tmp_path / "users"
    path.write_text(content.replace("{h}", _fast_hash("x")), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        make_app(AUTH="basic", USERS_FILE=str(path))
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_basic_needs_an_existing_users_file(make_app, tmp_path):
    with pytest.raises(ConfigError, match="needs IDEMDASH_USERS_FILE"):
        make_app(AUTH="basic")
    with pytest.raises(ConfigError, match="does not exist"):
        make_app(AUTH="basic", USERS_FILE=str(tmp_path / "missing"))


def test_users_file_accepts_werkzeug_default_hashes_and_colons_in_them():
    hashed = generate_password_hash("pw")  # scrypt:32768:8:1$salt$hex: colons inside the hash
    accounts = parse_users(f"carol:viewer:{hashed}\n")
    assert accounts["carol"].role == "viewer"
    assert check_password_hash(accounts["carol"].password_hash, "pw")


@pytest.mark.system
def test_hash_password_prints_a_users_file_line():
    result = CliRunner().invoke(
        main, ["hash-password", "--user", "dave", "--role", "operator"], input="s3cret pass\ns3cret pass\n"
    )
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[-1]
    assert "s3cret" not in line
    account = parse_users(line)["dave"]
    assert account.role == "operator"
    assert check_password_hash(account.password_hash, "s3cret pass")
    assert not check_password_hash(account.password_hash, "s3cret")
    mismatch = CliRunner().invoke(main, ["hash-password"], input="one\ntwo\n")
    assert mismatch.exit_code != 0
    assert CliRunner().invoke(main, ["hash-password", "--user", "a:b"], input="x\nx\n").exit_code == 2


# ---------------------------------------------------------------------------
# AUTH=proxy


def test_proxy_groups_decide_the_role(guarded):
    client = guarded(AUTH="proxy", OPERATOR_GROUPS="oncall, idemdash-operators").test_client()
    assert client.get("/test-whoami", headers=OPERATOR_HEADERS).get_json() == {
        "name": "alice@example.com",
        "role": "operator",
        "source": "proxy",
        "actions_allowed": True,
    }
    assert client.get("/test-whoami", headers=VIEWER_HEADERS).get_json()["role"] == "viewer"
    # no groups header at all: a viewer; group names match exactly
    assert client.get("/test-whoami", headers={"X-Forwarded-User": "carol"}).get_json()["role"] == "viewer"
    assert (
        client.get("/test-whoami", headers={"X-Forwarded-User": "carol", "X-Forwarded-Groups": "OnCall"}).get_json()[
            "role"
        ]
        == "viewer"
    )
    assert (
        client.get("/test-whoami", headers={"X-Forwarded-User": "carol", "X-Forwarded-Groups": "oncall"}).get_json()[
            "role"
        ]
        == "operator"
    )


def test_proxy_headers_from_an_untrusted_address_are_ignored(guarded, caplog):
    app = guarded(AUTH="proxy")
    client = app.test_client()
    assert client.get("/healthz", environ_base=UNTRUSTED).status_code == 200
    assert "10.9.8.7" not in caplog.text  # load balancers probing from anywhere are not news
    page = client.get("/audit", headers=OPERATOR_HEADERS, environ_base=UNTRUSTED)
    assert page.status_code == 401
    assert "did not come through the sign-in proxy" in page.get_data(as_text=True)
    assert "alice@example.com" not in page.get_data(as_text=True)
    api = client.get("/api/v1/audit", headers=OPERATOR_HEADERS, environ_base=UNTRUSTED)
    assert api.status_code == 401 and "10.9.8.7" in api.get_json()["error"]
    action = client.post("/api/v1/test-action", json={}, headers=OPERATOR_HEADERS, environ_base=UNTRUSTED)
    assert action.status_code == 401
    assert app.actors == []  # nothing ran, so nothing could be recorded under alice's name
    assert "refused POST /api/v1/test-action from 10.9.8.7" in caplog.text


def test_proxy_trusts_cidr_networks_and_mapped_addresses(guarded):
    client = guarded(AUTH="proxy", PROXY_TRUSTED="10.9.0.0/16, ::1").test_client()
    assert client.get("/test-whoami", headers=OPERATOR_HEADERS, environ_base=UNTRUSTED).get_json()["role"] == "operator"
    assert (
        client.get(
            "/test-whoami", headers=OPERATOR_HEADERS, environ_base={"REMOTE_ADDR": "::ffff:10.9.1.1"}
        ).status_code
        == 200
    )
    assert (
        client.get("/test-whoami", headers=OPERATOR_HEADERS, environ_base={"REMOTE_ADDR": "10.10.0.1"}).status_code
        == 401
    )
    # 127.0.0.1 is no longer in the list
    assert client.get("/test-whoami", headers=OPERATOR_HEADERS).status_code == 401


def test_proxy_custom_headers_and_missing_user(guarded):
    client = guarded(
        AUTH="proxy", PROXY_USER_HEADER="X-Auth-Request-Email", PROXY_GROUPS_HEADER="X-Auth-Request-Groups"
    ).test_client()
    me = client.get(
        "/test-whoami",
        headers={"X-Auth-Request-Email": "erin@example.com", "X-Auth-Request-Groups": "idemdash-operators"},
    ).get_json()
    assert me["name"] == "erin@example.com" and me["role"] == "operator"
    # the default header names mean nothing now
    missing = client.get("/api/v1/audit", headers=OPERATOR_HEADERS)
    assert missing.status_code == 401 and "X-Auth-Request-Email" in missing.get_json()["error"]
    assert client.get("/test-whoami", headers={"X-Auth-Request-Email": "x\x01y"}).status_code == 401


@pytest.mark.parametrize("repeated", ["X-FORWARDED-GROUPS", "X-FORWARDED-USER", "HOST,X-FORWARDED-GROUPS"])
def test_proxy_refuses_identity_headers_sent_more_than_once(guarded, repeated):
    # what `idemdash serve` (network.mark_repeated_headers) tells the app when a header line came more than once
    app = guarded(AUTH="proxy")
    client = app.test_client()
    headers = {**OPERATOR_HEADERS, REPEATED_HEADERS: repeated}
    name = "X-Forwarded-Groups" if "GROUPS" in repeated else "X-Forwarded-User"
    api = client.post("/api/v1/test-action", json={}, headers=headers)
    assert api.status_code == 400
    assert f"send exactly one {name} header" in api.get_json()["error"]
    page = client.get("/test-whoami", headers=headers)
    assert page.status_code == 400 and f"send exactly one {name} header" in page.get_data(as_text=True)
    assert app.actors == []
    assert client.get("/healthz", headers=headers).status_code == 200
    # another repeated header is no reason to refuse
    other = client.get("/test-whoami", headers={**OPERATOR_HEADERS, REPEATED_HEADERS: "ACCEPT"})
    assert other.get_json()["role"] == "operator"


def test_proxy_names_the_configured_header_when_it_is_repeated(guarded):
    client = guarded(AUTH="proxy", PROXY_GROUPS_HEADER="X-Auth-Request-Groups").test_client()
    headers = {
        "X-Forwarded-User": "erin",
        "X-Auth-Request-Groups": "idemdash-operators",
        REPEATED_HEADERS: "X-AUTH-REQUEST-GROUPS",
    }
    response = client.get("/api/v1/audit", headers=headers)
    assert response.status_code == 400
    assert "send exactly one X-Auth-Request-Groups header" in response.get_json()["error"]
    # repeated headers from a client the proxy does not vouch for: not signed in, whatever it sent
    assert client.get("/api/v1/audit", headers=headers, environ_base=UNTRUSTED).status_code == 401


def test_bad_trusted_networks_are_a_config_error():
    from idemdash.core.settings import load

    with pytest.raises(ConfigError, match="IDEMDASH_PROXY_TRUSTED"):
        load({"IDEMDASH_PROXY_TRUSTED": "127.0.0.1,not-an-address"})
    with pytest.raises(ConfigError, match="IDEMDASH_OPERATOR_GROUPS"):
        load({"IDEMDASH_OPERATOR_GROUPS": " , "})
    with pytest.raises(ConfigError, match="IDEMDASH_PROXY_USER_HEADER"):
        load({"IDEMDASH_PROXY_USER_HEADER": "X User"})


# ---------------------------------------------------------------------------
# CSRF on forms and htmx


def test_form_post_without_csrf_token_is_refused(guarded):
    app = guarded()
    client = app.test_client()
    page_token(client)  # the session exists; the token is just not sent
    response = client.post("/test-action", data={"reason": "x"})
    assert response.status_code == 400
    text = BeautifulSoup(response.data, "html.parser").get_text()
    assert "CSRF" in text and "Reload the page" in text
    assert app.actors == []


def test_form_post_with_the_page_token_is_accepted(guarded):
    app = guarded()
    client = app.test_client()
    token = page_token(client)
    assert client.post("/test-action", data={"csrf_token": token}).status_code == 200
    # htmx sends it as a header instead
    assert client.post("/test-action", headers={"X-CSRFToken": token}).status_code == 200
    # the token keeps working later in the shift (no time limit)
    assert app.config["WTF_CSRF_TIME_LIMIT"] is None
    assert client.post("/test-action", data={"csrf_token": token}).status_code == 200
    assert len(app.actors) == 3


def test_a_token_from_another_session_is_refused(guarded):
    app = guarded()
    theirs = page_token(app.test_client())
    mine = app.test_client()
    page_token(mine)
    assert mine.post("/test-action", data={"csrf_token": theirs}).status_code == 400
    assert mine.post("/test-action", data={"csrf_token": "garbage"}).status_code == 400
    assert app.actors == []


def test_form_posts_from_another_site_are_refused_even_with_a_good_token(guarded):
    app = guarded()
    client = app.test_client()
    token = page_token(client)
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/x.html"},
        {"Origin": "http://localhost.evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        refused = client.post("/test-action", data={"csrf_token": token}, headers=headers)
        assert refused.status_code == 403, headers
        text = BeautifulSoup(refused.data, "html.parser").get_text()
        assert "another site" in text and "Nothing was changed" in text, text
        htmx = client.post("/test-action", headers={"X-CSRFToken": token, "HX-Request": "true", **headers})
        assert htmx.status_code == 403, headers
    assert app.actors == []
    # from the dashboard's own pages (Origin, or only a Referer), or with neither header: accepted
    for headers in ({"Origin": "http://localhost"}, {"Referer": "http://localhost/keys?status=stuck"}, {}):
        assert client.post("/test-action", data={"csrf_token": token}, headers=headers).status_code == 200, headers
    assert len(app.actors) == 3


def test_a_token_is_bound_to_the_user_it_was_issued_to(guarded):
    app = guarded(AUTH="proxy")
    client = app.test_client()
    carol = {"X-Forwarded-User": "carol@example.com", "X-Forwarded-Groups": "idemdash-operators"}
    alices = page_token(client, headers=OPERATOR_HEADERS)
    # the same session cookie and token, signed in as someone else (a session planted in carol's browser): refused
    refused = client.post("/test-action", data={"csrf_token": alices}, headers=carol)
    assert refused.status_code == 400 and "another user" in BeautifulSoup(refused.data, "html.parser").get_text()
    assert app.actors == []
    # carol's own page gives her a token of her own, and alice's no longer works in this session
    carols = page_token(client, headers=carol)
    assert carols != alices
    assert client.post("/test-action", data={"csrf_token": carols}, headers=carol).status_code == 200
    assert client.post("/test-action", data={"csrf_token": alices}, headers=OPERATOR_HEADERS).status_code == 400
    assert client.post("/test-action", data={"csrf_token": carols}, headers=OPERATOR_HEADERS).status_code == 400
    assert app.actors == ["carol@example.com"]


def test_without_sign_in_the_token_outlives_a_change_of_loopback_address(guarded):
    # IDEMDASH_AUTH=none: "localhost" may be 127.0.0.1 on one connection and ::1 on the next, the same person
    app = guarded()
    client = app.test_client()
    token = page_token(client)
    assert (
        client.post("/test-action", data={"csrf_token": token}, environ_base={"REMOTE_ADDR": "::1"}).status_code == 200
    )
    assert app.actors == ["anonymous@::1"]


def test_csrf_is_checked_before_the_role(guarded):
    client = guarded(AUTH="proxy").test_client()
    # a viewer without a token learns nothing about roles: the token is what is wrong
    assert client.post("/test-action", headers=VIEWER_HEADERS).status_code == 400


# ---------------------------------------------------------------------------
# the JSON API: JSON only, same origin only


@pytest.mark.parametrize("path", ["/api/v1/test-action", "/api/v1/test-undecorated"])
def test_json_api_refuses_other_origins(guarded, path):
    app = guarded()
    client = app.test_client()
    evil = client.post(path, json={}, headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403 and "Origin 'https://evil.example'" in evil.get_json()["error"]
    assert client.post(path, json={}, headers={"Origin": "null"}).status_code == 403
    assert client.post(path, json={}, headers={"Origin": "http://localhost.evil.example"}).status_code == 403
    assert client.post(path, json={}, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    # no Origin, but a Referer from another site
    assert client.post(path, json={}, headers={"Referer": "https://evil.example/a"}).status_code == 403
    # same origin, or a script with no Origin at all
    assert client.post(path, json={}, headers={"Origin": "http://localhost"}).status_code == 200
    assert (
        client.post(path, json={}, headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}).status_code
        == 200
    )
    assert client.post(path, json={}).status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/test-action", "/api/v1/test-undecorated"])
def test_json_api_refuses_form_bodies(guarded, path):
    client = guarded().test_client()
    response = client.post(path, data={"scope": "x"})
    assert response.status_code == 415 and "application/json" in response.get_json()["error"]
    assert client.post(path, data="{}", content_type="text/plain").status_code == 415


def test_origin_behind_a_tls_proxy(guarded):
    client = guarded().test_client()
    https = {"Origin": "https://localhost", "X-Forwarded-Proto": "https"}
    assert client.post("/api/v1/test-action", json={}, headers=https).status_code == 200
    # X-Forwarded-Proto from an address that is not a trusted proxy is not believed
    assert client.post("/api/v1/test-action", json={}, headers=https, environ_base=UNTRUSTED).status_code == 403


# ---------------------------------------------------------------------------
# the session cookie


def _session_cookie(response) -> str:
    cookies = [c for c in response.headers.getlist("Set-Cookie") if c.startswith("idemdash_session=")]
    assert cookies, response.headers
    return cookies[0]


def test_session_cookie_flags(guarded):
    client = guarded().test_client()
    plain = _session_cookie(client.get("/runbook/stuck-keys"))
    assert "HttpOnly" in plain and "SameSite=Lax" in plain and "Secure" not in plain
    tls = _session_cookie(guarded().test_client().get("/runbook/stuck-keys", base_url="https://localhost"))
    assert "Secure" in tls
    forwarded = _session_cookie(
        guarded().test_client().get("/runbook/stuck-keys", headers={"X-Forwarded-Proto": "https"})
    )
    assert "Secure" in forwarded
    forced = _session_cookie(guarded(SESSION_COOKIE_SECURE=True).test_client().get("/runbook/stuck-keys"))
    assert "Secure" in forced


def test_a_json_answer_sets_no_session_cookie(guarded):
    client = guarded().test_client()
    for path in ("/api/v1/overview", "/api/v1/keys?status=stuck"):
        answer = client.get(path)
        assert answer.status_code == 200
        assert not [c for c in answer.headers.getlist("Set-Cookie") if c.startswith("idemdash_session=")], path
    assert client.post("/api/v1/test-action", json={}).status_code == 200
    assert _session_cookie(client.get("/runbook/stuck-keys"))  # a page still gets its CSRF token's session


# ---------------------------------------------------------------------------
# refusing to serve AUTH=none beyond loopback


@pytest.mark.parametrize(
    ("bind", "host"),
    [
        ("127.0.0.1:8000", "127.0.0.1"),
        ("0.0.0.0:8000", "0.0.0.0"),
        ("[::1]:8000", "::1"),
        ("[::]:80", "::"),
        ("localhost:8000", "localhost"),
        ("dash.internal:8000", "dash.internal"),
        (":8000", ""),
        ("0.0.0.0", "0.0.0.0"),
        ("::1", "::1"),
        ("unix:/run/idemdash.sock", None),
        ("fd://3", None),
    ],
)
def test_bind_host(bind, host):
    assert bind_host(bind) == host


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.0.0.1", False),
        ("dash.internal", False),
        ("::ffff:127.0.0.1", True),
    ],
)
def test_is_loopback_host(host, loopback):
    assert is_loopback_host(host) is loopback


def _cli_env(**values):
    database_url = os.environ.get("TEST_SERVE_DATABASE_URL", "postgresql://idemdash@db.invalid/app")
    env = {
        "IDEMDASH_DATABASE_URL": database_url,
        "IDEMDASH_AUTH": None,
        "IDEMDASH_ALLOW_UNAUTHENTICATED": None,
        "IDEMDASH_USERS_FILE": None,
        "IDEMDASH_BIND": None,
    }
    env.update({f"IDEMDASH_{k}": v for k, v in values.items()})
    return env


@pytest.fixture
def gunicorn_runs(monkeypatch, database_url):
    """Records the binds gunicorn would have served instead of serving them (`idemdash serve` execs gunicorn once
    its checks pass, the database's among them: this test's database is one that passes)."""
    binds: list[list[str]] = []
    monkeypatch.setenv("TEST_SERVE_DATABASE_URL", database_url)
    monkeypatch.setattr(os, "execve", lambda path, argv, env: binds.append([argv[argv.index("--bind") + 1]]))
    return binds


def test_serve_refuses_a_public_bind_without_auth(gunicorn_runs):
    result = CliRunner().invoke(main, ["serve", "--bind", "0.0.0.0:8000"], env=_cli_env())
    assert result.exit_code == 2
    assert "refusing to listen on all interfaces" in result.output
    assert "IDEMDASH_ALLOW_UNAUTHENTICATED=1" in result.output
    assert gunicorn_runs == []
    # IDEMDASH_BIND is checked the same way
    result = CliRunner().invoke(main, ["serve"], env=_cli_env(BIND="10.1.2.3:9000"))
    assert result.exit_code == 2 and "'10.1.2.3'" in result.output
    assert gunicorn_runs == []


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--bind", "127.0.0.1:8000"], {}),
        (["--bind", "[::1]:8000"], {}),
        ([], {}),  # the default bind is loopback
        (["--bind", "0.0.0.0:8000"], {"ALLOW_UNAUTHENTICATED": "1"}),
        (["--bind", "0.0.0.0:8000"], {"AUTH": "proxy"}),
    ],
)
def test_serve_starts_when_allowed(gunicorn_runs, args, env):
    result = CliRunner().invoke(main, ["serve", *args], env=_cli_env(**env))
    assert result.exit_code == 0, result.output
    assert len(gunicorn_runs) == 1


def test_serve_checks_the_users_file_before_starting(gunicorn_runs, tmp_path, users_file):
    missing = CliRunner().invoke(
        main, ["serve", "--bind", "0.0.0.0:8000"], env=_cli_env(AUTH="basic", USERS_FILE=str(tmp_path / "nope"))
    )
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert gunicorn_runs == []
    ok = CliRunner().invoke(
        main, ["serve", "--bind", "0.0.0.0:8000"], env=_cli_env(AUTH="basic", USERS_FILE=users_file)
    )
    assert ok.exit_code == 0, ok.output
    assert gunicorn_runs == [["0.0.0.0:8000"]]


class _Started(Exception):
    pass


def test_demo_refuses_a_public_host_before_starting_anything(monkeypatch):
    from idemdash.workload import demo

    def started():
        raise _Started

    monkeypatch.setattr(demo, "_quiet", started)  # the first thing the demo does after the check
    refused = CliRunner().invoke(main, ["demo", "--host", "0.0.0.0"], env=_cli_env())
    assert refused.exit_code == 2
    assert "--host 0.0.0.0" in refused.output and "IDEMDASH_AUTH=none" in refused.output
    # a port nobody holds: the demo refuses a busy one before it starts anything too
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    allowed = CliRunner().invoke(
        main, ["demo", "--host", "0.0.0.0", "--port", port], env=_cli_env(ALLOW_UNAUTHENTICATED="1")
    )
    assert isinstance(allowed.exception, _Started), allowed.output
    local = CliRunner().invoke(main, ["demo", "--host", "127.0.0.1", "--port", port], env=_cli_env())
    assert isinstance(local.exception, _Started), local.output


# ---------------------------------------------------------------------------
# documentation


def test_security_doc_names_every_auth_setting():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "security.md").read_text(encoding="utf-8")
    for name in (
        "IDEMDASH_AUTH",
        "IDEMDASH_USERS_FILE",
        "IDEMDASH_PROXY_USER_HEADER",
        "IDEMDASH_PROXY_GROUPS_HEADER",
        "IDEMDASH_PROXY_TRUSTED",
        "IDEMDASH_OPERATOR_GROUPS",
        "IDEMDASH_ALLOW_UNAUTHENTICATED",
        "IDEMDASH_SESSION_COOKIE_SECURE",
        "IDEMDASH_READ_ONLY",
        "idemdash hash-password",
    ):
        assert name in text, name
    assert re.search(r"X-CSRFToken", text)
    assert auth.REALM in text
