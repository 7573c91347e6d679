"""The answers of hotspots, workers and suppression on a database whose tables record
no operator's decisions (every profile but the reference tables): read through the profile's role tables and their
dimensions (core/profiles/dimensions.py), with null and a note for what the library does not record. Each route
answers either its reference shape or this one (``profile`` tells them apart: only this one has it). The search's
and the stuck breakdown's: schemas/profile_search.py, schemas/profile_breakdown.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field, RootModel

from idemdash.core.profiles.dimensions import Role
from idemdash.dashboard.schemas.common import Answer, Window
from idemdash.dashboard.schemas.hotspots import Hotspots, HotspotWindow
from idemdash.dashboard.schemas.suppression import Suppression
from idemdash.dashboard.schemas.workers import Workers


def reference_examples(model: type[Answer]) -> list[Any]:
    """A union answer's example: its reference variant's (the other variant's is in its own schema)."""
    extra = model.model_config.get("json_schema_extra")
    assert isinstance(extra, dict)
    return list(extra["examples"])  # type: ignore[arg-type]  # the examples are a list of dicts


class Recorded(Answer):
    recorded: bool = Field(description="Whether the library records it for this table.")
    columns: list[str] = Field(description="The library's column(s) that hold it (empty when not recorded).")
    note: str | None = Field(
        description='Where not recorded: what the page shows in its place, e.g. "who holds a '
        'row is not recorded by Spring Modulith … for its outbox table".'
    )


class Profiled(Answer):
    profile: str = Field(description="The database's profile (its library).")
    library: str
    problem: str | None = Field(description="Why the library's tables were not found (then no table is read).")
    as_of: datetime


# -- hotspots ----------------------------------------------------------------------------------------------------


class AttemptGroup(Answer):
    group: list[Any] = Field(description="The values of the table's group columns.")
    rows: int
    stuck: int | None = Field(description="Of them, stuck by the library's own rule; null where it records none.")
    max_attempts: int


class AttemptOwner(Answer):
    owner: str | None = Field(description="The owner column's value, as text.")
    rows: int
    stuck: int | None
    max_attempts: int


class AttemptRow(Answer):
    identity: str = Field(description="The row's identity (a JSON array of its identity columns), as its URL has it.")
    attempts: int
    group: list[Any] | None
    owner: str | None
    stuck: bool | None = Field(description="Stuck by the library's rule; null where it records none.")
    url: str = Field(description="The row's page (/tables/<role>/row?id=…).")


class TableHotspots(Answer):
    role: Role
    table: str | None = Field(description="The library's table in this role; null where it has none.")
    attempts: Recorded
    group: Recorded
    owner: Recorded
    window_applies: bool = Field(
        description="Whether the window narrows the rows: only where the table records "
        "when a row last changed; otherwise every row counts."
    )
    by_group: list[AttemptGroup] | None = Field(
        description="Rows with at least min_attempts attempts per group, "
        "most first; null where attempts or groups are not "
        "recorded."
    )
    by_owner: list[AttemptOwner] | None
    top_rows: list[AttemptRow] | None = Field(
        description="The rows with the most attempts; null where attempts are not recorded."
    )
    truncated: bool = Field(description="More groups or owners exist than are listed.")


class ProfileHotspots(Profiled):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "profile": "wolverine",
                    "library": "Wolverine durable messaging (PostgreSQL)",
                    "problem": None,
                    "as_of": "2026-11-24T21:47:48.511039+00:00",
                    "window": "24h",
                    "since": None,
                    "min_attempts": 5,
                    "tables": [
                        {
                            "role": "inbox",
                            "table": "wolverine_incoming_envelopes",
                            "attempts": {"recorded": True, "columns": ["attempts"], "note": None},
                            "group": {
                                "recorded": False,
                                "columns": [],
                                "note": "a group per row is not recorded by "
                                "Wolverine durable messaging (PostgreSQL) for its inbox table",
                            },
                            "owner": {"recorded": True, "columns": ["owner_id"], "note": None},
                            "window_applies": False,
                            "by_group": None,
                            "by_owner": [{"owner": "7", "rows": 3, "stuck": 2, "max_attempts": 9}],
                            "top_rows": [
                                {
                                    "identity": '["1c2d…"]',
                                    "attempts": 9,
                                    "group": None,
                                    "owner": "7",
                                    "stuck": True,
                                    "url": "/tables/inbox/row?id=%5B%221c2d%E2%80%A6%22%5D",
                                }
                            ],
                            "truncated": False,
                        }
                    ],
                    "definitions": {"hotspot": "a row whose attempts column is at least min_attempts"},
                }
            ]
        },
    )

    window: HotspotWindow
    since: datetime | None = Field(
        description="The window's start; null for all, or where no table records when a row last changed."
    )
    min_attempts: int
    tables: list[TableHotspots] = Field(description="Each role (keys, outbox, inbox).")
    definitions: dict[str, str]


