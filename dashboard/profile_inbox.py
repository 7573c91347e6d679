"""`/inbox` and `GET /api/v1/inbox` on a database whose inbox is another library's: its numbers, and its rows by
consumer (the table's group columns) with how long ago each consumer's oldest and newest rows came
(dashboard/inbox.py dispatches, dashboard/one_model.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from idemdash.core.profiles.dimensions import not_recorded, records, role_table
from idemdash.dashboard import contract, panels
from idemdash.dashboard.one_model import chosen
from idemdash.dashboard.profile_numbers import absent_words, role_panel
from idemdash.dashboard.schemas import profile_pages as schema
from idemdash.dashboard.targets import get_target
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS
from idemdash.queries.profile_numbers import read_role_numbers
from idemdash.queries.profile_pages import list_group_volumes


def answer() -> schema.ProfileInbox:
    consumer = contract.query(schema.ProfileInboxQuery).consumer
    target = get_target()
    model = chosen(target.settings)
    table = role_table(model, "inbox")

    def read(conn: Any) -> tuple[Any, Any]:
        numbers = read_role_numbers(conn, target.settings, ("inbox",), POISON_MIN_ATTEMPTS)
        groups = (
            list_group_volumes(conn, numbers.found, "inbox", target.settings, contains=consumer)
            if numbers.found is not None and table is not None
            else None
        )
        return numbers, groups

    numbers, groups = panels.require(panels.load(read))
    mine = next((n for n in numbers.roles if n.role == "inbox"), None)
    # no tables where the configuration points (the problem says where detect finds them), or no inbox among them
    absent = numbers.problem if numbers.found is None else absent_words(model, "inbox", mine)
    missing = {} if records(table, "group") else {"groups": not_recorded(model, "group", "inbox")}
    return schema.ProfileInbox(
        database=target.name,
        profile=model.name,
        library=model.library,
        numbers=None if absent else role_panel(model, "inbox", mine),
        no_table=absent,
        consumer=consumer,
        group_columns=list(table.groups) if table else [],
        groups=[
            schema.GroupVolume(
                group=[None if v is None else str(v) for v in g.group_values],
                rows=g.rows,
                oldest_seconds=g.oldest_seconds,
                newest_seconds=g.newest_seconds,
            )
            for g in groups
        ]
        if groups is not None
        else None,
        not_recorded=missing,
        as_of=datetime.now(timezone.utc),
    )
