"""The on-call pages' answers on a database whose tables do not record an operator's decisions (another library's:
core/profiles): `GET /api/v1/overview`, `/keys`, `/outbox`, `/outbox/poison` and `/inbox` answer these
profile-shaped models there, the reference tables' own models on the reference tables. Each number is counted by the
library's own states; a number the library does not record is null, and ``not_recorded`` says so in words."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import CURSOR_TEXT, NO_NUL, Answer, Limit, Query, cursor_of
from idemdash.dashboard.schemas.examples import AS_OF, PURGE_RUN, without_pacing
from idemdash.dashboard.schemas.overview import LastPurge
from idemdash.dashboard.schemas.tables import BacklogGroup, Meaning, RowItem
from idemdash.queries.snapshots import TrendPoint

Role = Literal["keys", "outbox", "inbox"]
# a /keys?status= of the reference tables, as the meaning a library records (needs_review is the reference's own)
STATUS_MEANINGS: dict[str, Meaning] = {
    "stuck": "stuck",
    "processing": "in progress",
    "succeeded": "done",
    "failed_retryable": "failed",
    "failed_final": "failed",
}
Group = Annotated[str, Field(min_length=1, max_length=1000, pattern=NO_NUL)]

# the examples: a Spring Modulith v2 database (tests/test_profile_on_call.py's rows), trimmed
_SPRING = "Spring Modulith event publication registry"
_HEAD: dict[str, Any] = {"database": "events", "profile": "spring-modulith", "library": _SPRING}
_NOTES: dict[str, Any] = {
    "pending": "the registry's own 'incomplete'",
    "in progress": "no owner or lease is recorded",
    "stuck": "the staleness monitor's rule, measured from publication_date",
    "done": "exactly the rows that are not incomplete",
    "failed": "findFailedPublications",
    "purgeable": "completed before the retention",
}
_COUNTS: dict[str, Any] = {"pending": 2, "in progress": 1, "stuck": 1, "done": 3, "failed": 1, "purgeable": 2}
_NO_KEYS = (
    f"{_SPRING} has no keys table: its tables are event_publication (outbox), event_publication_archive (archive)"
)
OUTBOX_PANEL: dict[str, Any] = {
    "role": "outbox",
    "table": "event_publication",
    "no_table": None,
    "stuck": 1,
    "in_progress": 1,
    "pending": 2,
    "failed": 1,
    "done": 3,
    "done_24h": 1,
    "lag_seconds": 3600.5,
    "poison": 1,
    "poison_oldest_seconds": 2.1,
    "poison_threshold": 3,
    "not_recorded": {},
    "states": [
        {"meaning": m, "count": n, "recorded": True, "note": _NOTES[m], "computed_at": None, "estimated": False}
        for m, n in _COUNTS.items()
    ],
}
ABSENT_PANEL: dict[str, Any] = {
    "role": "keys",
    "table": None,
    "no_table": _NO_KEYS,
    "stuck": None,
    "in_progress": None,
    "pending": None,
    "failed": None,
    "done": None,
    "done_24h": None,
    "lag_seconds": None,
    "poison": None,
    "poison_oldest_seconds": None,
    "poison_threshold": 3,
    "not_recorded": {f: _NO_KEYS for f in ("stuck", "in_progress", "pending", "failed", "done", "poison", "done_24h")},
    "states": [
        {
            "meaning": m,
            "count": None,
            "recorded": False,
            "note": f"{m} is not recorded by {_SPRING}",
            "computed_at": None,
            "estimated": False,
        }
        for m in _COUNTS
    ],
}
ROW: dict[str, Any] = {
    "identity": '["0b8e4f1c-3c55-4f8e-9a57-6c0d2f1e7a10"]',
    "row": {
        "id": "0b8e4f1c-3c55-4f8e-9a57-6c0d2f1e7a10",
        "listener_id": "l",
        "event_type": "t",
        "publication_date": "2026-11-24T20:47:48.141880+09:00",
        "completion_date": None,
        "status": "PROCESSING",
        "completion_attempts": 0,
        "last_resubmission_date": None,
    },
}
ROWS: dict[str, Any] = {
    **_HEAD,
    "role": "outbox",
    "table": "event_publication",
    "no_table": None,
    "state": "pending",
    "group": None,
    "group_column": None,
    "tabs": [{"meaning": m, "count": n, "recorded": True} for m, n in _COUNTS.items() if m != "purgeable"],
    "items": [ROW],
    "next_cursor": None,
    "not_recorded": {"group": f"a group per row is not recorded by {_SPRING} for its outbox table"},
    "as_of": AS_OF,
}


class MeaningCount(Answer):
    meaning: Meaning
    count: int | None = Field(description="Rows in this state now; null: the library does not record it.")
    recorded: bool
    note: str = Field(description="What it means for this library, or the words saying it is not recorded.")
    computed_at: datetime | None = Field(
        None, description="When the scheduler counted it (a state slow to count live); null: counted now."
    )
    estimated: bool = Field(False, description="The planner's estimate, not a count.")


class RolePanel(Answer):
    """One role's numbers (keys, outbox, inbox), each by the library's own states."""

    role: Role
    table: str | None = Field(
        description="The table's name in the database; null: the library has no table of this role (no_table says so)."
    )
    no_table: str | None = Field(
        description="Where the database has no table of this role (the library has none, or "
        "its optional one is not here): the words saying so."
    )
    stuck: int | None
    in_progress: int | None
    pending: int | None
    failed: int | None
    done: int | None
    done_24h: int | None = Field(
        description="Done rows whose done time (the one the library records when it "
        "finished a row) is within the last 24 hours; null: it records none."
    )
    lag_seconds: float | None = Field(
        description="How long the oldest pending row that is not likely poison has "
        "waited (by the table's first time column); null: none pending, "
        "or no time recorded."
    )
    poison: int | None = Field(
        description="Pending rows with poison_threshold attempts or more (likely poison), "
        "counted apart from the lag; null: the library records no attempts."
    )
    poison_oldest_seconds: float | None
    poison_threshold: int
    not_recorded: dict[str, str] = Field(
        description="Each field above the library does not record, with the words saying so (never 0)."
    )
    states: list[MeaningCount] = Field(description="The six meanings, in the same order for every table.")


class OtherTable(Answer):
    """A table of a role of the library's own (Wolverine's dead letters, Spring Modulith's archive): its states."""

    role: str
    table: str
    states: list[MeaningCount] = Field(description="The meanings the library records for it.")


