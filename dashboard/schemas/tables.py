"""The database's tables as its profile reads them (`GET /api/v1/tables`): every state of every table, counted
by the library's own definition, or said to be not recorded by it."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict, Field

from idemdash.core.profiles.shape import Meaning
from idemdash.dashboard.schemas.common import Answer
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
