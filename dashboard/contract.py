"""The JSON API as a contract: each operation names the models of its query, its body and its answers
(dashboard/schemas/), and the same models check what comes in, write what goes out and make
`/api/v1/openapi.json` (dashboard/openapi.py), so the three cannot disagree.

Input rules, the same on every operation:
- a query parameter given twice, or given empty, is a 400 naming it (pages forgive both: a filter form submits
  its empty fields, and the first value wins there);
- a JSON body must be an object of the documented fields: an unknown field is a 400, like a missing or
  malformed one;
- every validation error is today's 400 body, ``{"error": "<field> <what to send>", "fields": [...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from flask import Response, abort, jsonify, request
from pydantic import BaseModel, RootModel, ValidationError

from idemdash.dashboard.schemas.common import PATTERN_MESSAGES
from idemdash.dashboard.web import wants_json

M = TypeVar("M", bound=BaseModel)

# the error statuses every operation may answer with, and those of state-changing ones (docs/api.md, Errors)
READ_ERRORS = (400, 401, 403, 503)
ACTION_ERRORS = (400, 401, 403, 404, 409, 415, 503)


class ActionError(Exception):
    """What an action answers with when it does not act: 400 bad input, 404, 409 the state changed (with the row as
    it is now)."""

    def __init__(
        self, status: int, message: str, key: Any = None, *, fields: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.key = key
        self.fields = fields  # a 400 from a request model: each field and what to send

    def json(self, current: str = "key") -> tuple[Response, int]:
        """The JSON API's answer: ``{"error"}`` with the status, and the row as it is now under ``current``."""
        body: dict[str, Any] = {"error": self.message}
        if self.fields:
            body["fields"] = self.fields
        if self.key is not None:
            body[current] = self.key
        return jsonify(body), self.status


@dataclass(frozen=True)
class Operation:
    summary: str
    ok: type[BaseModel]
    status: int = 200
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    errors: tuple[int, ...] = READ_ERRORS
    description: str | None = None
    deprecated: bool = False
    conflict: type[BaseModel] | None = None  # the 409 body, when it carries the row as it is now
    # the answer's other shapes: a database whose tables are another library's answers a profile-shaped model
    also: tuple[type[BaseModel], ...] = ()


def operation(
    summary: str,
    *,
    ok: type[BaseModel],
    status: int = 200,
    query: type[BaseModel] | None = None,
    body: type[BaseModel] | None = None,
    errors: tuple[int, ...] | None = None,
    description: str | None = None,
    deprecated: bool = False,
    conflict: type[BaseModel] | None = None,
    also: tuple[type[BaseModel], ...] = (),
) -> Callable[[Callable], Callable]:
    """Declare a JSON operation. The view returns an ``ok`` model (or a Response, for an error it answers itself);
    the model is written as the answer with ``status``. ``also``: the answer's other models (the profile-shaped
    answer of a database whose tables are another library's); the document says the answer is one of them."""
    op = Operation(
        summary,
        ok,
        status,
        query,
        body,
        errors if errors is not None else (ACTION_ERRORS if body is not None else READ_ERRORS),
        description,
        deprecated,
        conflict,
        also,
    )

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = view(*args, **kwargs)
            if isinstance(result, BaseModel):
                if not isinstance(result, (op.ok, *op.also)):
                    raise TypeError(f"{view.__name__} answered {type(result).__name__}, not {op.ok.__name__}")
                response = jsonify(result.model_dump(mode="python", by_alias=True))
                response.status_code = op.status
                if op.deprecated:
                    response.headers["Deprecation"] = "true"
                return response
            return result

        wrapper.operation = op  # type: ignore[attr-defined]  # read by dashboard/openapi.py
        return wrapper

    return decorate


def operation_of(view: Callable) -> Operation | None:
    return getattr(view, "operation", None)


# -- input ----------------------------------------------------------------------------------------------------


