"""The overview (`GET /api/v1/overview`) on a database of another library's profile: each role table's numbers by the
library's own states, its other tables, its last purges and trends."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict, Field

from idemdash.core.profiles.dimensions import Role
from idemdash.core.profiles.shape import Meaning
from idemdash.dashboard.schemas.common import Answer
from idemdash.dashboard.schemas.examples import AS_OF, PURGE_RUN, without_pacing
from idemdash.dashboard.schemas.overview import LastPurge
from idemdash.dashboard.schemas.profile_examples import (
    ABSENT_PANEL,
    HEAD,
    NO_KEYS,
    OUTBOX_PANEL,
)
from idemdash.queries.snapshots import TrendPoint


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
                    **HEAD,
                    "problem": None,
                    "roles": [
                        ABSENT_PANEL,
                        OUTBOX_PANEL,
                        {
                            **ABSENT_PANEL,
                            "role": "inbox",
                            "no_table": NO_KEYS.replace("keys table", "inbox table"),
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
