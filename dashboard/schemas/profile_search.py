"""A search (`GET /api/v1/search`) on a database of another library's profile: the rows whose identity is the text,
in each role table of the profile, and the owners of that name."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, RootModel

from idemdash.core.profiles.dimensions import Role
from idemdash.dashboard.schemas.common import Answer
from idemdash.dashboard.schemas.profile_dimensions import Profiled, reference_examples
from idemdash.dashboard.schemas.search import SearchResult


class RowHit(Answer):
    role: Role
    table: str
    identity: str
    url: str = Field(description="The row's page (/tables/<role>/row?id=…).")


class SearchedTable(Answer):
    role: Role
    table: str
    compared: list[str] = Field(
        description="The columns compared to q: 'identity' (q is a row's whole identity, a "
        "JSON array), an identity column an index starts with (exact), and "
        "'<column> (prefix)' for a text one."
    )


class OwnerHit(Answer):
    role: Role
    owner: str
    url: str = Field(description="/workers, where each owner's rows are counted.")


class ProfileSearch(Profiled):
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
                    "q": "wf-42",
                    "match": "exact",
                    "items": [
                        {
                            "role": "keys",
                            "table": "workflow_status",
                            "identity": '["wf-42"]',
                            "url": "/tables/keys/row?id=%5B%22wf-42%22%5D",
                        }
                    ],
                    "workers": [],
                    "searched": [{"role": "keys", "table": "workflow_status", "compared": ["workflow_uuid"]}],
                    "notes": [],
                }
            ]
        },
    )

    q: str
    match: Literal["exact", "none"] = Field(
        description="exact: rows found (by identity or an identity column, equal to or starting with q); none: nothing."
    )
    items: list[RowHit]
    workers: list[OwnerHit] = Field(description="Owners named q exactly, where the table records an owner.")
    searched: list[SearchedTable]
    notes: list[str] = Field(description="What was not searched, and why (a role the library has no table for).")


class SearchAnswer(RootModel[SearchResult | ProfileSearch]):
    """The reference tables' search, or another profile's rows by identity (it has ``profile``)."""

    model_config = ConfigDict(json_schema_extra={"examples": reference_examples(SearchResult)})
