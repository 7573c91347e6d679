"""Why a database could not be used, in one line that names the cause and the fix.

``diagnose(exc, dsn)`` turns what psycopg raised (its SQLSTATE, or libpq's message when connecting failed before
there was one) into a ``Cause``: connection refused (host, port), no such host, timeout, authentication failed
(the user), no such role or database, TLS required or refused, pg_hba.conf, too many connections, a server
starting or stopping, a missing schema, table or column, a missing privilege (the GRANT). Pages, ``/readyz``,
the command line and the log all say the same line. The password is never part of it.

``CauseLog`` logs such a line once per cause, not once per retry. What fixes a missing schema, table or grant is
worded in ``core/remedies.py``, which ``/readyz`` says too.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from idemdash.core.dsn import Endpoint, endpoint, password_of
from idemdash.core.remedies import idemdash_schema_missing, privilege_missing, quote_role, table_missing

URL = "the database URL (IDEMDASH_DATABASE_URL or --database-url)"

# kinds of cause; TRANSIENT ones may pass by themselves (an outage), the others need someone to change something
REFUSED, NO_HOST, TIMEOUT, AUTH, NO_ROLE, NO_DATABASE, TLS, HBA = (
    "refused",
    "no_host",
    "timeout",
    "auth",
    "no_role",
    "no_database",
    "tls",
    "hba",
)
TOO_MANY, STARTING, LOST = "too_many_connections", "starting", "lost"
IDEMDASH_SCHEMA, NO_TABLE, NO_COLUMN = "idemdash_schema", "no_table", "no_column"
PRIVILEGE, OTHER = "privilege", "other"
TRANSIENT = frozenset({REFUSED, TIMEOUT, TOO_MANY, STARTING, LOST})
CONNECT = TRANSIENT | {NO_HOST, AUTH, NO_ROLE, NO_DATABASE, TLS, HBA}  # failures to connect at all


@dataclass(frozen=True)
class Cause:
    kind: str
    message: str  # one line: what is wrong and what fixes it
    transient: bool  # retrying may help (an outage); otherwise a setting, a grant or a schema must change

    def __str__(self) -> str:
        return self.message


def _cause(kind: str, message: str) -> Cause:
    return Cause(kind, message, kind in TRANSIENT)


def _first_quoted(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text)
    return match.group(1) if match else None


def _clean(text: str, dsn: str) -> str:
    """One line of ``text`` without the DSN's password (libpq does not echo it; this makes sure)."""
    line = " ".join(text.split())
    password = password_of(dsn) if dsn else None
    if password:
        line = line.replace(password, "***")
    return line[:500]