class ProfileOverview(Answer):
    """The overview of a database whose tables are another library's (no operator decisions recorded)."""

    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    **_HEAD,
                    "problem": None,
                    "roles": [
                        ABSENT_PANEL,
                        OUTBOX_PANEL,
                        {
                            **ABSENT_PANEL,
                            "role": "inbox",
                            "no_table": _NO_KEYS.replace("keys table", "inbox table"),
                            "not_recorded": {},
                        },
                    ],
                    "other_tables": [
                        {
                            "role": "archive",
                            "table": "event_publication_archive",
                            "states": [
                                {
                                    "meaning": "purgeable",
                                    "count": 1,
                                    "recorded": True,
                                    "note": "completed before the retention",
                                    "computed_at": None,
                                    "estimated": False,
                                }
                            ],
                        }
                    ],
                    "last_purges": [without_pacing(PURGE_RUN)],
                    "trends": [],
                    "definitions": {
                        "lag_seconds": "age of the oldest pending row with fewer than 3 attempts (not likely poison)"
                    },
                    "as_of": AS_OF,
                }
            ]
        },
    )

    database: str
    profile: str
    library: str
    problem: str | None = Field(
        description="Why the library's tables were not found where the configuration points; the roles are then empty."
    )
    roles: list[RolePanel] = Field(description="keys, outbox and inbox, in that order.")
    other_tables: list[OtherTable] = Field(
        description="The library's tables of other roles found here (dead "
        "letters, an archive, nodes), with the meanings it records."
    )
    last_purges: list[LastPurge] | None = Field(
        description="The newest purge runs; null: none can be read (no idemdash schema in this database yet)."
    )
    trends: list[TrendPoint] = Field(
        description="Metric snapshots of the last 24 h where stored; empty: none stored for this database."
    )
    definitions: dict[str, str]
    as_of: datetime


class ProfileRowsQuery(Query):
    state: Meaning | None = Field(
        None,
        description="Rows in this state, as the library defines it (default: the "
        "page's own, stuck for keys, pending for the outbox).",
    )
    status: Literal["stuck", "processing", "succeeded", "failed_retryable", "failed_final"] | None = Field(
        None, description="A status of the reference tables, read as the meaning it stands for (a runbook's link)."
    )
    group: Group | None = Field(
        None,
        description="Only rows of this group (the table's first group column, as "
        "text); where the library records groups.",
    )
    cursor: Annotated[str, CURSOR_TEXT, cursor_of("profile-rows")] | None = None
    limit: Limit = 50


