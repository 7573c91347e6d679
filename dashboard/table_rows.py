"""`/tables/<role>?state=` and `/tables/<role>/row?id=` (and their JSON): the rows of a library's table in one of
its states, oldest first, and one row whole with the states it is in, read through the database's profile
(queries/profile_rows.py). Rows are shown as the library stored them, by its own column names."""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from string import Formatter
from typing import Any

from flask import Blueprint, abort

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.shape import Command, LibraryAction, State, Table
from idemdash.core.settings import library_actions
from idemdash.core.time_parsers import zone_name
from idemdash.dashboard import contract, panels
from idemdash.dashboard.schemas import table_rows as schema
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import cursor
from idemdash.queries.catalog import ShapeNotFound, find_configured
from idemdash.queries.library_actions import applies
from idemdash.queries.profile_rows import get_row, list_state_rows, order_column, row_facts, row_states
from idemdash.queries.profile_states import params_for

bp = Blueprint("table_rows", __name__)

ROW_ERRORS = (400, 401, 403, 404, 503)
PAYLOAD_LIMIT = 64 * 1024


def _found(conn: Any, settings: Any) -> Found:
    try:
        return find_configured(conn, settings)
    except ShapeNotFound as exc:
        abort(404, str(exc))


def _table(found: Found, role: str) -> Table:
    chosen = profile(found.profile)
    if role not in {t.role for t in chosen.tables} or found.table(role) is None:
        abort(
            404,
            f"no {role!r} table here: the {chosen.library} tables found are "
            + ", ".join(f"{name} ({r})" for r, name in found.tables),
        )
    return chosen.table_of(role, found.version)


def _state(found: Found, role: str, meaning: str) -> State:
    for state in profile(found.profile).states_of(found.version):
        if state.table == role and state.meaning == meaning:
            return state
    abort(404, f"{profile(found.profile).library} records nothing for {meaning!r} rows of its {role} table")


def _rows(role: str) -> schema.Rows:
    return _read_rows(role)[0]


def _read_rows(role: str) -> tuple[schema.Rows, Found, Table]:
    """The rows in one state, with the found tables and the profile's table they were read through."""
    args = contract.query(schema.RowsQuery)
    target = get_target()
    try:
        after = tuple(cursor.decode(args.cursor, 2)) if args.cursor else None
    except ValueError as exc:
        abort(400, str(exc))

    def read(conn: Any) -> tuple[Found, Table, State, list]:
        found = _found(conn, target.settings)
        table = _table(found, role)
        state = _state(found, role, args.state)
        rows = list_state_rows(
            conn, found, state, params_for(state, target.settings), after=after, limit=args.limit + 1
        )
        return found, table, state, rows

    found, table, state, rows = panels.require(panels.load(read))
    more = len(rows) > args.limit
    rows = rows[: args.limit]
    next_cursor = cursor.encode([rows[-1].order_value, rows[-1].identity_value]) if more else None
    return (
        schema.Rows(
            database=target.name,
            profile=found.profile,
            role=role,
            table=found.table(role) or role,
            state=args.state,
            note=state.note,
            order_column=named(column, found.naming) if (column := order_column(table, state)) else None,
            items=[schema.RowItem(identity=r.identity_value, row=r.row_json) for r in rows],
            next_cursor=next_cursor,
            as_of=datetime.now(timezone.utc),
        ),
        found,
        table,
    )


def row_answer(role: str, identity: str | None = None) -> schema.Row:
    return _read_row(role, identity)[0]


