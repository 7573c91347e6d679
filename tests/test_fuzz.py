"""Fuzz every JSON endpoint and every page: the documented query parameters from the OpenAPI description, and
query parameters of any name at all. Zero 5xx."""

from __future__ import annotations

import random
import re
from urllib.parse import quote, urlencode

import psycopg
import psycopg_pool.base
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idemdash.dashboard import create_app
from idemdash.dashboard.openapi import build
from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key, complete_key

pytestmark = [
    pytest.mark.system,  # Hypothesis over every route: a slow property, so the fast loop leaves it to the full run
    # the app's connection pools draw from the random module in their own threads (a connection's jittered
    # lifetime), which can fall while Hypothesis draws an example; the strategies themselves use none
    pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies"),
]

OUTBOX_ID = "6b0e4c55-0d1f-4c43-9d8a-2f2a4a8d1e01"


@pytest.fixture(autouse=True)
def _pool_jitter_off_the_global_random(monkeypatch):
    """psycopg_pool draws its reconnect and lifetime jitter from the global ``random``, sometimes on its own
    threads while Hypothesis is generating an example; Hypothesis then reports a flaky strategy
    (FlakyStrategyDefinition). The pools get a Random of their own here."""
    monkeypatch.setattr(psycopg_pool.base, "random", random.Random(20).random)


FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
nasty = st.sampled_from(
    [
        "",
        " ",
        "0",
        "-1",
        "1e9",
        "9" * 30,
        "null",
        "%",
        "%00",
        "\x00",
        "../..",
        "<script>",
        "'; DROP TABLE x; --",
        "2026-11-21T04:00:00",
        "ünï",
        "a/b",
        "true",
        "[]",
        "{}",
    ]
)


def _value(schema: dict):
    options = [text, nasty]
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if schema.get("type") == "integer":
        options.append(st.integers(min_value=-(10**12), max_value=10**12).map(str))
    return st.one_of(*options)


def _query(parameters: list[dict]):
    query_params = [p for p in parameters if p["in"] == "query"]
    return st.fixed_dictionaries({}, optional={p["name"]: _value(p["schema"]) for p in query_params})


# the document the app serves, made from its routes (no database is asked for it)
SPEC = build(
    create_app({"DATABASE_URL": "postgresql://localhost/unused", "RUN_JOBS": False, "SECRET_KEY": "fuzz"}, testing=True)
)


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _body_properties(path: str) -> dict:
    """The fields a body may carry: every variant's, for a body told apart by one field (reclassify's ``to``)."""
    schema = _resolve(SPEC["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"])
    variants = [_resolve(v) for v in schema.get("oneOf", [schema])]
    return {name: prop for v in variants for name, prop in v.get("properties", {}).items()}


GET_PATHS = sorted(p for p, ops in SPEC["paths"].items() if "get" in ops)
POST_PATHS = sorted(p for p, ops in SPEC["paths"].items() if "post" in ops)
# the HTML page behind each JSON twin takes the same query parameters
PAGES = {
    "/api/v1/overview": "/",
    "/api/v1/keys/breakdown": "/keys",
    "/api/v1/health/schema": "/health",
    "/api/v1/openapi.json": "/api/v1/openapi.json",
}


@pytest.fixture(scope="module")
def seeded_url(shared_database_url):
    """The GET fuzzing only reads (every read is a READ ONLY transaction): one seeded database for the module."""
    with psycopg.connect(shared_database_url, autocommit=True) as conn:
        _seed(conn)
    return shared_database_url


@pytest.fixture
def reader(make_app, seeded_url):
    return make_app(seeded_url).test_client()


@pytest.fixture
def seeded(conn):
    _seed(conn)


def _seed(conn) -> None:
    tables = Tables()
    for i in range(5):
        claim_key(conn, tables, "create_order", f"k{i}/x", "h", "api-1", lock_seconds=0)
    claim_key(conn, tables, "refund", "done", "h", "api-2")
    complete_key(conn, tables, "refund", "done", "r", None, {"ok": True}, 1)
    conn.execute(
        """INSERT INTO app.outbox_event (outbox_id, event_type, aggregate_type, aggregate_id,
                        idempotency_scope, idempotency_key, payload)
                    VALUES (%s, 'e', 'a', gen_random_uuid(), 'create_order', 'k0/x', '{}')""",
        (OUTBOX_ID,),
    )
    conn.execute("""INSERT INTO app.processed_message (consumer_name, message_id, message_hash)
                    VALUES ('billing', 'm1', 'h')""")


def _concrete(path: str, scope: str, key: str) -> str:
    """The path with its variables filled in; a key may carry '/', an outbox_id is a UUID or (to be refused) text."""
    outbox_id = OUTBOX_ID if scope == "create_order" else quote(scope, safe="")
    return (
        path.replace("{scope}", quote(scope, safe=""))
        .replace("{key}", quote(key, safe="/"))
        .replace("{outbox_id}", outbox_id)
    )


