"""docs/api.md against the generated document: the prose may not drift from the contract. Each route's section
names every query parameter the route takes and no other, and every field name it shows (in a JSON example or a
`{"a", "b"}` shape) is a field of that route's body or answers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from idemdash.dashboard import create_app, openapi

DOC = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
SPEC = openapi.build(
    create_app({"DATABASE_URL": "postgresql://localhost/unused", "RUN_JOBS": False, "SECRET_KEY": "docs"}, testing=True)
)
# a route's section: its own heading (## `GET /api/v1/x` ...) or its bullet under "Other read endpoints"
HEADING = re.compile(r"^## (.*)$", re.M)
BULLET = re.compile(r"^- (`(?:GET|POST) /api/v1/[^`]*`.*?)(?=^- |^\S|\Z)", re.M | re.S)


def _doc_path(raw: str) -> str:
    """/api/v1/keys/<scope>/<key>?a=&b= as the document's path template, /api/v1/keys/{scope}/{key}."""
    return re.sub(r"<([a-z_]+)>", r"{\1}", raw.split("?", 1)[0])


def _sections() -> dict[tuple[str, str], str]:
    sections: dict[tuple[str, str], str] = {}
    parts = HEADING.split(DOC)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        for method, raw in re.findall(r"`(GET|POST) (/api/v1/[^`\s]*)`", title):
            sections[(_doc_path(raw), method.lower())] = title + "\n" + body
    for bullet in BULLET.findall(DOC):
        method, raw = re.match(r"`(GET|POST) (/api/v1/[^`\s]*)`", bullet).groups()
        sections[(_doc_path(raw), method.lower())] = bullet
    return sections


SECTIONS = _sections()
OPERATIONS = {
    (path, method): op
    for path, ops in SPEC["paths"].items()
    if "/db/{database}/" not in path and not path.endswith("openapi.json")
    for method, op in ops.items()
}


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _field_names(schema: dict, seen: set[int] | None = None) -> set[str]:
    """Every property name anywhere in a schema (nested objects, arrays, unions)."""
    seen = seen if seen is not None else set()
    schema = _resolve(schema)
    if id(schema) in seen:
        return set()
    seen.add(id(schema))
    # an object's fields, and the names a dict's keys may take (the key list's counts per state)
    names = set(schema.get("properties", {})) | set((schema.get("propertyNames") or {}).get("enum", []))
    for child in [
        *schema.get("properties", {}).values(),
        *schema.get("anyOf", []),
        *schema.get("oneOf", []),
        *schema.get("allOf", []),
        schema.get("items"),
        schema.get("additionalProperties"),
        schema.get("propertyNames"),
    ]:
        if isinstance(child, dict) and child:
            names |= _field_names(child, seen)
    return names


def _schemas_of(op: dict) -> list[dict]:
    found = []
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        found.append(body)
    for answer in op["responses"].values():
        if "$ref" in answer:
            answer = SPEC["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
        if "content" in answer:  # the server's own 414 has no body of ours
            found.append(answer["content"]["application/json"]["schema"])
    return found


def test_every_operation_has_a_section():
    assert set(OPERATIONS) <= set(SECTIONS), sorted(set(OPERATIONS) - set(SECTIONS))


@pytest.mark.parametrize("route", sorted(OPERATIONS), ids=lambda r: f"{r[1].upper()} {r[0]}")
def test_the_section_names_every_query_parameter(route):
    section = SECTIONS[route]
    params = {p["name"] for p in OPERATIONS[route]["parameters"] if p["in"] == "query"}
    missing = {name for name in params if not re.search(rf"`{name}[`=]|[?&]{name}=", section)}
    assert not missing, f"docs/api.md does not name {sorted(missing)} for {route}"
    # a query string written out with the route's own path in its title or bullet names only its parameters
    path, method = route
    written = set()
    for raw in re.findall(rf"`{method.upper()} (/api/v1/[^`\s]*)`", section.splitlines()[0]):
        if _doc_path(raw) == path and "?" in raw:
            written |= set(re.findall(r"[?&]([a-z_]+)=", raw))
    assert written <= params, f"docs/api.md lists {sorted(written - params)} for {route}, which it does not take"


@pytest.mark.parametrize("route", sorted(OPERATIONS), ids=lambda r: f"{r[1].upper()} {r[0]}")
def test_every_field_the_section_shows_is_a_field_of_the_route(route):
    section = SECTIONS[route]
    known = set().union(*(_field_names(s) for s in _schemas_of(OPERATIONS[route])))
    shown = set()
    for block in re.findall(r"```json\n(.*?)```", section, re.S):
        shown |= set(re.findall(r'"([a-z_][a-z0-9_]*)"\s*:', block))
    for shape in re.findall(r"`(\{[^`]*\})`", section):  # {"a", "b": [{"c"}]}: names, not the values after ':'
        shown |= set(re.findall(r'(?<![:|] )"([a-z_][a-z0-9_]*)"', shape))
    unknown = shown - known
    assert not unknown, f"docs/api.md shows {sorted(unknown)} for {route}, which are not in its schemas"
