"""gunicorn's post_worker_init (dashboard/gunicorn_config.py): what a worker built before its first request is frozen
out of the garbage collector's reach, so a full collection walks only what requests allocate."""

from __future__ import annotations

import gc

from idemdash.dashboard import gunicorn_config


def test_a_worker_with_its_app_built_freezes_what_it_holds(make_app, shared_database_url):
    app = make_app(shared_database_url)  # what a worker holds when gunicorn calls the hook
    assert app.test_client().get("/healthz").status_code == 200
    try:
        gunicorn_config.post_worker_init(worker=None)
        assert gc.get_freeze_count() > 10_000  # the modules, the app and its templates
        assert app.test_client().get("/healthz").status_code == 200
    finally:
        gc.unfreeze()  # the test process goes on collecting as before
