"""`/keys` and `/outbox` on a database whose tables record no operator's decisions (another library's): the role's
rows in one meaning (tabs with each meaning's count), a group filter where the library records groups, keyset pages;
`/outbox` adds its numbers and backlog by group, `/outbox/poison` its pending rows with many attempts. Rows are shown
as the library stored them (the row's page: /tables/<role>/row?id=). dashboard/keys.py and dashboard/outbox.py
dispatch here (dashboard/one_model.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from flask import abort, url_for

from idemdash.core.profiles.detect import Found, named
from idemdash.core.profiles.dimensions import column, no_table, not_recorded, records, role_table
from idemdash.core.profiles.shape import MEANINGS, PENDING, Profile, State
from idemdash.core.time_parsers import zone_name
from idemdash.dashboard import contract, panels
from idemdash.dashboard.one_model import chosen
from idemdash.dashboard.profile_numbers import absent_words, definitions, role_panel
from idemdash.dashboard.schemas import profile_pages as schema
from idemdash.dashboard.schemas.table_rows import RowItem
from idemdash.dashboard.schemas.tables import BacklogGroup
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import cursor
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS
from idemdash.queries.profile_numbers import read_role_numbers
from idemdash.queries.profile_pages import list_narrowed_rows
from idemdash.queries.profile_rows import list_backlogs

DEFAULT_STATE = {"keys": "stuck", "outbox": "pending"}


def _state(model: Profile, found: Found | None, role: str, meaning: str) -> State | None:
    if found is None:
        return None
    return next((s for s in model.states_of(found.version) if s.table == role and s.meaning == meaning), None)


def _after(text: str | None) -> tuple[str | None, str] | None:
    """The last row's order value and identity a cursor carries (400 for one that is not a cursor of this list)."""
    if not text:
        return None
    try:
        order, identity = cursor.decode(text, 2)
    except ValueError as exc:
        abort(400, str(exc))
    return order, identity


def _page(rows: list, limit: int) -> tuple[list[RowItem], str | None]:
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = cursor.encode([rows[-1].order_value, rows[-1].identity_value]) if more else None
    return [RowItem(identity=r.identity_value, row=r.row_json) for r in rows], next_cursor


def read_rows(role: str, *, min_attempts: int | None = None) -> dict[str, Any]:
    """The role's rows in the meaning asked for, the tabs, and the role's numbers (None without its table)."""
    args = contract.query(schema.ProfileRowsQuery)
    target = get_target()
    model = chosen(target.settings)
    table = role_table(model, role)
    meaning = args.state or (schema.STATUS_MEANINGS[args.status] if args.status else DEFAULT_STATE[role])
    if min_attempts is not None:
        meaning = PENDING
    after = _after(args.cursor)
    group = args.group if records(table, "group") else None

    def read(conn: Any) -> tuple[Any, list]:
        # the poison list shows no count: its table and attempts column only
        numbers = read_role_numbers(conn, target.settings, (role,), POISON_MIN_ATTEMPTS, count=min_attempts is None)
        state = _state(model, numbers.found, role, meaning)
        rows = (
            list_narrowed_rows(
                conn,
                numbers.found,
                state,
                target.settings,
                group=group,
                min_attempts=min_attempts,
                after=after,
                limit=args.limit + 1,
            )
            if state and numbers.found
            else []
        )
        return numbers, rows

    numbers, rows = panels.require(panels.load(read))
    mine = next((n for n in numbers.roles if n.role == role), None)
    items, next_cursor = _page(rows, args.limit)
    missing = {} if records(table, "group") else {"group": not_recorded(model, "group", role)}
    # no tables where the configuration points (the problem says where detect finds them), or none of this role
    absent = numbers.problem if numbers.found is None else absent_words(model, role, mine)
    if absent:
        missing = {"rows": absent}
    elif min_attempts is None and meaning not in (mine.counts if mine else {}):
        missing["state"] = f"{meaning} is not recorded by {model.library} for its {role} table"
    return {
        "model": model,
        "table": table,
        "numbers": numbers,
        "mine": mine,
        "meaning": meaning,
        "group": group,
        "items": items,
        "next_cursor": next_cursor,
        "not_recorded": missing,
        "args": args,
        "absent": absent,
        "as_of": datetime.now(timezone.utc),
    }


def rows_answer(
    role: str, data: dict[str, Any], model_type: type[schema.ProfileRows] = schema.ProfileRows, **more: Any
) -> schema.ProfileRows:
    model, table, mine, found = data["model"], data["table"], data["mine"], data["numbers"].found
    counts = mine.counts if mine else {}
    return model_type.model_validate(
        {
            "database": get_target().name,
            "profile": model.name,
            "library": model.library,
            "role": role,
            "table": mine.name if mine else None,
            "no_table": data["absent"],
            "state": data["meaning"],
            "group": data["group"],
            "group_column": named(column(table, "group") or "", found.naming)
            if table and table.groups and found
            else None,
            "tabs": [
                {"meaning": m, "count": counts.get(m), "recorded": m in counts} for m in MEANINGS if m != "purgeable"
            ],
            "items": data["items"],
            "next_cursor": data["next_cursor"],
            "not_recorded": data["not_recorded"],
            "as_of": data["as_of"],
            **more,
        }
    )


