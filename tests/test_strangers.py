"""What a request nobody signed in for can learn: "up" or "down", and how to sign in; never a database's name, host,
role, the config file's path or the driver's words, in any of the three sign-in modes. And it opens no pool.

Two databases: ``wdown`` (first, so the plain /readyz asks it) behind a unix socket nothing listens on, and
``walpha``, the test database. Every name, the role and the socket's folder carry ``zqsecret``, which no stranger's
answer may hold.
"""

from __future__ import annotations

import pytest
from psycopg.conninfo import make_conninfo

from tests.test_auth import OPERATOR_HEADERS, _fast_hash, basic
from tests.test_databases import write_config

SECRET = "zqsecret"
STRANGER_PATHS = [
    "/db/zqsecretgamma/keys",
    "/api/v1/db/zqsecretgamma/overview",
    "/db/zqsecretgamma/readyz",
    "/db/walpha/readyz",
    "/db/wdown/readyz",
    "/api/v1/db/wdown/overview",
    "/db/orders/zqsecretgamma/keys",
    "/no-such-page",
    "/static/no-such-file.css",
]


@pytest.fixture
def two_databases(tmp_path, database_url):
    socket_dir = tmp_path / "zqsecretsock"
    socket_dir.mkdir()
    down = make_conninfo(host=str(socket_dir), dbname="zqsecretdown", user="zqsecretrole")
    config = write_config(tmp_path / "zqsecretconfig.toml", {"wdown": {"url": down}, "walpha": {"url": database_url}})
    users = tmp_path / "users"
    users.write_text(f"alice:operator:{_fast_hash('alice-pw')}\n", encoding="utf-8")
    return {"CONFIG": config, "USERS_FILE": str(users), "POOL_TIMEOUT_SECONDS": 1}


# how a stranger asks, and how someone signed in asks, in each mode
MODES = {
    "none": ({"environ_base": {"REMOTE_ADDR": "10.1.2.3"}, "headers": {"Host": "dash.example"}}, {}),
    "basic": ({}, {"headers": basic("alice", "alice-pw")}),
    "proxy": (
        {"environ_base": {"REMOTE_ADDR": "10.9.8.7"}, "headers": OPERATOR_HEADERS},
        {"headers": OPERATOR_HEADERS},
    ),
}


def _open_pools(app) -> list[str]:
    return [name for name, target in app.extensions["idemdash_targets"].items() if target.pool_is_open()]


@pytest.mark.system  # two seconds: the pool of the database that is down waits out its timeout
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_stranger_learns_up_or_down_and_nothing_more(make_app, two_databases, mode):
    app = make_app(AUTH=mode, **two_databases)
    stranger, member = MODES[mode]
    client = app.test_client()
    for path in STRANGER_PATHS:
        for kind in ({}, {"HX-Request": "true"}):
            headers = {**stranger.get("headers", {}), **kind}
            answer = client.get(path, environ_base=stranger.get("environ_base", {}), headers=headers)
            text = answer.get_data(as_text=True)
            assert answer.status_code in (401, 403, 404), (path, answer.status_code, text[:300])
            assert SECRET not in text.lower() and "walpha" not in text and "wdown" not in text, (path, text)
    # an unknown name (and a known one) asked by a stranger opened no pool, not even the probes' twins
    assert _open_pools(app) == []

    # /readyz, the one probe of a database that answers strangers: down, and nothing more
    ready = client.get("/readyz", **stranger)
    assert ready.status_code == 503 and ready.get_json() == {"status": "unavailable"}

    # someone signed in keeps the helpful answers
    unknown = client.get("/api/v1/db/zqsecretgamma/overview", **member)
    assert unknown.status_code == 404 and "wdown, walpha" in unknown.get_json()["error"]
    down = client.get("/db/wdown/readyz", **member)
    assert down.status_code == 503 and "zqsecretsock" in down.get_json()["error"], down.get_json()
    assert client.get("/db/walpha/readyz", **member).get_json() == {"status": "ok"}
    page = client.get("/db/zqsecretgamma/keys", **member).get_data(as_text=True)
    assert "no database &#39;zqsecretgamma&#39; here" in page and "walpha" in page