def _read_row(role: str, identity: str | None = None) -> tuple[schema.Row, Found, Table]:
    identity = identity or contract.query(schema.RowQuery).id
    target = get_target()

    def read(conn: Any) -> tuple[Found, dict | None, list, list, list]:
        found = _found(conn, target.settings)
        _table(found, role)  # 404 for a role the profile or the database lacks
        actions = [
            (a, applies(conn, found, a, role, identity)) for a in profile(found.profile).actions if role in a.tables
        ]
        return (
            found,
            get_row(conn, found, role, identity),
            row_states(conn, found, role, identity, target.settings),
            actions,
            row_facts(conn, found, role, identity, target.settings),
        )

    found, row, states, actions, facts = panels.require(panels.load(read))
    if row is None:
        abort(404, f"no row of {found.table(role)} has the identity {identity}")
    inside = {s.meaning for s, is_in in states if is_in}
    commands = [
        schema.RowCommand(label=c.label, command=_command(c, row, found))
        for c in profile(found.profile).commands
        if c.table == role and inside & set(c.meanings)
    ]
    return (
        schema.Row(
            database=target.name,
            profile=found.profile,
            role=role,
            table=found.table(role) or role,
            identity=identity,
            row={k: _cut(v) for k, v in row.items()},
            states=[
                schema.RowState.model_validate({"meaning": s.meaning, "inside": inside, "note": s.note})
                for s, inside in states
            ],
            actions=[_action(found, a, ok, row, target.settings) for a, ok in actions],
            application_acts=profile(found.profile).application_acts or None,
            facts=[schema.RowFact(label=label, text=text) for label, text in facts],
            commands=commands,
            as_of=datetime.now(timezone.utc),
        ),
        found,
        _table(found, role),
    )


def _action(found: Found, action: LibraryAction, ok: bool, row: dict, settings: Any) -> schema.RowAction:
    source = action.source
    return schema.RowAction(
        name=action.name,
        label=action.label,
        does=action.does,
        source=f"https://github.com/{source.repo}/blob/{source.commit}/{source.path}",
        enabled=action.name in library_actions(settings),
        applies=ok,
        expected={c: row.get(named(c, found.naming)) for c in action.expected},
    )


def _command(command: Command, row: dict[str, Any], found: Found) -> str:
    """The library's command with the row's values (as the found naming spells its columns) and the schema, each
    shell-quoted."""
    fields = [f for _, f, _, _ in Formatter().parse(command.text) if f]
    values = {f: found.schema if f == "schema" else row.get(named(f, found.naming)) for f in fields}
    return command.text.format_map({f: shlex.quote("" if v is None else str(v)) for f, v in values.items()})


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > PAYLOAD_LIMIT:
        return value[:PAYLOAD_LIMIT] + f"… (cut at {PAYLOAD_LIMIT // 1024} KiB of {len(value):,} characters)"
    return value


def _reading(found: Found, table: Table) -> dict[str, Any]:
    """How a page reads the table's columns, by their names as found: each time column's unit (shown as how long
    ago, the absolute time on hover), the zone a library's local timestamps are written in, and the identity's
    columns (a lone one links to the row, instead of a column repeating it)."""
    return {
        "times": {named(t.column, found.naming): t.unit for t in table.times},
        "zone": zone_name(get_target().settings.library_timezone),
        "identity_columns": [named(c, found.naming) for c in table.identity],
    }


@bp.get("/tables/<role>")
def rows_page(role: str):
    rows, found, table = _read_rows(role)
    return render("table_rows.html", "rows_panel", rows=rows, **_reading(found, table))


@bp.get("/api/v1/tables/<role>")
@contract.operation(
    "The rows of one of the database's tables in one of its states, as its profile defines it, oldest first",
    query=schema.RowsQuery,
    ok=schema.Rows,
    errors=ROW_ERRORS,
)
def rows_api(role: str) -> schema.Rows:
    return _rows(role)


@bp.get("/tables/<role>/row")
def row_page(role: str):
    return row_page_for(role)


def row_page_for(role: str, identity: str | None = None, action_error: str | None = None, form: Any = None):
    """The row's page; after a library action's form, with the refusal and what was typed (``action_error``)."""
    row, found, table = _read_row(role, identity)
    return render(
        "table_row.html",
        None,
        row=row,
        action_error=action_error,
        form=form or {},
        done=contract.query(schema.RowPageQuery).done,
        **_reading(found, table),
    )


@bp.get("/api/v1/tables/<role>/row")
@contract.operation(
    "One row of one of the database's tables, whole, with each state of its table and whether the row is in it",
    query=schema.RowQuery,
    ok=schema.Row,
    errors=ROW_ERRORS,
)
def row_api(role: str) -> schema.Row:
    return row_answer(role)