class ProfileTab(Answer):
    meaning: Meaning
    count: int | None
    recorded: bool


class ProfileRows(Answer):
    """One page of a role's rows in one state, for a library's table: `/keys` and `/outbox` there."""

    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    **ROWS,
                    "role": "keys",
                    "table": None,
                    "no_table": _NO_KEYS,
                    "state": "stuck",
                    "tabs": [{"meaning": m, "count": None, "recorded": False} for m in _COUNTS if m != "purgeable"],
                    "items": [],
                    "not_recorded": {"rows": _NO_KEYS},
                }
            ]
        },
    )

    database: str
    profile: str
    library: str
    role: Role
    table: str | None
    no_table: str | None
    state: Meaning
    group: str | None
    group_column: str | None = Field(
        description="The column `group` filters on; null: the library records no group (not_recorded says so)."
    )
    tabs: list[ProfileTab]
    items: list[RowItem] = Field(
        description="Rows as the library stored them (payloads on the row's page, "
        "/api/v1/tables/<role>/row?id=<identity>)."
    )
    next_cursor: str | None
    not_recorded: dict[str, str]
    as_of: datetime


class ProfileOutbox(ProfileRows):
    """The outbox of a library's database: its numbers, its backlog by group, and one page of rows in a state."""

    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    **ROWS,
                    "numbers": OUTBOX_PANEL,
                    "by_group": None,
                    "by_group_columns": [],
                    "definitions": {"poison": "pending rows with 3 or more attempts (likely poison), counted apart"},
                }
            ]
        },
    )

    numbers: RolePanel | None = Field(description="Null where the library has no outbox (no_table says so).")
    by_group: list[BacklogGroup] | None = Field(
        description="Rows not done by the table's group columns, the longest waiting first; null: no group recorded."
    )
    by_group_columns: list[str]
    definitions: dict[str, str]


class ProfilePoison(Answer):
    """A library outbox's likely poison rows: pending, with poison_threshold attempts or more."""

    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    **_HEAD,
                    "table": "event_publication",
                    "poison_threshold": 3,
                    "recorded": True,
                    "note": None,
                    "items": [{**ROW, "row": {**ROW["row"], "status": "PUBLISHED", "completion_attempts": 4}}],
                    "next_cursor": None,
                    "as_of": AS_OF,
                }
            ]
        },
    )

    database: str
    profile: str
    library: str
    table: str | None
    poison_threshold: int
    recorded: bool = Field(
        description="False: the library records no attempts or no pending state (note says so); items is then empty."
    )
    note: str | None
    items: list[RowItem]
    next_cursor: str | None
    as_of: datetime


class ProfileInboxQuery(Query):
    consumer: Group | None = Field(
        None, description="Only groups one of whose values (a consumer, an event name) contains this text (any case)."
    )


class GroupVolume(Answer):
    group: list[str | None]
    rows: int
    oldest_seconds: float | None = Field(description="Age of its oldest row still in the table.")
    newest_seconds: float | None = Field(description="Age of its newest row: when the consumer last recorded one.")


class ProfileInbox(Answer):
    """The inbox of a library's database: its numbers, and its rows by consumer (group)."""

    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "database": "billing",
                    "profile": "cap",
                    "library": "DotNetCore.CAP",
                    "numbers": {
                        **OUTBOX_PANEL,
                        "role": "inbox",
                        "table": "received",
                        "stuck": 0,
                        "in_progress": None,
                        "not_recorded": {"in_progress": "in progress is not recorded by DotNetCore.CAP"},
                    },
                    "no_table": None,
                    "consumer": None,
                    "group_columns": ["Name", "Group"],
                    "groups": [
                        {
                            "group": ["orders.created", "billing"],
                            "rows": 120,
                            "oldest_seconds": 86400.0,
                            "newest_seconds": 12.5,
                        }
                    ],
                    "not_recorded": {},
                    "as_of": AS_OF,
                }
            ]
        },
    )

    database: str
    profile: str
    library: str
    numbers: RolePanel | None = Field(description="Null where the library has no inbox (no_table says so).")
    no_table: str | None
    consumer: str | None
    group_columns: list[str]
    groups: list[GroupVolume] | None = Field(
        description="By the table's group columns, the most recent first (at "
        "most 50); null: no group recorded (not_recorded says so)."
    )
    not_recorded: dict[str, str]
    as_of: datetime
