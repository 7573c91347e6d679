"""The on-call pages' answers on a database whose tables do not record an operator's decisions (another library's:
core/profiles): `GET /api/v1/overview`, `/keys`, `/outbox`, `/outbox/poison` and `/inbox` answer these
profile-shaped models there, the reference tables' own models on the reference tables. Each number is counted by the
library's own states; a number the library does not record is null, and ``not_recorded`` says so in words."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from idemdash.core.profiles.dimensions import Role
from idemdash.core.profiles.shape import Meaning
from idemdash.dashboard.schemas.common import CURSOR_TEXT, NO_NUL, Answer, Limit, Query, cursor_of
from idemdash.dashboard.schemas.examples import AS_OF
from idemdash.dashboard.schemas.profile_examples import (
    COUNTS,
    HEAD,
    NO_KEYS,
    OUTBOX_PANEL,
    ROW,
    ROWS,
)
from idemdash.dashboard.schemas.profile_overview import RolePanel
from idemdash.dashboard.schemas.table_rows import RowItem
from idemdash.dashboard.schemas.tables import BacklogGroup

# a /keys?status= of the reference tables, as the meaning a library records (needs_review is the reference's own)
STATUS_MEANINGS: dict[str, Meaning] = {
    "stuck": "stuck",
    "processing": "in progress",
    "succeeded": "done",
    "failed_retryable": "failed",
    "failed_final": "failed",
}
Group = Annotated[str, Field(min_length=1, max_length=1000, pattern=NO_NUL)]


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
                    "no_table": NO_KEYS,
                    "state": "stuck",
                    "tabs": [{"meaning": m, "count": None, "recorded": False} for m in COUNTS if m != "purgeable"],
                    "items": [],
                    "not_recorded": {"rows": NO_KEYS},
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
                    **HEAD,
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