def outbox_answer() -> schema.ProfileOutbox:
    return _outbox()[0]


def _outbox() -> tuple[schema.ProfileOutbox, Found | None]:
    data = read_rows("outbox")
    target = get_target()
    model, table, found = data["model"], data["table"], data["numbers"].found
    backlog = None
    if table is not None and table.groups and found is not None:
        by_role = panels.require(panels.load(list_backlogs, found, target.settings))
        backlog = [
            BacklogGroup(
                group=[None if v is None else str(v) for v in g.group_values], rows=g.rows, lag_seconds=g.lag_seconds
            )
            for g in by_role.get("outbox", [])
        ]
    answer = rows_answer(
        "outbox",
        data,
        schema.ProfileOutbox,
        numbers=None if data["absent"] else role_panel(model, "outbox", data["mine"]),
        by_group=backlog,
        by_group_columns=list(table.groups) if table else [],
        definitions=definitions(model),
    )
    assert isinstance(answer, schema.ProfileOutbox)
    return answer, found


def poison_answer() -> schema.ProfilePoison:
    return _poison()[0]


def _poison() -> tuple[schema.ProfilePoison, Found | None]:
    model = chosen(get_target().settings)
    table = role_table(model, "outbox")
    data = read_rows("outbox", min_attempts=POISON_MIN_ATTEMPTS) if records(table, "attempts") else None
    mine = data["mine"] if data else None
    recorded = bool(mine and mine.attempts_recorded)
    absent = data["absent"] if data else absent_words(model, "outbox", mine)
    note = None if recorded else (absent or not_recorded(model, "attempts", "outbox"))
    return schema.ProfilePoison(
        database=get_target().name,
        profile=model.name,
        library=model.library,
        table=mine.name if mine else None,
        poison_threshold=POISON_MIN_ATTEMPTS,
        recorded=recorded,
        note=note,
        items=data["items"] if data and recorded else [],
        next_cursor=data["next_cursor"] if data and recorded else None,
        as_of=datetime.now(timezone.utc),
    ), data["numbers"].found if data else None


def keys_page():
    data = read_rows("keys")
    return render(
        "profile_keys.html", "keys_panel", report=rows_answer("keys", data), **reading("keys", data["numbers"].found)
    )


def outbox_page():
    report, found = _outbox()
    return render("profile_outbox.html", "outbox_panel", report=report, **reading("outbox", found))


def poison_page():
    report, found = _poison()
    return render("profile_poison.html", "poison_panel", report=report, **reading("outbox", found))


def reading(role: str, found: Found | None) -> dict[str, Any]:
    """How the rows' columns read (their time units and zone, the identity's columns), as /tables/<role> reads them."""
    target = get_target()
    model = chosen(target.settings)
    table = role_table(model, role)
    if table is None or found is None:
        return {"times": {}, "zone": "UTC", "identity_columns": []}
    table = model.table_of(role, found.version)
    naming = found.naming
    return {
        "times": {named(t.column, naming): t.unit for t in table.times},
        "zone": zone_name(target.settings.library_timezone),
        "identity_columns": [named(c, naming) for c in table.identity],
    }


def key_identity(scope: str, key: str) -> str:
    """A key's row identity, where the library's keys table is told apart by two columns (a scope's and a key's);
    otherwise 404 naming the row's page, which takes the identity the library has."""
    model = chosen(get_target().settings)
    table = role_table(model, "keys")
    if table is None:
        abort(404, no_table(model, "keys"))
    if len(table.identity) != 2:
        abort(
            404,
            f"{model.library} tells its keys apart by {', '.join(table.identity)}, not by a scope and a key: "
            f"open the row at {url_for('table_rows.row_page', role='keys')}?id=<identity> (the identity is "
            f"a JSON array, as /tables/keys lists it)",
        )
    return json.dumps([scope, key])


def outbox_identity(outbox_id: Any) -> str:
    """An outbox row's identity where the library's outbox is told apart by one uuid column; otherwise 404 naming
    the row's page, which takes the identity the library has."""
    model = chosen(get_target().settings)
    table = role_table(model, "outbox")
    if table is None:
        abort(404, no_table(model, "outbox"))
    types = {c.name: c.types for c in table.columns}
    if len(table.identity) != 1 or types.get(table.identity[0]) != ("uuid",):
        abort(
            404,
            f"{model.library} tells its outbox rows apart by {', '.join(table.identity)}, not by one uuid: "
            f"open the row at {url_for('table_rows.row_page', role='outbox')}?id=<identity> (the identity is "
            f"a JSON array, as /tables/outbox lists it)",
        )
    return json.dumps([str(outbox_id)])
