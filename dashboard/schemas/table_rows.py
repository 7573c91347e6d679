"""A table's rows as its profile reads them (`GET /api/v1/tables/{role}`), one row (`GET /api/v1/tables/{role}/row`)
with its state, facts and the actions and commands that apply to it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PositiveInt

from idemdash.core.profiles.shape import Meaning
from idemdash.dashboard.schemas.common import CURSOR_TEXT, NO_NUL, Answer, Limit, Query, cursor_of
from idemdash.dashboard.schemas.examples import AS_OF

Role = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[a-z_]+$")]


Identity = Annotated[
    str,
    Field(
        min_length=1,
        max_length=10_000,
        pattern=NO_NUL,
        description="A row's identity as a list gives it: a JSON array of the table's identity columns, as text.",
    ),
]


_SPRING_ROW: dict[str, Any] = {
    "id": "3f0c3e4a-5b7d-4e1f-9a42-0c1d2e3f4a5b",
    "status": "PROCESSING",
    "event_type": "OrderPlaced",
    "listener_id": "shipping.ShippingListener.on",
    "completion_date": None,
    "completion_attempts": 1,
    "publication_date": "2026-11-24T20:47:48.351559+00:00",
    "last_resubmission_date": None,
}


class RowsQuery(Query):
    state: Meaning = Field(description="Rows in this state, as the library defines it.")
    cursor: Annotated[str, CURSOR_TEXT, cursor_of("table-rows")] | None = None
    limit: Limit = 50


class RowItem(Answer):
    identity: str = Field(
        description="The row's identity: a JSON array of the table's identity columns, as text; "
        "its page is /tables/<role>/row?id=<identity>."
    )
    row: dict[str, Any] = Field(
        description="The row as the library stored it, every column by its own name, the payload left out."
    )


class Rows(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "database": "orders",
                    "profile": "spring-modulith",
                    "role": "outbox",
                    "table": "event_publication",
                    "state": "stuck",
                    "note": "the staleness monitor's rule, measured from publication_date",
                    "order_column": "publication_date",
                    "items": [{"identity": '["3f0c3e4a-5b7d-4e1f-9a42-0c1d2e3f4a5b"]', "row": _SPRING_ROW}],
                    "next_cursor": None,
                    "as_of": AS_OF,
                }
            ]
        },
    )

    database: str
    profile: str
    role: str
    table: str
    state: Meaning
    note: str = Field(description="What the state means for this library.")
    order_column: str | None = Field(
        description="The time column rows are ordered by, oldest first (rows without "
        "it last); null: by identity (the table records no time)."
    )
    items: list[RowItem]
    next_cursor: str | None
    as_of: datetime


class RowQuery(Query):
    id: Identity


class RowPageQuery(Query):
    """The row's page only: the audit_id of the library action just done there, to say so."""

    done: PositiveInt | None = Field(None, description="The audit_id of the action just done.")


class RowState(Answer):
    meaning: Meaning
    inside: bool = Field(description="Whether the row is in this state now.")
    note: str


class RowAction(Answer):
    name: str = Field(description="The action, as LIBRARY_ACTIONS names it; POST /api/v1/tables/<role>/row/<name>.")
    label: str
    does: str = Field(description="What it does, in the library's words.")
    source: str = Field(description="The library's source file that does it, at the commit idemdash follows.")
    enabled: bool = Field(description="Whether this database's LIBRARY_ACTIONS names it.")
    applies: bool = Field(description="Whether the row meets the library's condition for it now.")
    expected: dict[str, Any] = Field(
        description="The values the action is checked against, as the row holds them "
        "now: send them back as the body's expected."
    )


class RowFact(Answer):
    label: str
    text: str = Field(description="What the profile's rule says of this row (why it is stuck, its last step).")


class RowCommand(Answer):
    label: str
    command: str = Field(
        description="The library's own command for this row, its values shell-quoted; idemdash never runs it."
    )


class Row(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "database": "orders",
                    "profile": "spring-modulith",
                    "role": "outbox",
                    "table": "event_publication",
                    "identity": '["3f0c3e4a-5b7d-4e1f-9a42-0c1d2e3f4a5b"]',
                    "row": {**_SPRING_ROW, "serialized_event": '{"orderId": 1042}'},
                    "states": [
                        {"meaning": "pending", "inside": True, "note": "the registry's own 'incomplete'"},
                        {"meaning": "stuck", "inside": True, "note": "the staleness monitor's rule"},
                    ],
                    "actions": [],
                    "as_of": AS_OF,
                }
            ]
        },
    )

    database: str
    profile: str
    role: str
    table: str
    identity: str
    row: dict[str, Any] = Field(
        description="Every column as the library stored it (a payload longer than 64 KiB is cut there, and says so)."
    )
    states: list[RowState] = Field(
        description="Each state the library defines for this table, and whether the row is in it."
    )
    application_acts: str | None = Field(
        None, description="Where the library leaves acting on a row to the application: how the application does it."
    )
    actions: list[RowAction] = Field(
        description="The library's own documented actions on this table's rows (none for "
        "most libraries), whether enabled here and whether the row meets "
        "their condition."
    )
    facts: list[RowFact] = Field(
        default=[],
        description="What the profile tells of this row beyond its columns (why it is stuck, its last completed step).",
    )
    commands: list[RowCommand] = Field(
        default=[],
        description="The library's own commands for a row in its state "
        "(resume, cancel), to run with the library's tool.",
    )
    as_of: datetime