def _urls(path: str, query: dict, scope: str, key: str) -> list[str]:
    concrete = _concrete(path, scope, key)
    qs = ("?" + urlencode(query)) if query else ""
    urls = [concrete + qs]
    page = PAGES.get(path, path.replace("/api/v1", "", 1))
    urls.append(_concrete(page, scope, key) + qs)
    return urls


@pytest.mark.parametrize("path", GET_PATHS)
def test_get_endpoints_and_their_pages_never_answer_5xx(reader, path):
    client = reader
    parameters = SPEC["paths"][path]["get"]["parameters"]

    @FUZZ
    @given(
        query=_query(parameters),
        scope=st.one_of(st.just("create_order"), text.filter(bool)),
        key=st.one_of(st.just("k0/x"), text.filter(bool)),
    )
    def run(query, scope, key):
        for url in _urls(path, query, scope, key):
            response = client.get(url)
            assert response.status_code < 500, (url, response.status_code, response.get_data(as_text=True)[:300])

    run()


# Every GET route of the app, path variables as {name}: the JSON twins, their pages, and the routes without a twin.
OTHER_GET_ROUTES = [
    "/runbook",
    "/runbook/stuck-keys",
    "/runbook/outbox-backlog",
    "/healthz",
    "/readyz",
    "/metrics",
    "/api/v1/openapi.json",
]
ROUTES = sorted({*GET_PATHS, *(PAGES.get(p, p.replace("/api/v1", "", 1)) for p in GET_PATHS), *OTHER_GET_ROUTES})
# Names that once broke URL building (url_for's own arguments, the path's variables) or look like other syntaxes
NAMES = [
    "scope",
    "key",
    "endpoint",
    "_anchor",
    "_external",
    "_method",
    "_scheme",
    "values",
    "cursor",
    "limit",
    "status",
    "a[b]",
    "a[]",
    "filter[scope]",
    "ünï",
    "名前",
    "",
    " ",
    "%",
    "%00",
    "\x00",
    "&",
    "=",
    "?",
    "#",
    "a.b",
    "__class__",
]


def _documented(route: str) -> list[str]:
    api = next(
        (p for p, page in PAGES.items() if page == route), route if route.startswith("/api/") else "/api/v1" + route
    )
    return [p["name"] for p in SPEC["paths"].get(api, {}).get("get", {}).get("parameters", [])]


def test_the_fuzzed_routes_are_every_get_route(client):
    rules = {
        re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        for rule in client.application.url_map.iter_rules()
        if "GET" in rule.methods and rule.endpoint != "static"
    }
    assert rules == set(ROUTES)


@pytest.mark.parametrize("route", ROUTES)
def test_query_parameters_of_any_name_never_answer_5xx(reader, route):
    client = reader
    names = st.one_of(st.sampled_from(NAMES + _documented(route)), text)
    values = st.one_of(st.just(""), nasty, text)

    @settings(FUZZ, max_examples=25)
    @given(
        pairs=st.lists(st.tuples(names, values), max_size=5),
        htmx=st.booleans(),
        scope=st.one_of(st.just("create_order"), text.filter(bool)),
        key=st.one_of(st.just("k0/x"), text.filter(bool)),
    )
    def run(pairs, htmx, scope, key):
        path = _concrete(route, scope, key)
        url = path + ("?" + urlencode(pairs) if pairs else "")
        headers = {"HX-Request": "true"} if htmx else {}
        response = client.get(url, headers=headers)
        assert response.status_code < 500, (url, response.status_code, response.get_data(as_text=True)[:300])
        if response.status_code in (301, 302, 303, 307, 308):  # the clean URL an empty field redirects to
            location = response.headers["Location"]
            followed = client.get(location, headers=headers)
            assert followed.status_code < 500, (url, location, followed.get_data(as_text=True)[:300])
        if "HX-Push-Url" in response.headers:
            pushed = client.get(response.headers["HX-Push-Url"])
            assert pushed.status_code < 500, (url, response.headers["HX-Push-Url"])

    run()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("path", POST_PATHS)
def test_post_endpoints_never_answer_5xx(client, seeded, path):
    properties = _body_properties(path)
    shaped = st.fixed_dictionaries(
        {}, optional={name: st.one_of(json_values, _value(schema)) for name, schema in properties.items()}
    )

    @FUZZ
    @given(body=st.one_of(shaped, json_values))
    def run(body):
        response = client.post(path, json=body)
        assert response.status_code < 500, (body, response.status_code, response.get_data(as_text=True)[:300])

    run()


def test_the_description_is_served(client):
    body = client.get("/api/v1/openapi.json").get_json()
    assert body["openapi"].startswith("3.") and "/api/v1/keys/reclassify" in body["paths"]
