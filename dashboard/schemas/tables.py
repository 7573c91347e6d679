"""The database's tables as its profile reads them (`GET /api/v1/tables`): every state of every table, counted
by the library's own definition, or said to be not recorded by it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PositiveInt

from idemdash.core.profiles.shape import Meaning
from idemdash.dashboard.schemas.common import CURSOR_TEXT, NO_NUL, Answer, Limit, Query, cursor_of
from idemdash.dashboard.schemas.examples import AS_OF
from idemdash.queries.replication import LogicalSlot


class StateCount(Answer):
    meaning: Meaning
    recorded: bool = Field(
        description="False: the library records nothing this state could be read from (count is null, never 0)."
    )
    count: int | None = Field(description="Rows in this state now; null when not recorded, or the table is absent.")
    note: str = Field(description="What the state means for this library, where it says more than its name.")
    computed_at: datetime | None = Field(
        None,
        description="When the scheduler counted it: a state slow to count "
        "live on a large table (the rollup job); null: counted "
        "now.",
    )
    estimated: bool = Field(
        False,
        description="True: counting it took the scheduler longer than its budget for "
        "one state (20 s; a whole 100M-row table), and count is the "
        "planner's estimate from the table's statistics, not a count.",
    )


class BacklogGroup(Answer):
    group: list[str | None] = Field(description="The group's values of the table's backlog_by columns, in order.")
    rows: int = Field(description="Its rows the library has not finished.")
    lag_seconds: float | None = Field(
        description="How long its oldest row has waited, by the table's first time "
        "column (CAP: Added, in LIBRARY_TIMEZONE); null without one."
    )


class TableStates(Answer):
    role: str = Field(
        description="What the table is for: keys, inbox, outbox, or one of the library's own "
        "(outbox_state, archive, dead_letters, nodes)."
    )
    name: str | None = Field(
        description="The table's name in the database; null: an optional table the database does not have."
    )
    states: list[StateCount] = Field(description="Each of the six meanings, in the same order for every table.")
    backlog_by: list[str] = Field(
        default_factory=list,
        description="The columns its backlog is broken down by (CAP's Name, and Group for "
        "its received table); empty: the profile declares none.",
    )
    backlog: list[BacklogGroup] | None = Field(
        None,
        description="Its rows not done, by backlog_by, the longest "
        "waiting first (at most 20 groups); null: no "
        "breakdown, or it was not read in time.",
    )


class Tables(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "database": "orders",
                    "profile": "spring-modulith",
                    "library": "Spring Modulith event publication registry",
                    "version": "v2",
                    "app_schema": "public",
                    "problem": None,
                    "tables": [
                        {
                            "role": "outbox",
                            "name": "event_publication",
                            "states": [
                                {
                                    "meaning": "pending",
                                    "recorded": True,
                                    "count": 4,
                                    "note": "the registry's own 'incomplete'; a v1-era row (NULL status) counts until "
                                    "it has a completion "
                                    "date",
                                },
                                {
                                    "meaning": "in progress",
                                    "recorded": True,
                                    "count": 1,
                                    "note": "no owner or lease is recorded",
                                },
                                {
                                    "meaning": "stuck",
                                    "recorded": True,
                                    "count": 1,
                                    "note": "the staleness monitor's rule, measured from publication_date",
                                },
                                {
                                    "meaning": "done",
                                    "recorded": True,
                                    "count": 2,
                                    "note": "exactly the rows that are not incomplete",
                                },
                                {
                                    "meaning": "failed",
                                    "recorded": True,
                                    "count": 2,
                                    "note": "findFailedPublications: FAILED, and v1-era rows never completed",
                                },
                                {
                                    "meaning": "purgeable",
                                    "recorded": True,
                                    "count": 2,
                                    "note": "deletePublicationsOlderThan; never a FAILED row, even with a completion "
                                    "date",
                                },
                            ],
                        }
                    ],
                    "cleanup": "None by default (completion mode 'update' keeps every row).",
                    "read_only": True,
                    "as_of": AS_OF,
                }
            ]
        },
    )

    database: str = Field(description="The database's name (IDEMDASH_CONFIG), `default` for a single one.")
    profile: str = Field(description="Its configured profile (IDEMDASH_PROFILE, or `profile` in IDEMDASH_CONFIG).")
    library: str = Field(description="Whose tables these are, in words.")
    version: str | None = Field(
        description="The version of the library's tables found (Spring Modulith v1 or v2); "
        "null where the library has one."
    )
    app_schema: str = Field(description="The schema the tables were looked for in (app_schema).")
    problem: str | None = Field(
        description="Why no tables were found where the configuration points, with what to set; null when they were."
    )
    tables: list[TableStates] = Field(description="Every table of the profile, in its order (empty with a problem).")
    cleanup: str = Field(description="The library's own cleanup rule, in words.")
    read_only: bool = Field(
        description="True for another library's tables where none of the library's own actions "
        "is enabled (LIBRARY_ACTIONS): every action is refused there."
    )
    slots: list[LogicalSlot] | None = Field(
        None,
        description="For a table a logical replication slot reads from the WAL "
        "(Debezium's outbox): this database's logical slots and how "
        "far behind each is; null for every other profile.",
    )
    as_of: datetime


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
