"""gunicorn's settings for idemdash: `idemdash serve` runs ``gunicorn -c python:idemdash.dashboard.gunicorn_config``,
and
a gunicorn started by hand should too (docs/deploy.md).

- ``pre_request`` counts identity headers sent more than once (``dashboard.network``);
- ``post_fork`` gives the workers' warnings a time and a level;
- ``post_worker_init`` freezes what the worker built before its first request (its app, templates, modules) out of
  the garbage collector's reach;
- the request metrics of all workers add up (``dashboard.metrics``): PROMETHEUS_MULTIPROC_DIR must be set in
  gunicorn's environment before it starts; its old files are removed when gunicorn starts, an exited worker's
  live gauges when it exits, and a directory `idemdash serve` made for itself when gunicorn stops.
"""

from __future__ import annotations

import gc
import logging
import shutil
import tempfile
from pathlib import Path

from prometheus_client import multiprocess

from idemdash.dashboard.metrics import multiprocess_dir
from idemdash.dashboard.network import mark_repeated_headers

# the directory `idemdash serve` makes when PROMETHEUS_MULTIPROC_DIR is not set (removed when gunicorn stops)
OWN_METRICS_DIR_PREFIX = "idemdash-metrics-"

pre_request = mark_repeated_headers
# no request-line limit of gunicorn's own: its default (4,094 bytes) refused with 414 the URLs the API's document
# allows (a key of up to 100,000 characters, a search or a row's identity of 10,000, a cursor of 8,192), which
# the pages link to as well; a proxy in front may set one (docs/deploy.md)
limit_request_line = 0


def post_fork(server, worker) -> None:
    """idemdash's own warnings (a database cause, once) with a time, the worker and the level, like gunicorn's."""
    logging.basicConfig(
        level=logging.WARNING, format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s"
    )


def post_worker_init(worker) -> None:
    """The worker's app is built: what it holds lives as long as the worker (about 90,000 objects: the app, its
    compiled templates, the imported modules), and each full collection of the garbage collector walked all of it
    again, about 3 ms a request on average on the stuck list (a full collection every few dozen requests). Frozen,
    a collection walks only what requests allocate."""
    gc.collect()
    gc.freeze()


def on_starting(server) -> None:
    """Counters start from zero with the server: files of an earlier run would be added to this one's."""
    shared = multiprocess_dir()
    if shared:
        for stale in Path(shared).glob("*.db"):
            stale.unlink()


def child_exit(server, worker) -> None:
    shared = multiprocess_dir()
    if shared:
        multiprocess.mark_process_dead(worker.pid, path=shared)


def on_exit(server) -> None:
    shared = multiprocess_dir()
    if shared and _made_by_serve(Path(shared)):
        shutil.rmtree(shared, ignore_errors=True)


def _made_by_serve(path: Path) -> bool:
    return path.name.startswith(OWN_METRICS_DIR_PREFIX) and path.parent == Path(tempfile.gettempdir())
