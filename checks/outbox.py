"""The outbox contract operators rely on: its ``status`` column accepts ``parked`` (docs/interface.md, The outbox
contract), so a poison row can be parked. A CHECK constraint or an enum type that lacks the value refuses it."""

from __future__ import annotations

import psycopg

from idemdash.checks.finding import OK, WARN, Check, qualified
from idemdash.core.settings import Settings
from idemdash.queries import Tables
from idemdash.queries.outbox_actions import (
    fix_status_check,
    fix_status_enum,
    get_outbox_status_type,
    list_outbox_status_checks,
)


def check_outbox_parked(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(j) The outbox's status accepts 'parked'."""
    if get_outbox_status_type(conn, tables) is None:
        return []  # no outbox table or status column: the tables check says so
    table = qualified(tables, "outbox")
    refusing = [c for c in list_outbox_status_checks(conn, tables) if "'parked'" not in c.definition]
    if not refusing:
        return [
            Check(
                "outbox.parked",
                OK,
                f"{table}.status accepts 'parked'",
                "Operators can park a poison outbox row (the relay publishes only pending rows).",
            )
        ]
    findings = []
    for found in refusing:
        if found.name.startswith("enum "):
            type_name = found.name.removeprefix("enum ")
            fix = fix_status_enum(type_name) + ";"
            what = f"its enum type {type_name} ({found.definition})"
        else:
            fix = fix_status_check(tables, found.name, found.definition) + ";"
            what = f"CHECK constraint {found.name}: {found.definition}"
        findings.append(
            Check(
                "outbox.parked",
                WARN,
                f"{table}.status refuses 'parked': operators cannot park a poison row",
                "Parking a row sets status = 'parked' so the relay (which publishes only pending rows) leaves it "
                "alone; "
                f"{what} refuses that value, so the park action answers 409. Allow the value (the relay's contract "
                "does not change: parked rows are simply not pending).",
                fix_sql=fix,
            )
        )
    return findings
