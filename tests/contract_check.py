"""Every JSON answer a test receives is checked against the OpenAPI document the app serves: its status must be one
the operation documents, and its body must validate against that status's schema. The tests' apps (conftest's
``make_app``) carry the check; a test that received an undocumented answer fails at teardown, naming it."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask, Response, request
from jsonschema import Draft202012Validator

from idemdash.dashboard.contract import operation_of
from idemdash.dashboard.openapi import build

_DOCUMENTS: dict[tuple, dict[str, Any]] = {}
_VALIDATORS: dict[tuple, Draft202012Validator] = {}


class ContractCheck:
    def __init__(self, app: Flask) -> None:
        self.app = app
        self.problems: list[str] = []
        self.checked = 0

    def document(self) -> tuple[tuple, dict[str, Any]]:
        key = (
            tuple(sorted(r.rule for r in self.app.url_map.iter_rules())),
            tuple(self.app.extensions["idemdash_targets"]),
        )
        if key not in _DOCUMENTS:
            _DOCUMENTS[key] = build(self.app, strict=False)  # a test's own route declares no operation
        return key, _DOCUMENTS[key]

    def __call__(self, response: Response) -> Response:
        rule = request.url_rule
        if (
            rule is None
            or not rule.rule.startswith("/api/")
            or request.method not in ("GET", "POST")
            or response.status_code == 405
            or operation_of(self.app.view_functions[rule.endpoint]) is None
        ):
            return response
        key, document = self.document()
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        operation = document["paths"].get(path, {}).get(request.method.lower())
        where = f"{request.method} {request.full_path.rstrip('?')} -> {response.status_code}"
        if operation is None:
            self.problems.append(f"{where}: {path} is not in the document")
            return response
        documented = operation["responses"].get(str(response.status_code))
        if documented is None:
            self.problems.append(f"{where}: status not documented (documented: {sorted(operation['responses'])})")
            return response
        if "$ref" in documented:
            documented = document["components"]["responses"][documented["$ref"].rsplit("/", 1)[1]]
        if "content" not in documented:  # the server's own answer (414), no body of ours
            return response
        schema = documented["content"]["application/json"]["schema"]
        validator_key = (key, repr(schema))
        if validator_key not in _VALIDATORS:
            _VALIDATORS[validator_key] = Draft202012Validator({**schema, "components": document["components"]})
        body = response.get_json(silent=True)
        for error in _VALIDATORS[validator_key].iter_errors(body):
            self.problems.append(f"{where}: {'/'.join(map(str, error.absolute_path))}: {error.message[:300]}")
        self.checked += 1
        return response