def diagnose(
    exc: BaseException,
    dsn: str = "",
    *,
    schema: str | None = None,
    app_tables: Mapping[str, str] | None = None,
    privilege: str | None = None,
) -> Cause:
    """The cause of ``exc`` (raised connecting to, or querying, ``dsn``) and its fix, in one line.

    ``schema`` and ``app_tables`` (bare name → the setting that names it) say which tables are the application's
    (PostgreSQL names a table bare when it refuses it; any other is idemdash's own); ``privilege`` is what the
    failed statement needed (SELECT for a read), when the caller knows.
    """
    app_tables = app_tables or {}
    where = endpoint(dsn)
    text = _clean(str(exc), dsn)
    state = getattr(exc, "sqlstate", None)
    lower = text.lower()

    if type(exc).__name__ == "ConnectionTimeout" or "timeout expired" in lower:
        return _cause(
            TIMEOUT,
            f"no answer from {_at(text, where)} within the connect timeout: check the host and "
            f"port in {URL}, and that no firewall drops the connection.",
        )
    if "connection refused" in lower:
        return _cause(
            REFUSED,
            f"connection refused by {_at(text, where)}: no PostgreSQL is listening there. Check the "
            f"host and port in {URL}, and that the server is running.",
        )
    if "no such file or directory" in lower and "socket" in lower:
        return _cause(
            REFUSED,
            f"no PostgreSQL at {_at(text, where)}: the socket file does not exist. Is the server "
            f"running? Otherwise set the host (and port) in {URL}.",
        )
    if "resolve host" in lower or "translate host name" in lower or "name or service not known" in lower:
        host = _first_quoted(r"host(?: name)? '([^']+)'", text) or _first_quoted(r'host name "([^"]+)"', text)
        return _cause(NO_HOST, f"the host name {host or where.host!r} does not resolve: check the host in {URL}.")
    if state == "28P01" or "password authentication failed" in lower:
        user = _first_quoted(r'for user "([^"]+)"', text) or where.user
        return _cause(
            AUTH,
            f"password authentication failed for user {user!r} at {where.server}: check the user "
            f"and password in {URL} (or PGPASSWORD / ~/.pgpass).",
        )
    if "no password supplied" in lower:
        return _cause(
            AUTH,
            f"the server at {where.server} wants a password for user {where.user!r} and none was "
            f"given: put it in {URL}, PGPASSWORD or ~/.pgpass.",
        )
    if state == "3D000" or re.search(r'database "[^"]+" does not exist', text):
        name = _first_quoted(r'database "([^"]+)" does not exist', text) or where.dbname
        return _cause(
            NO_DATABASE,
            f"database {name!r} does not exist on {where.server}: check the database name in "
            f"{URL} (or create it: CREATE DATABASE ...).",
        )
    if re.search(r'role "[^"]+" does not exist', text) and ("fatal" in lower or "connection" in lower):
        name = _first_quoted(r'role "([^"]+)" does not exist', text) or where.user
        return _cause(
            NO_ROLE,
            f"the role (user) {name!r} does not exist on {where.server}: check the user in {URL}, "
            "or create the role (the README's checklist has the statements).",
        )
    if "ssl" in lower or "tls" in lower or "no encryption" in lower or "certificate" in lower:
        return _tls(text, lower, where)
    if "pg_hba.conf" in lower:
        return _cause(
            HBA,
            f"the server's pg_hba.conf does not let user {where.user!r} connect to database "
            f"{where.dbname!r} from this host: ask its administrator to allow it, or check the user and "
            f"database in {URL}.",
        )
    if state == "53300" or "too many clients" in lower or "connection slots are reserved" in lower:
        return _cause(
            TOO_MANY,
            f"the server at {where.server} has no connection slots left (max_connections): "
            "lower IDEMDASH_POOL_MAX_SIZE (per web worker) or the number of workers, or raise "
            "max_connections.",
        )
    if state == "57P03" or "starting up" in lower or "shutting down" in lower or "in recovery mode" in lower:
        return _cause(
            STARTING,
            f"the server at {where.server} is starting up or shutting down and does not accept "
            "connections yet: idemdash keeps retrying.",
        )
    if state in ("57P01", "57P02", "08006", "08003") or "closed the connection unexpectedly" in lower:
        return _cause(
            LOST, f"the connection to {where.server} was lost ({text[:160]}): idemdash reconnects on its own."
        )
    if state in ("42P01", "3F000"):
        return _missing_relation(text, app_tables)
    if state == "42703":
        return _cause(
            NO_COLUMN,
            f"{text}: the table lacks a column idemdash reads. `idemdash check` lists each "
            "missing column, the statement that adds it, and what works without it.",
        )
    if state == "42501":
        return _privilege(text, where, schema, app_tables, privilege)
    if state is None and type(exc).__name__ in ("OperationalError", "InterfaceError"):
        return _cause(LOST, f"cannot use the database at {where.server}: {text}")
    return _cause(OTHER, f"{type(exc).__name__}: {text}")


def _at(text: str, where: Endpoint) -> str:
    """The server libpq tried, from its own message (several hosts may be listed), else from the DSN."""
    tcp = re.search(r'server at "([^"]+)"(?: \([^)]*\))?, port (\d+)', text)
    if tcp:
        return f"{tcp.group(1)} port {tcp.group(2)}"
    socket = _first_quoted(r'server on socket "([^"]+)"', text)
    if socket:
        return f"the local socket {socket}"
    return where.server


