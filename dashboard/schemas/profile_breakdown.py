"""The stuck breakdown (`GET /api/v1/keys/breakdown`) on a database of another library's profile: its stuck keys by
the keys table's group columns and owner, where the library records them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, RootModel

from idemdash.dashboard.schemas.common import Answer
from idemdash.dashboard.schemas.keys import KeyBreakdown
from idemdash.dashboard.schemas.profile_dimensions import Profiled, Recorded, reference_examples


class BreakdownGroup(Answer):
    group: Any = Field(description="The values of the table's group columns (a JSON array).")
    count: int


class BreakdownOwner(Answer):
    owner: str | None
    count: int


class ProfileBreakdown(Profiled):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "profile": "dbos",
                    "library": "DBOS Transact (system database)",
                    "problem": None,
                    "as_of": "2026-11-24T21:47:48.511039+00:00",
                    "status": "stuck",
                    "table": "workflow_status",
                    "note": None,
                    "total": 3,
                    "too_many": False,
                    "cap": 10000,
                    "group": {
                        "recorded": False,
                        "columns": [],
                        "note": "a group per row is not recorded by DBOS Transact (system database) for its keys table",
                    },
                    "owner": {"recorded": True, "columns": ["executor_id"], "note": None},
                    "by_group": None,
                    "by_owner": [{"owner": "executor-2", "count": 3}],
                }
            ]
        },
    )

    status: Literal["stuck"]
    table: str | None = Field(description="The library's keys table; null where it has none (note says so).")
    note: str | None = Field(description="Where there is nothing to break down: why.")
    total: int | None
    too_many: bool
    cap: int
    group: Recorded
    owner: Recorded
    by_group: list[BreakdownGroup] | None = Field(description="Most first; null where groups are not recorded.")
    by_owner: list[BreakdownOwner] | None = Field(description="Most first; null where owners are not recorded.")


class BreakdownAnswer(RootModel[KeyBreakdown | ProfileBreakdown]):
    """The reference tables' breakdown of a key list, or another profile's stuck rows (it has ``profile``)."""

    model_config = ConfigDict(json_schema_extra={"examples": reference_examples(KeyBreakdown)})
