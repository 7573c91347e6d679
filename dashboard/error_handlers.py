"""What the app answers when a request fails: each exception a view may raise (a bad value, a lock, a timeout, an
unreachable or refusing database, a panel that did not load, an HTTP error) as its status and words
(``web.error_response``: JSON for the API, a fragment for htmx, else the error page)."""

from __future__ import annotations

import psycopg
from flask import Flask, request
from psycopg import errors
from psycopg_pool import PoolTimeout
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from idemdash.dashboard.panels import PanelError
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import error_response
from idemdash.queries.pool_budget import BudgetExhausted


def bad_value(exc: psycopg.DataError):
    # Every value is a bound parameter, so a DataError means the caller sent a value the
    # database cannot hold (a NUL character, an out-of-range number): bad input.
    detail = (exc.diag.message_primary or type(exc).__name__).strip()
    return error_response(400, f"a value in the request is not valid for the database: {detail}")


def row_locked(exc: errors.LockNotAvailable):
    # 55P03: FOR UPDATE NOWAIT, or the lock timeout of the dashboard's own writes. The transaction was
    # rolled back, and the application will finish with the row soon: a conflict, not an outage.
    return error_response(
        409, "An application transaction holds this row right now; nothing was changed, try again in a moment."
    )


def query_timed_out(exc: errors.QueryCanceled):
    # 57014: the statement timeout. Panels turn it into a degraded panel; this is for any other read.
    timeout_ms = get_target().statement_timeout_ms
    return error_response(
        503,
        f"The database did not answer within the {timeout_ms} ms statement timeout "
        "(IDEMDASH_STATEMENT_TIMEOUT_MS), so this request timed out and nothing was changed. The database "
        "is reachable: a long query or a lock held by another transaction is in the way. Try again in a "
        "moment; `idemdash check` lists missing indexes.",
        retry=False,
    )  # no reload every 5 s: each would run the slow query again


def database_unreachable(exc: Exception):
    # The lock and statement timeouts above are OperationalErrors too; what is left is the connection.
    target = get_target()
    cause = target.cause_of(exc)
    target.problems.failed(cause)  # logged once per cause, however many requests fail on it
    if not cause.transient:  # a wrong password or database name: reloading will not help until it is fixed
        return error_response(503, f"idemdash cannot use the database: {cause.message}", retry=False)
    if request.method in ("GET", "HEAD"):
        message = (
            f"The database is unreachable right now, so there is nothing to show: {cause.message} idemdash "
            "keeps retrying on its own: this page reloads every 5 seconds and recovers as soon as the "
            "database answers again. /healthz stays up; /readyz reports the outage."
        )
    else:
        message = (
            f"The database is unreachable right now, so nothing was saved or changed: {cause.message} "
            "Send it again once the database answers (/readyz says when)."
        )
    response = error_response(503, message)
    response.headers["Retry-After"] = "5"
    return response


def budget_exhausted(exc: BudgetExhausted):
    # every open pool busy and no room in IDEMDASH_FLEET_MAX_CONNECTIONS for this database's: not the database's fault
    response = error_response(503, f"No connection for this page right now: {exc}.")
    response.headers["Retry-After"] = "5"
    return response


def missing_privilege(exc: errors.InsufficientPrivilege):
    # 42501: the database role lacks a grant; a read needs SELECT, an action says which it lacked
    target = get_target()
    endpoint = request.endpoint or ""
    needed = "SELECT" if request.method == "GET" else "DELETE, UPDATE" if "purge" in endpoint else "UPDATE"
    cause = target.cause_of(exc, privilege=needed)
    target.problems.failed(cause)
    return error_response(403, f"The database refused idemdash's role: {cause.message}", retry=False)


def schema_missing(exc: psycopg.Error):
    # a read outside a panel (panels degrade on their own), or an action, on a table that is not there
    target = get_target()
    cause = target.cause_of(exc)
    target.problems.failed(cause)
    return error_response(503, f"idemdash cannot use the database: {cause.message}", retry=False)


def panel_error(exc: PanelError):
    panel = exc.panel
    message = panel.message or "query failed"
    if panel.index_sql:
        message += " " + panel.index_sql
    # a slow query or a schema problem: reloading every 5 s like an outage page would not help
    return error_response(503, message, retry=False)


def http_error(exc: HTTPException):
    response = error_response(exc.code or 500, exc.description or exc.name)
    for name, value in exc.get_headers():
        if name == "Retry-After":  # a 429 (too many failed sign-ins) says when to try again
            response.headers[name] = value
    if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
        response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))  # RFC 9110: a 405 names what is allowed
    return response


def init_app(app: Flask) -> None:
    app.register_error_handler(psycopg.DataError, bad_value)
    app.register_error_handler(errors.LockNotAvailable, row_locked)
    app.register_error_handler(errors.QueryCanceled, query_timed_out)
    app.register_error_handler(psycopg.OperationalError, database_unreachable)
    app.register_error_handler(PoolTimeout, database_unreachable)
    app.register_error_handler(BudgetExhausted, budget_exhausted)
    app.register_error_handler(errors.InsufficientPrivilege, missing_privilege)
    app.register_error_handler(errors.UndefinedTable, schema_missing)
    app.register_error_handler(errors.InvalidSchemaName, schema_missing)
    app.register_error_handler(errors.UndefinedColumn, schema_missing)
    app.register_error_handler(PanelError, panel_error)
    app.register_error_handler(HTTPException, http_error)
