"""The JSON API's contract: the document is generated, valid OpenAPI 3.1, complete (every /api route, the
per-database twins too, every answer with a real schema), and the HTTP rules hold the same on every operation:
an empty or repeated query parameter is a 400 naming it, an unknown body field is a 400, a body that is not JSON
is a 415, a 405 says what is allowed."""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from idemdash.dashboard import contract, create_app, openapi

TWO_DATABASES = """
[databases.orders]
url = "postgresql://localhost/unused_orders"

[databases.billing]
url = "postgresql://localhost/unused_billing"
"""


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("openapi") / "databases.toml"
    path.write_text(TWO_DATABASES)
    return str(path)


@pytest.fixture(scope="module")
def document(config_file):
    app = create_app({"CONFIG": config_file, "RUN_JOBS": False, "SECRET_KEY": "x"}, testing=True)
    return app, openapi.build(app)


@pytest.mark.system  # over a second: the full OpenAPI 3.1 schema validation
def test_the_document_is_valid_openapi_3_1(document):
    _, spec = document
    validate(spec)  # openapi-spec-validator: raises on any error
    assert spec["openapi"] == "3.1.0"


def test_every_api_route_is_documented_with_each_method_and_the_database_twins(document):
    app, spec = document
    routes = {
        (re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule), method.lower())
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/api/")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    documented = {(path, method) for path, ops in spec["paths"].items() for method in ops}
    assert routes == documented
    assert ("/api/v1/db/{database}/keys/reclassify", "post") in documented
    twin = spec["paths"]["/api/v1/db/{database}/keys"]["get"]["parameters"][0]
    assert twin["name"] == "database" and twin["schema"]["enum"] == ["orders", "billing"]


def test_every_answer_has_a_schema_that_describes_it(document):
    _, spec = document
    schemas = spec["components"]["schemas"]
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            ok = [status for status in op["responses"] if status.startswith("2")]
            assert len(ok) == 1, (path, method)
            answer = op["responses"][ok[0]]["content"]["application/json"]["schema"]
            # one model, or one of several (the profile-shaped answer of another library's database)
            for ref in [a["$ref"] for a in answer["anyOf"]] if "anyOf" in answer else [answer["$ref"]]:
                target = schemas[ref.rsplit("/", 1)[1]]
                assert target.get("properties") or target.get("anyOf") or target.get("oneOf"), (path, method, target)
            assert "400" in op["responses"] and "503" in op["responses"] or path.endswith("openapi.json")


def test_every_example_in_the_document_validates_against_its_schema(document):
    _, spec = document
    seen = 0
    for name, schema in spec["components"]["schemas"].items():
        validator = Draft202012Validator({**schema, "components": spec["components"]})
        for example in schema.get("examples", []):
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, (name, example, errors)
            seen += 1
    assert seen >= 1
    missing = sorted(
        {
            f"{method.upper()} {path}: {name}"
            for path, method, _status, name in _answers(spec)
            if not spec["components"]["schemas"][name].get("examples")
        }
    )
    assert not missing, "answers without an example: " + "; ".join(missing)


def test_every_answer_example_is_what_its_model_writes(document):
    """The JSON Schema allows fields it does not name: each example goes through its model and is written back by
    the app as an answer is, unchanged, so a misspelt or missing field, or a value of the wrong kind, shows."""
    app, spec = document
    seen = set()
    for rule in app.url_map.iter_rules():
        op = contract.operation_of(app.view_functions[rule.endpoint])
        for model in (op.ok, op.conflict, *op.also) if op else ():
            if model is None or model in seen:
                continue
            seen.add(model)
            [example] = model.model_json_schema()["examples"]
            answer = model.model_validate(example).model_dump(mode="python", by_alias=True, exclude_unset=True)
            assert json.loads(app.json.dumps(answer)) == example, model.__name__
    assert len(seen) >= 20


def _answers(spec):
    """Every operation's success answer and its documented 409 body: (path, method, status, schema name)."""
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for status, response in op["responses"].items():
                if status.startswith("2") or (status == "409" and "content" in response):
                    answer = response["content"]["application/json"]["schema"]
                    for ref in [a["$ref"] for a in answer["anyOf"]] if "anyOf" in answer else [answer["$ref"]]:
                        yield path, method, status, ref.rsplit("/", 1)[1]