def _tls(text: str, lower: str, where: Endpoint) -> Cause:
    if "does not support ssl" in lower:
        fix = (
            "the server does not offer TLS but the URL asks for it (sslmode=require or stricter): enable ssl on the "
            "server, or use sslmode=prefer"
        )
    elif "no encryption" in lower:
        fix = (
            f"the server accepts user {where.user!r} only over TLS: add sslmode=require (or verify-full with "
            f"sslrootcert) to {URL}"
        )
    elif "certificate" in lower:
        fix = (
            "the server's TLS certificate could not be verified: give its CA with sslrootcert=..., or check the "
            "host name it was issued for (sslmode=verify-full)"
        )
    else:
        fix = f"TLS failed: check sslmode and the certificate settings in {URL}"
    return _cause(TLS, f"{fix} ({where.server}: {text[:200]}).")


def _missing_relation(text: str, app_tables: Mapping[str, str]) -> Cause:
    name = _first_quoted(r'(?:relation|schema|table) "([^"]+)" does not exist', text) or text
    if name == "idemdash" or name.startswith("idemdash."):
        return _cause(IDEMDASH_SCHEMA, idemdash_schema_missing(name))
    setting = app_tables.get(name.rpartition(".")[2])
    if setting:
        return _cause(NO_TABLE, "table " + table_missing(name, f"IDEMDASH_APP_SCHEMA and {setting}"))
    return _cause(NO_TABLE, table_missing(name))


def _privilege(
    text: str, where: Endpoint, schema: str | None, app_tables: Mapping[str, str], privilege: str | None
) -> Cause:
    kind = _first_quoted(r"permission denied for (\w+)", text) or "table"
    name = _first_quoted(r"permission denied for \w+ (\S+)", text) or "?"
    role = quote_role(where.user)
    if kind == "schema":
        return _cause(
            PRIVILEGE,
            f"role {where.user!r} may not use schema {name}: GRANT USAGE ON SCHEMA {name} TO "
            f"{role}; (`idemdash check` lists every grant this role lacks)",
        )
    if kind == "database":
        return _cause(
            PRIVILEGE,
            f"role {where.user!r} may not create schemas in database {name}: GRANT CREATE ON "
            f"DATABASE {name} TO {role}; (`idemdash migrate` needs it only while schema "
            "idemdash does not exist yet)",
        )
    if app_tables and name not in app_tables and "." not in name:
        return _cause(
            PRIVILEGE,
            f"role {where.user!r} may not use idemdash's own table {name} ({text}): GRANT SELECT, "
            f"INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA idemdash TO {role}; (`idemdash "
            "check` lists every grant this role lacks)",
        )
    qualified = name if "." in name or not schema else f"{schema}.{name}"
    return _cause(PRIVILEGE, privilege_missing(where.user, privilege or "SELECT", qualified))


class CauseLog:
    """Logs each cause once while the trouble lasts, not on every retry or request; and once when connecting
    works again after a connection problem (a missing table or grant is not forgotten by that: connecting never
    was its trouble)."""

    MAX_REMEMBERED = 100

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._logger = logger
        self._what = what
        self._lock = threading.Lock()
        self._current: Cause | None = None
        self._logged: dict[str, str] = {}  # message -> kind

    @property
    def current(self) -> Cause | None:
        """The last connection problem, until connecting works again."""
        with self._lock:
            return self._current

    def failed(self, cause: Cause, *, say: bool = True) -> None:
        """Log ``cause`` unless it was logged already (``say=False``: the caller said it in a line of its own)."""
        with self._lock:
            if cause.kind in CONNECT:
                self._current = cause
            if cause.message in self._logged or len(self._logged) >= self.MAX_REMEMBERED:
                return
            self._logged[cause.message] = cause.kind
        if say:
            self._logger.warning("%s: %s", self._what, cause.message)

    def recovered(self) -> None:
        """Connecting worked: a connection problem is over, and is logged again should it come back."""
        with self._lock:
            if self._current is None:
                return
            self._current = None
            self._logged = {message: kind for message, kind in self._logged.items() if kind not in CONNECT}
        self._logger.warning("%s: connecting works again", self._what)