def query(model: type[M]) -> M:
    """This request's query string as ``model``. The JSON API is strict (a parameter given twice or empty is a
    400); a page takes the first value and treats an empty one as absent, as its filter forms expect."""
    strict = wants_json()
    known = model.model_fields
    values: dict[str, Any] = {}
    for name in request.args:
        given = request.args.getlist(name)
        if name not in known:
            continue  # another page's parameter (done=, noted=) or a cache buster: not this operation's
        if strict and len(given) > 1:
            abort(400, f"{name} is given {len(given)} times: give it once")
        value = given[0]
        if value == "" or (not strict and value.strip() == ""):
            if strict:
                abort(400, f"{name} is empty: leave it out, or give a value")
            continue
        values[name] = value
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        message, fields = _messages(exc, model)
        if strict:
            response = jsonify({"error": message, "fields": fields})
            response.status_code = 400
            abort(response)
        abort(400, message)


def body(model: type[M]) -> M:
    """The request's JSON body as ``model``, read strictly (a number is not a string, true is not 1); ActionError(400)
    naming each field when it is not one."""
    try:
        return model.model_validate_json(request.get_data() or b"null", strict=True)
    except ValidationError as exc:
        if any(
            e["type"] in ("json_invalid", "model_type", "model_attributes_type", "dict_type") and not e["loc"]
            for e in exc.errors()
        ):
            raise ActionError(400, f"send a JSON object with {', '.join(_names(model))}") from None
        message, fields = _messages(exc, model)
        raise ActionError(400, message, fields=fields) from None


def form(model: type[M], data: Mapping[str, Any]) -> M:
    """A form's fields (strings, the page's own conversions done) as ``model``; ActionError(400) as for a body."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        message, fields = _messages(exc, model)
        raise ActionError(400, message, fields=fields) from None


def _names(model: type[BaseModel]) -> list[str]:
    if issubclass(model, RootModel):
        return ["to", "and the fields its outcome needs"]
    return [f.alias or name for name, f in model.model_fields.items()]


# pydantic's error types, said as what to send (the field's name comes first: "limit must be at most 500")
_SAID = {
    "missing": "is required",
    "extra_forbidden": "is not a field of this request (a typo?)",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "uuid_parsing": "must be a UUID",
    "uuid_type": "must be a UUID",
    "datetime_from_date_parsing": "must be an ISO 8601 time with a zone, e.g. 2026-11-21T04:30:00+00:00",
    "datetime_parsing": "must be an ISO 8601 time with a zone, e.g. 2026-11-21T04:30:00+00:00",
    "datetime_type": "must be an ISO 8601 time with a zone, e.g. 2026-11-21T04:30:00+00:00",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
}


def _said(error: Any, model: type[BaseModel]) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    hints: dict[str, str] = getattr(model, "field_hints", {})
    if kind == "extra_forbidden" and str(error["loc"][-1]) in hints:
        return hints[str(error["loc"][-1])]
    if kind in _SAID:
        return _SAID[kind]
    if kind in ("union_tag_invalid", "literal_error"):
        return f"must be one of {ctx.get('expected_tags') or ctx.get('expected')}"
    if kind == "union_tag_not_found":
        return "is required"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in PATTERN_MESSAGES:
        return PATTERN_MESSAGES[ctx["pattern"]]
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind in ("greater_than_equal", "greater_than"):
        return f"must be at least {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"must be at most {ctx.get('le', ctx.get('lt'))}"
    return str(error["msg"]).removeprefix("Value error, ")


def _messages(exc: ValidationError, model: type[BaseModel]) -> tuple[str, list[dict[str, str]]]:
    """Each error as ``{"field", "message"}``, and all of them in one sentence: "limit must be at most 500 (got
    501)"."""
    fields = []
    tagged = issubclass(model, RootModel)  # a union told apart by a field (``to``): its errors start with the tag
    for error in exc.errors(include_url=False):
        loc = error["loc"][1:] if tagged and len(error["loc"]) > 1 else error["loc"]
        where = ".".join(str(part) for part in loc)
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            where = str((error.get("ctx") or {}).get("discriminator", "'to'")).strip("'")
        text = _said(error, model)
        given = error.get("input")
        if (
            error["type"] not in ("missing", "extra_forbidden", "union_tag_not_found", "value_error")
            and not isinstance(given, (dict, list))
            and given is not None
        ):
            got = json.dumps(given, default=str)
            text += f" (got {got[:80] + '…' if len(got) > 80 else got})"
        fields.append({"field": where or "body", "message": text})
    sentence = "; ".join(f"{f['field']} {f['message']}" if f["field"] != "body" else f["message"] for f in fields)
    return sentence, fields