class HotspotsAnswer(RootModel[Hotspots | ProfileHotspots]):
    """The reference tables' hotspots, or another profile's (it has ``profile``)."""

    model_config = ConfigDict(json_schema_extra={"examples": reference_examples(Hotspots)})


# -- workers -----------------------------------------------------------------------------------------------------


class ProfileWorker(Answer):
    name: str = Field(description="The owner column's value, as text.")
    role: Role
    last_seen: datetime | None = Field(
        description="The latest change time among its rows counted here; null where the table records none."
    )
    in_progress: int | None = Field(
        description="Rows it holds in the library's in progress state (stuck ones may "
        "be among them); null where the library records none."
    )
    stuck: int | None
    failed: int | None = Field(description="Failed rows, in the window where the table records when a row changed.")
    done: int | None = Field(description="Done rows, in the window where the table records when a row changed.")
    url: str = Field(description="Its rows in the worst state it has (/tables/<role>?state=…).")


class TableOwners(Answer):
    role: Role
    table: str | None
    owner: Recorded
    window_applies: bool


class ProfileWorkers(Profiled):
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
                    "window": "1h",
                    "since": "2026-11-24T20:47:48.511039+00:00",
                    "items": [
                        {
                            "name": "executor-2",
                            "role": "keys",
                            "last_seen": "2026-11-24T21:40:02.101000+00:00",
                            "in_progress": 4,
                            "stuck": 3,
                            "failed": 1,
                            "done": 120,
                            "url": "/tables/keys?state=stuck",
                        }
                    ],
                    "tables": [
                        {
                            "role": "keys",
                            "table": "workflow_status",
                            "owner": {"recorded": True, "columns": ["executor_id"], "note": None},
                            "window_applies": True,
                        }
                    ],
                    "truncated": False,
                    "limit": 200,
                    "definitions": {
                        "owners": "every owner holding a row in progress or stuck now, or owning a row that failed "
                        "or was done in the window"
                    },
                }
            ]
        },
    )

    window: Window
    since: datetime = Field(description="The window's start (as_of minus the window).")
    items: list[ProfileWorker] = Field(description="Worst first: most stuck, then most failed, then by name.")
    tables: list[TableOwners]
    truncated: bool
    limit: int
    definitions: dict[str, str]


class WorkersAnswer(RootModel[Workers | ProfileWorkers]):
    """The reference tables' workers, or another profile's owners (it has ``profile``)."""

    model_config = ConfigDict(json_schema_extra={"examples": reference_examples(Workers)})


# -- suppression -------------------------------------------------------------------------------------------------


class ProfileSuppression(Profiled):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "profile": "cap",
                    "library": "DotNetCore.CAP (PostgreSQL)",
                    "problem": None,
                    "as_of": "2026-11-24T21:47:48.511039+00:00",
                    "window": "24h",
                    "recorded": False,
                    "note": "suppressed duplicates is not recorded by DotNetCore.CAP (PostgreSQL)",
                }
            ]
        },
    )

    window: Window
    recorded: Literal[False] = Field(description="No table of the library records the duplicates it refused.")
    note: str


class SuppressionAnswer(RootModel[Suppression | ProfileSuppression]):
    """The reference tables' suppression numbers, or the words for a library that records none."""

    model_config = ConfigDict(json_schema_extra={"examples": reference_examples(Suppression)})