def _raw_constraints(node, where="#"):
    """Where a schema carries pydantic's constraint words (ge, le, gt, lt) as keys instead of JSON Schema's."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _raw_constraints(item, f"{where}/{i}")
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("ge", "le", "gt", "lt"):
                yield f"{where}/{key}"
            if key in ("properties", "patternProperties", "$defs", "schemas", "paths", "responses"):
                # a map of names (a field may be called le): its values are the schemas
                for name, child in value.items():
                    yield from _raw_constraints(child, f"{where}/{key}/{name}")
            elif key not in ("examples", "example", "default", "const", "enum"):
                yield from _raw_constraints(value, f"{where}/{key}")


def test_no_schema_carries_pydantics_own_constraint_words(document):
    _, spec = document
    assert list(_answers(spec))
    assert not list(_raw_constraints(spec)), "minimum/maximum, not ge/le: put a BeforeValidator after Field(...)"
    assert list(_raw_constraints({"properties": {"limit": {"type": "integer", "ge": 1}}})) == ["#/properties/limit/ge"]


def test_the_document_is_served_and_matches_the_build(client):
    served = client.get("/api/v1/openapi.json")
    assert served.status_code == 200
    assert served.get_json() == openapi.build(client.application)


@pytest.mark.parametrize(
    "url, name",
    [
        ("/api/v1/keys?status=", "status"),
        ("/api/v1/keys?scope=", "scope"),
        ("/api/v1/key?scope=&key=abc", "scope"),
    ],
)
def test_an_empty_query_value_is_a_400_naming_it(client, url, name):
    response = client.get(url)
    assert response.status_code == 400
    assert response.get_json()["error"] == f"{name} is empty: leave it out, or give a value"


def test_a_repeated_parameter_is_a_400_on_the_api_and_the_first_value_on_the_page(client):
    response = client.get("/api/v1/keys?status=stuck&status=succeeded")
    assert response.status_code == 400 and "status is given 2 times" in response.get_json()["error"]
    assert client.get("/keys?status=stuck&status=succeeded").status_code == 200


def test_a_nul_in_a_query_value_names_the_parameter(client):
    response = client.get("/api/v1/key?scope=create_order&key=a%00b")
    assert response.status_code == 400
    [error] = response.get_json()["fields"]
    assert error["field"] == "key" and error["message"].startswith("must not contain a NUL character")


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/v1/keys/reclassify", {"scope": "s", "key": "k", "to": "safe_to_retry", "reason": "r", "typo": 1}),
        ("/api/v1/keys/reclassify-bulk", {"to": "abandoned", "preview": True, "typo": 1}),
        ("/api/v1/keys/notes", {"scope": "s", "key": "k", "text": "t", "typo": 1}),
    ],
)
def test_an_unknown_body_field_is_refused_everywhere(client, path, body):
    response = client.post(path, json=body)
    assert response.status_code == 400
    assert {"field": "typo", "message": "is not a field of this request (a typo?)"} in response.get_json()["fields"]


def test_a_body_that_is_not_json_is_a_415(client):
    response = client.post(
        "/api/v1/keys/notes", data="scope=s&key=k&text=t", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415


@pytest.mark.parametrize(
    "method, url, allowed",
    [
        ("delete", "/api/v1/keys", "GET, HEAD, OPTIONS"),
        ("get", "/api/v1/keys/reclassify", "OPTIONS, POST"),
        ("put", "/keys", "GET, HEAD, OPTIONS"),
    ],
)
def test_a_405_says_what_is_allowed(client, method, url, allowed):
    response = getattr(client, method)(url)
    assert response.status_code == 405
    assert response.headers["Allow"] == allowed


def test_what_the_document_allows_in_a_query_the_server_takes(document, client):
    """A cursor is never empty (the server refuses `cursor=`, so the document says minLength 1), and a duration is at
    most 64 characters in both."""
    _, built = document
    cursors = [
        p
        for path in built["paths"].values()
        for op in path.values()
        if isinstance(op, dict)
        for p in op.get("parameters", ())
        if p["name"] == "cursor"
    ]
    assert len(cursors) > 5 and all(p["schema"].get("minLength") == 1 for p in cursors), cursors[:2]
    assert client.get("/api/v1/audit?cursor=").status_code == 400
    overdue = next(
        p
        for path in built["paths"].values()
        for op in path.values()
        if isinstance(op, dict)
        for p in op.get("parameters", ())
        if p["name"] == "overdue"
    )
    assert overdue["schema"]["maxLength"] == 64
