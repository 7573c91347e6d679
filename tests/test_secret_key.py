"""The app factory's one check on IDEMDASH_SECRET_KEY: under gunicorn (several processes build the app) it is
required; a single process (``flask run``, the demo) makes a random key of its own. `idemdash serve` makes one
for all its workers (tests/test_serve.py runs the real servers)."""

from __future__ import annotations

import logging

import pytest
from gunicorn.errors import AppImportError


def test_under_gunicorn_an_app_without_a_secret_is_refused_naming_the_setting(make_app, monkeypatch):
    monkeypatch.setenv("SERVER_SOFTWARE", "gunicorn/27.0.1")
    with pytest.raises(AppImportError, match="IDEMDASH_SECRET_KEY is not set") as refused:
        make_app(SECRET_KEY="")
    assert "`idemdash serve`" in str(refused.value)
    assert make_app(SECRET_KEY="shared").secret_key == "shared"  # with one, it starts


def test_a_single_process_without_a_secret_makes_a_key_of_its_own(make_app, monkeypatch, caplog):
    monkeypatch.delenv("SERVER_SOFTWARE", raising=False)
    with caplog.at_level(logging.WARNING):
        first, second = make_app(SECRET_KEY=""), make_app(SECRET_KEY="")
    assert len(first.secret_key) == 64 and first.secret_key != second.secret_key
    assert caplog.text.count("IDEMDASH_SECRET_KEY is not set; using a random key for this process only") == 2
