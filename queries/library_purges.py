"""The statements of a purge of a library's table (jobs/library_purge.py): a batch of the rows its purgeable state
selects, deleted with the condition checked again row by row (with, in the same statement, the rows of the tables
the profile declares dependent on it), and the dry run's count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import State
from idemdash.queries import statement
from idemdash.queries.profile_states import state_names


def _dependents(found: Found, state: State) -> tuple[sql.Composable, sql.Composable]:
    """What a batch's delete returns, and the deletes of the table's dependent rows (``Table.dependents``: the
    library's tables without a foreign key to it) among the found tables, as CTEs that follow ``gone``."""
    tables = dict(found.tables)
    dependents = [d for d in profile(found.profile).table(state.table).dependents if d.table in tables]
    if not dependents:
        return sql.SQL("1"), sql.SQL("")
    parents = sorted({d.parent for d in dependents})
    deletes = [
        statement(
            "delete_library_dependent",
            None,
            cte=sql.Identifier(f"dependent_{i}"),
            dependent=sql.Identifier(found.schema, tables[d.table]),
            column=sql.Identifier(named(d.column, found.naming)),
            parent=sql.Identifier(named(d.parent, found.naming)),
        )
        for i, d in enumerate(dependents)
    ]
    returned = sql.SQL(", ").join(sql.SQL("t.{}").format(sql.Identifier(named(p, found.naming))) for p in parents)
    return returned, sql.SQL("").join(sql.SQL(", ") + delete for delete in deletes)


def _names(found: Found, state: State) -> dict[str, Any]:
    names = state_names(found, state)
    if names is None:
        raise LookupError(f"the {state.table} table of {found.profile} is not in schema {found.schema}")
    returned, dependents = _dependents(found, state)
    return {
        "table": names["table"],
        "condition": statement(state.query, None, **names),
        "returned": returned,
        "dependents": dependents,
    }


def delete_library_batch(
    conn: psycopg.Connection, found: Found, state: State, params: Mapping[str, Any], *, run_id: int, batch_size: int
) -> int:
    row = conn.execute(
        statement("delete_library_batch", None, **_names(found, state)),
        {**params, "run_id": run_id, "batch_size": batch_size},
    ).fetchone()
    return int(row[0]) if row else 0


def delete_library_batch_in_order(
    conn: psycopg.Connection,
    found: Found,
    state: State,
    params: Mapping[str, Any],
    *,
    run_id: int,
    batch_size: int,
    order: str,
    after: str | None,
) -> tuple[int, str | None]:
    """A batch along ``order`` (the state's indexed time column) from ``after`` (where the last batch stopped, None
    for the first); the rows deleted and where this batch stopped."""
    names = _names(found, state)
    names["order"] = sql.Identifier(named(order, found.naming))
    row = conn.execute(
        statement("delete_library_batch_in_order", None, **names),
        {**params, "run_id": run_id, "batch_size": batch_size, "first": after is None, "after_value": after},
    ).fetchone()
    return (int(row[0]), row[1]) if row else (0, None)


def record_library_dry_run(
    conn: psycopg.Connection, found: Found, state: State, params: Mapping[str, Any], *, run_id: int
) -> int:
    row = conn.execute(
        statement("record_library_dry_run", None, **_names(found, state)), {**params, "run_id": run_id}
    ).fetchone()
    return int(row[0]) if row else 0
