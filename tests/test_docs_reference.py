"""The docs' generated references are what the code makes now: docs/settings.md from SETTINGS and
docs/api-reference.md from the OpenAPI document (tools/docs_reference.py; `python -m tools.docs_reference` rewrites
both). A setting, a help text or an API answer changed without running it fails here."""

from __future__ import annotations

import re

from idemdash.core.settings import SETTINGS
from tools import docs_reference


def test_the_settings_reference_is_current():
    page = docs_reference.SETTINGS_PAGE.read_text(encoding="utf-8")
    assert page == docs_reference.render_settings(), "run `python -m tools.docs_reference`"
    rows = re.findall(r"^\| `(IDEMDASH_[A-Z0-9_]+)` \|", page, re.M)
    assert rows == [s.env for s in SETTINGS]


def test_the_api_reference_is_current():
    document = docs_reference.openapi_document()
    page = docs_reference.API_PAGE.read_text(encoding="utf-8")
    assert page == docs_reference.render_api(document), "run `python -m tools.docs_reference`"
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert f"### `{method.upper()} {path}` {{#{operation['operationId']}}}" in page
    assert f"### {'Error'} {{#schema-error}}" in page
