"""The web app's database target: built from the app's settings in ``init_app``, reached through ``get_target``.

One pool per process: gunicorn workers each build their own app after the fork, and several apps in one
process (the tests) each have their own.
"""
from __future__ import annotations

from flask import Flask, current_app

from queries.target import Target


def init_app(app: Flask) -> Target:
    target = Target.from_settings(app.config)
    target.open_pool()
    app.extensions["idemdash_target"] = target
    return target


def get_target() -> Target:
    return current_app.extensions["idemdash_target"]
