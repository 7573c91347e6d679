"""`GET /api/v1/openapi.json`: the JSON API as OpenAPI 3.1, made from the app's routes and the models each
operation declares (dashboard/contract.py, dashboard/schemas/): every route under /api (the per-database
twins included), every parameter, body and answer with its schema, and every error with the error body.
Nothing here is written by hand but the words."""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Flask, current_app, jsonify
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from werkzeug.routing import Rule

from idemdash import __version__
from idemdash.dashboard import contract
from idemdash.dashboard.schemas.common import Answer, Error
from idemdash.dashboard.tables import serves_every_profile

bp = Blueprint("openapi", __name__)

REF = "#/components/schemas/{model}"
# the error answers, by status: what each means (docs/api.md, Errors)
ERRORS = {
    400: ("BadInput", "Bad input: the message says what to send (fields: each field in error)"),
    401: ("NotSignedIn", "Not signed in (IDEMDASH_AUTH=basic or proxy)"),
    403: (
        "Forbidden",
        "Not allowed: a viewer, read-only mode, a cross-origin request, another host with "
        "IDEMDASH_AUTH=none, or a database privilege idemdash's role lacks",
    ),
    404: (
        "NotFound",
        "No such key, outbox row, purge run or database; or a route of idemdash's reference tables "
        "asked of a database that holds another library's (its profile: see /api/v1/tables)",
    ),
    409: ("Conflict", "The state changed: nothing was overwritten (the answer carries the row as it is now)"),
    415: ("NotJson", "The body must be application/json"),
    429: (
        "TooManySignIns",
        "Too many failed sign-ins from this address or for this user name (IDEMDASH_AUTH=basic): "
        "try again after Retry-After seconds",
    ),
    503: (
        "Unavailable",
        "The database is unreachable (Retry-After), cannot be used as configured, or a query "
        "ran past the statement timeout (the message names the index that would help)",
    ),
}
DESCRIPTION = (
    "Every page's JSON twin, and the operator actions. Times are ISO 8601 with a zone. Lists are "
    "{items, next_cursor}. Errors are {error} with a 4xx or 503 status.\n\n"
    "Input: a query parameter given twice or empty is a 400 naming it; a body must be application/json, an "
    "object of the documented fields only. Formats of our own: `idemdash-cursor` is a next_cursor or "
    "prev_cursor of the same list, unchanged; `idemdash-hold` is a duration (the pattern's syntax) between 60 "
    "seconds and 30 days.\n\n"
    "Compatibility: within /api/v1 changes are additive only (a new route, parameter or answer field). A field "
    "or route that must go is first marked `deprecated` here and answered with a `Deprecation` header, for at "
    "least one minor release, before a /api/v2 drops it."
)


class Document(Answer):
    """This document (OpenAPI 3.1)."""

    model_config = Answer.model_config | {
        "extra": "allow",
        "json_schema_extra": {
            "examples": [
                {
                    "openapi": "3.1.0",
                    "info": {"title": "idemdash JSON API", "version": __version__},
                    "paths": {
                        "/api/v1/overview": {
                            "get": {
                                "operationId": "get_overview_api",
                                "summary": "The overview's headline numbers",
                                "responses": {"200": {"description": "OK"}},
                            }
                        }
                    },
                }
            ]
        },
    }
    openapi: str


def _path(app: Flask, rule: Rule) -> tuple[str, list[dict[str, Any]]]:
    """The OpenAPI path of a route ({name} for <converter:name>) and its path parameters."""
    params = []
    for converter, _args, name in _parts(rule):
        schema: dict[str, Any] = {"type": "string", "minLength": 1}
        if converter == "int":
            schema = {"type": "integer", "minimum": 0}
        elif converter == "uuid":
            schema = {"type": "string", "format": "uuid"}
        elif name == "database":  # the databases served now (a fleet member's name has one '/')
            served = list(app.extensions["idemdash_targets"])
            schema = {"type": "string", "enum": served} if served else schema
        elif converter != "path":
            schema["pattern"] = "^[^/]+$"
        if name in PATH_EXAMPLES:
            schema["examples"] = [PATH_EXAMPLES[name]]
        elif name == "database" and "enum" in schema:
            schema["examples"] = schema["enum"][:1]
        params.append(
            {"name": name, "in": "path", "required": True, "schema": schema, "description": PATH_WORDS.get(name, name)}
        )
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule), params


PATH_WORDS = {
    "database": "A database's name, as IDEMDASH_CONFIG lists it.",
    "scope": "Idempotency scope.",
    "key": "Idempotency key (it may contain '/').",
    "outbox_id": "The row's outbox_id.",
    "run_id": "The purge run's run_id.",
    "role": "A table of the database's profile, by what it is for (keys, inbox, outbox, or the library's "
    "own: outbox_state, archive, dead_letters, nodes); /api/v1/tables lists them.",
}


# an example of each path variable: a key of the demo's and the tests' seeded data
PATH_EXAMPLES: dict[str, Any] = {
    "scope": "create_order",
    "key": "cart/0/checkout-0000",
    "outbox_id": "6b0e4c55-0d1f-4c43-9d8a-2f2a4a8d1e01",
    "run_id": 1,
    "role": "outbox",
}


