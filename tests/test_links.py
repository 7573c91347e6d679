"""The links a page builds are kept for the next requests (dashboard/links.py), per place the app is mounted and per
database: a link that depends on the request (where the app is mounted, which database) changes with it."""

from __future__ import annotations

import flask
from bs4 import BeautifulSoup

from idemdash.dashboard import links


def test_a_link_kept_under_one_mount_is_not_the_link_under_another(make_app, shared_database_url):
    client = make_app(shared_database_url).test_client()
    for mount in ("/one", "/two", "/one"):  # the same page under another script root: every link with it
        page = client.get("/keys?status=stuck", base_url=f"http://localhost{mount}")
        assert page.status_code == 200
        html = BeautifulSoup(page.data, "html.parser")
        hrefs = [a["href"] for a in html.select("a[href^='/']")]
        assert hrefs and all(href.startswith(f"{mount}/") for href in hrefs), (mount, hrefs[:5])
        assert html.select_one("form#filters")["action"] == f"{mount}/keys"


def test_a_link_kept_in_one_database_is_not_the_link_in_another(make_app, shared_database_url, tmp_path):
    config = tmp_path / "databases.toml"
    config.write_text("".join(f'[databases.{name}]\nurl = "{shared_database_url}"\n' for name in ("alpha", "beta")))
    client = make_app(shared_database_url, CONFIG=str(config)).test_client()
    for prefix in ("/db/alpha", "/db/beta", "", "/db/alpha"):
        page = client.get(f"{prefix}/keys?status=stuck")
        assert page.status_code == 200
        html = BeautifulSoup(page.data, "html.parser")
        assert html.select_one("form#filters")["action"] == f"{prefix}/keys"
        tabs = [a["href"] for a in html.select("nav.tabs a")]
        assert tabs and all(href.startswith(f"{prefix}/keys?") for href in tabs), (prefix, tabs[:5])


def test_a_kept_link_is_the_one_flask_builds(make_app, shared_database_url):
    app = make_app(shared_database_url)
    with app.test_request_context("/keys?status=stuck"):
        for values in (
            {"status": "stuck", "scope": "a b/c"},
            {"status": "stuck", "scope": "a b/c"},  # the kept one
            {"status": "stuck", "min_attempts": 1},
            {"status": "stuck", "min_attempts": True},  # equal to 1 as a dict key, written otherwise
            {"status": "stuck", "scope": ["x", "y"]},  # a value that cannot be kept: built every time
        ):
            assert links.url_for("keys.list_page", **values) == flask.url_for("keys.list_page", **values)
        assert links.url_for("keys.list_page", min_attempts=True) != links.url_for("keys.list_page", min_attempts=1)
        assert links.key_url("s", "a/../b") == flask.url_for("keys.detail_page_by_query", scope="s", key="a/../b")


NASTY = ["plain", "a b", "a/b", "a//b/", "100%", "?q=1#frag", "ünï/cødé", "a;b=c@d", "'\"<>", "idemdash-key-stand-in"]


def test_a_key_link_is_the_one_flask_builds_whatever_the_key(make_app, shared_database_url):
    app = make_app(shared_database_url)
    with app.test_request_context("/keys?status=stuck", base_url="http://localhost/mounted here"):
        for scope in ("create_order", "a b", "idemdash-scope-stand-in", "ü;@"):
            for key in NASTY:
                for api in (False, True):
                    endpoint = "keys.detail_api" if api else "keys.detail_page"
                    assert links.key_url(scope, key, api=api) == flask.url_for(endpoint, scope=scope, key=key)
                    assert links.key_url(scope, key, done=3) == flask.url_for(
                        "keys.detail_page", scope=scope, key=key, done=3
                    )
