"""Which server, port, database and user a connection string names, as libpq would resolve them, never the password.

The header shows this in full (``db.internal:5432/orders``), and error messages name the host, port, user and
database they are about; neither ever needs the password.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import psycopg
from psycopg.conninfo import conninfo_to_dict

DEFAULT_PORT = "5432"


@dataclass(frozen=True)
class Endpoint:
    host: str  # a name or address, or a socket directory (starts with '/'); '' for libpq's default socket
    port: str
    dbname: str
    user: str

    @property
    def socket(self) -> bool:
        return not self.host or self.host.startswith("/")

    @property
    def server(self) -> str:
        """'db.internal port 5432', or 'the local socket in /run/postgresql (port 5432)'."""
        if self.socket:
            where = f" in {self.host}" if self.host else ""
            return f"the local socket{where} (port {self.port})"
        return f"{self.host} port {self.port}"

    @property
    def label(self) -> str:
        """What the header shows: host:port/database (a socket directory stands for the host)."""
        host = self.host or "local socket"
        return f"{host}:{self.port}/{self.dbname}"


def endpoint(dsn: str, environ: Mapping[str, str] | None = None) -> Endpoint:
    """Host, port, database and user of ``dsn``, with libpq's defaults (PG* variables, the OS user) filled in."""
    environ = os.environ if environ is None else environ
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        params = {}
    user = str(params.get("user") or environ.get("PGUSER") or _os_user())
    return Endpoint(
        host=str(params.get("host") or params.get("hostaddr") or environ.get("PGHOST") or ""),
        port=str(params.get("port") or environ.get("PGPORT") or DEFAULT_PORT),
        dbname=str(params.get("dbname") or environ.get("PGDATABASE") or user),
        user=user,
    )


def password_of(dsn: str) -> str | None:
    """The password written in ``dsn`` (to scrub it from any text that might echo it), or None."""
    try:
        password = conninfo_to_dict(dsn).get("password")
    except psycopg.ProgrammingError:
        return None
    return str(password) if password else None


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (some containers)
        return "postgres"


_PASSWORD_IN_KV = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URL_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://[^/?#@:]*):([^/?#]*)@", re.IGNORECASE)
_PASSWORD_IN_QUERY = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ``***``, safe to show or log. Nothing else changes."""
    if "://" in dsn:
        dsn = _URL_USERINFO.sub(lambda m: f"{m.group(1)}:***@" if m.group(2) else f"{m.group(1)}@", dsn)
        return _PASSWORD_IN_QUERY.sub(r"\1***", dsn)
    return _PASSWORD_IN_KV.sub(r"\1***", dsn)
