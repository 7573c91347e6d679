"""How a job's failure is told: whether it is an outage, and one safe line per error.

Jobs connect through their target (``Target.connect``: a fresh connection per run, with a connect timeout).
"""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

from idemdash.core.diagnosis import OTHER, CauseLog, diagnose
from idemdash.core.dsn import redact_dsn


def lost(conn: psycopg.Connection | None) -> bool:
    """True when there is no usable connection: it never opened, or the server went away under it."""
    return conn is None or conn.broken or conn.closed


def describe_error(exc: BaseException, dsn: str) -> str:
    """One line for the run history and the log: the error's class and its cause with the fix
    (``core.diagnosis``), or its message; never the DSN's password."""
    message = " ".join(str(exc).split()) or "(no message)"
    name = type(exc).__name__
    cause = diagnose(exc, dsn) if isinstance(exc, psycopg.Error) else None
    text = f"{name}: {cause.message if cause is not None and cause.kind != OTHER else message}"
    password = None
    if dsn:
        try:
            password = conninfo_to_dict(dsn).get("password")
        except psycopg.Error:
            password = None
    if password:
        text = text.replace(str(password), "***")
    return redact_dsn(text)[:1000]


def describe_outage(exc: BaseException, dsn: str) -> str:
    """The error of a job that could not reach the database at all."""
    return f"database unreachable: {describe_error(exc, dsn)}"[:1000]


def unreachable(exc: BaseException) -> bool:
    """The error says the server could not be reached or went away, not that it refused one statement."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    # no SQLSTATE: libpq's own (refused, no such socket, timeout, closed unexpectedly); 08: connection
    # exceptions; 57P01-57P03: shut down under us, or not accepting connections (starting, stopping)
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def already_logged(exc: BaseException, problems: CauseLog) -> bool:
    """The job could not connect and its target has logged why (once): the job's own line can be quiet. Any
    connection failure counts (an outage, a wrong database name or password): ``current`` is cleared as soon as
    a connection opens, so while it is set the job's own connecting failed for that cause."""
    return isinstance(exc, psycopg.OperationalError) and problems.current is not None


def describe_failure(exc: BaseException, dsn: str) -> str:
    """``describe_outage`` when the database was unreachable, else ``describe_error``."""
    return describe_outage(exc, dsn) if unreachable(exc) else describe_error(exc, dsn)
