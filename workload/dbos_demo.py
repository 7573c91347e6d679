"""`idemdash demo --profile dbos`'s workload: a real DBOS application (workload/dbos_app.py), one executor process at
a time (DBOS is one per process), against the demo database.

Before the history is written, an executor of the older application version ``v1`` launches (DBOS creates and
migrates its own tables, registers ``v1``), starts a few orders and is killed inside a step: PENDING workflows no
launch of the current version recovers. Then the current version's executors run the shop; now and then the
running one is killed (SIGKILL) mid-step and a new one, under a new executor ID, takes over: the workflows the dead
one was running stay PENDING, their executor silent (stuck once ``DEFAULT_LEASE_SECONDS`` pass). Stopping the demo
stops the running executor with SIGTERM (it gives its workflows a moment, then DBOS shuts down), SIGKILL only if it
does not exit.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

CURRENT_VERSION, OLD_VERSION = "v2", "v1"
CRASH_EVERY = 120.0  # seconds between killed executors, on average
RATE = 3.0  # orders a second, on average
LAUNCH_SECONDS = 60  # an executor's launch (DBOS's migrations on a new database) or its SIGTERM stop
RESTART_PAUSE = 5.0  # after an executor that exited on its own (the database gone?)
INSTALL = "pip install 'idemdash[demo]' (or pip install 'dbos>=3.4,<4')"


def available() -> bool:
    """Whether the ``dbos`` package is installed (the ``demo`` extra brings it)."""
    return importlib.util.find_spec("dbos") is not None


def _command(mode: str) -> list[str]:
    return [sys.executable, "-m", "idemdash.workload.dbos_app", mode]


def _env(url: str, schema: str, version: str, executor: str, rate: float) -> dict[str, str]:
    # the child imports the same idemdash as this process (a checkout's too), whatever its working directory
    path = os.pathsep.join(filter(None, (_package_root(), os.environ.get("PYTHONPATH"))))
    return {
        **os.environ,
        "PYTHONPATH": path,
        "IDEMDASH_DBOS_URL": url,
        "IDEMDASH_DBOS_SCHEMA": schema,
        "IDEMDASH_DBOS_VERSION": version,
        "IDEMDASH_DBOS_EXECUTOR": executor,
        "IDEMDASH_DBOS_RATE": str(rate),
    }


def _package_root() -> str:
    """The directory holding the ``idemdash`` package this process imported (this file is its workload/dbos_demo.py;
    in a checkout, through the package's link to workload/, which the path keeps)."""
    return str(Path(__file__).absolute().parents[2])


def _executor_id() -> str:
    return f"demo-{secrets.token_hex(3)}"


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(LAUNCH_SECONDS)


def leave_leftovers(url: str, schema: str) -> None:
    """An executor of the older version ``v1`` launched (DBOS creates its tables), killed inside a step of each of
    its few orders."""
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(
            _command("leftovers"),
            env=_env(url, schema, OLD_VERSION, _executor_id(), 0),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,
        )
        timer = threading.Timer(LAUNCH_SECONDS, proc.kill)  # a launch that hangs ends here, as a failure below
        timer.start()
        try:
            said = proc.stdout.readline() if proc.stdout else ""
        finally:
            timer.cancel()
            _kill(proc)
            if proc.stdout:
                proc.stdout.close()
        if said.strip() != "ready":
            errors.seek(0)
            raise RuntimeError(f"the DBOS application of version {OLD_VERSION} did not start: {errors.read()[-2000:]}")


class DbosWorkload(threading.Thread):
    """The current version's executor processes, one at a time: each runs until it is killed (every
    ``crash_every`` seconds on average) and replaced, or until the demo stops it."""

    def __init__(self, url: str, schema: str, *, crash_every: float = CRASH_EVERY, rate: float = RATE) -> None:
        super().__init__(name="idemdash-demo-dbos", daemon=True)
        self.url, self.schema, self.crash_every, self.rate = url, schema, crash_every, rate
        self.executors: list[str] = []  # every executor ID launched, in order
        self.killed: list[str] = []  # the ones killed mid-run
        self._stop_event = threading.Event()
        self._proc: subprocess.Popen | None = None

    def run(self) -> None:
        while not self._stop_event.is_set():
            executor = _executor_id()
            with tempfile.TemporaryFile("w+") as errors:
                self._proc = proc = subprocess.Popen(
                    _command("run"),
                    env=_env(self.url, self.schema, CURRENT_VERSION, executor, self.rate),
                    stdout=subprocess.DEVNULL,
                    stderr=errors,
                    text=True,
                    start_new_session=True,
                )
                self.executors.append(executor)
                if self._stop_event.wait(random.expovariate(1 / self.crash_every)):
                    break  # stop() ends it
                if proc.poll() is not None:  # it exited on its own: say why, then start another after a pause
                    errors.seek(0)
                    log.warning(
                        "the demo's DBOS executor %s exited (%s): %s",
                        executor,
                        proc.returncode,
                        errors.read()[-1000:].strip(),
                    )
                    self._stop_event.wait(RESTART_PAUSE)
                    continue
                _kill(proc)  # killed mid-step, as a crashed machine would be
            self.killed.append(executor)
            log.info("killed the demo's DBOS executor %s; a new one takes over", executor)

    def stop(self) -> None:
        """Stops the running executor (SIGTERM, SIGKILL past the wait) and this thread."""
        self._stop_event.set()
        self.join(5)
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(LAUNCH_SECONDS / 4)
            except subprocess.TimeoutExpired:
                _kill(proc)