def _parts(rule: Rule) -> list[tuple[str, str, str]]:
    return [(m.group(1) or "default", "", m.group(2)) for m in re.finditer(r"<(?:([a-z]+):)?([a-z_]+)>", rule.rule)]


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=REF)
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        prop.pop("title", None)
        options = prop.pop("anyOf", None)
        if options is not None:  # ``X | None``: absent is None, so the parameter is X
            kept = [o for o in options if o.get("type") != "null"]
            prop = {**(kept[0] if len(kept) == 1 else {"anyOf": kept}), **prop}
        if prop.get("default") is None:
            prop.pop("default", None)
        description = prop.pop("description", None)
        param = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            param["description"] = description
        params.append(param)
    return params


def _answer(op: contract.Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    """The answer's schema: its model's, or one of its models' where it has other shapes (``also``)."""
    if not op.also:
        return refs[(op.ok, "serialization")]
    return {"anyOf": [refs[(model, "serialization")] for model in (op.ok, *op.also)]}


def _content(ref: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": ref}}


def build(app: Flask, *, strict: bool = True) -> dict[str, Any]:
    """The document of ``app``'s routes under /api. Every one must declare its operation (LookupError otherwise);
    ``strict=False`` leaves out those that do not (a test's own route)."""
    operations = []
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        if not rule.rule.startswith("/api/"):
            continue
        op = contract.operation_of(app.view_functions[rule.endpoint])
        if op is None and not strict:
            continue
        if op is None:
            raise LookupError(f"{rule.rule} ({rule.endpoint}) declares no operation (dashboard/contract.py)")
        operations.append((rule, op))
    models: list[tuple[type[BaseModel], Any]] = [(Error, "serialization")]
    for _rule, op in operations:
        models.append((op.ok, "serialization"))
        models.extend((model, "serialization") for model in op.also)
        if op.body is not None:
            models.append((op.body, "validation"))
        if op.conflict is not None:
            models.append((op.conflict, "serialization"))
    refs, definitions = models_json_schema(list(dict.fromkeys(models)), ref_template=REF)
    paths: dict[str, dict[str, Any]] = {}
    for rule, op in operations:
        path, path_params = _path(app, rule)
        # a route's per-database rule (dashboard/databases.py) shares its endpoint: its operation is <id>_db
        name = rule.endpoint.replace(".", "_") + ("_db" if "database" in rule.arguments else "")
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            entry: dict[str, Any] = {
                "operationId": f"{method.lower()}_{name}",
                "summary": op.summary,
                "parameters": path_params + (_query_parameters(op.query) if op.query else []),
                "responses": {
                    str(op.status): {"description": op.ok.__doc__ or "OK", "content": _content(_answer(op, refs))}
                },
            }
            if op.description:
                entry["description"] = op.description
            if op.deprecated:
                entry["deprecated"] = True
            if op.body is not None:
                entry["requestBody"] = {"required": True, "content": _content(refs[(op.body, "validation")])}
            # a database the path names that this dashboard does not serve, or a route of the reference tables on a
            # database of another library's profile (dashboard/tables.py): 404
            reference_only = not serves_every_profile(rule.endpoint)
            errors = (
                (*op.errors, 404) if ("{database}" in path or reference_only) and 404 not in op.errors else op.errors
            )
            errors = (*errors, 429)  # any request may be signed in by a throttled address or name (basic)
            if method == "GET" and entry["parameters"]:
                # a request line longer than the server takes (gunicorn's limit_request_line, 4094 bytes by
                # default) is refused by the server before idemdash sees it, with a body of its own
                entry["responses"]["414"] = {
                    "description": "URI too long: the request line is longer than the "
                    "server takes (a long key: use its page's JSON by path)"
                }
            for status in sorted(errors):
                if status == 409 and op.conflict is not None:
                    entry["responses"]["409"] = {
                        "description": ERRORS[409][1],
                        "content": _content(refs[(op.conflict, "serialization")]),
                    }
                else:
                    entry["responses"][str(status)] = {"$ref": f"#/components/responses/{ERRORS[status][0]}"}
            paths.setdefault(path, {})[method.lower()] = entry
    error_ref = refs[(Error, "serialization")]
    return {
        "openapi": "3.1.0",
        "info": {"title": "idemdash JSON API", "version": __version__, "description": DESCRIPTION},
        "paths": paths,
        "components": {
            "schemas": definitions.get("$defs", {}),
            "responses": {
                name: {"description": words, "content": _content(error_ref)} for name, words in ERRORS.values()
            },
        },
    }


@bp.get("/api/v1/openapi.json")
@contract.operation("This document: the JSON API as OpenAPI 3.1", ok=Document, errors=())
def spec() -> Any:
    app = current_app._get_current_object()  # type: ignore[attr-defined]  # the app, not its proxy
    document = app.extensions.get("idemdash_openapi")
    if document is None:
        document = app.extensions["idemdash_openapi"] = build(app)
    return jsonify(document)
