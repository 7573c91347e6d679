"""Parking (or releasing) many outbox rows at once (`POST /api/v1/outbox/park-bulk`): a preview, then its
confirmation, as the keys' bulk reclassification."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field, RootModel, model_validator

from idemdash.dashboard.schemas.common import Answer, Body, Count, Reason, Timestamp, require_to_confirm
from idemdash.dashboard.schemas.outbox import EventType
from idemdash.queries.outbox_bulk import BulkRow, EventTypeCount

_AS_OF = "2026-11-24T21:47:48.594128+00:00"

# to confirm (no "preview": true), reason and as_of are required and not null
_REQUIRED_WHEN: Any = [
    {
        "if": {"properties": {"preview": {"const": True}}, "required": ["preview"]},
        "else": {
            "required": ["reason", "as_of"],
            "properties": {"reason": {"type": "string"}, "as_of": {"type": "string"}},
        },
    },
]


class OutboxBulkFilterBody(Body):
    event_type: EventType | None = Field(
        None, description="Only rows of this event type (the whole name); none: every event type."
    )


class OutboxBulkBody(Body):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"allOf": _REQUIRED_WHEN})

    action: Literal["park", "release"] = Field(
        "park", description="park: likely poison pending rows (3 or more attempts) → parked; release: parked → pending."
    )
    filter: OutboxBulkFilterBody = Field(
        default_factory=lambda: OutboxBulkFilterBody.model_validate({}), description="Which rows (all: none)."
    )
    preview: bool = Field(False, description="true: count and sample, change nothing, and record the preview.")
    reason: Reason | None = Field(None, description="Why (required to confirm).")
    as_of: Timestamp | None = Field(None, description="The as_of of the preview you confirm (required to confirm).")
    previewed: Count | None = Field(
        None,
        description="The count the preview you confirm showed: the confirmation "
        "moves no more rows than that; 409 when it is not the "
        "recorded preview's.",
    )

    @model_validator(mode="after")
    def _required_when(self) -> OutboxBulkBody:
        require_to_confirm(self)
        return self


class OutboxBulkFilter(Answer):
    event_type: str | None


class OutboxBulkPreview(Answer):
    as_of: datetime = Field(description="Send it back to confirm what this preview showed.")
    action: Literal["park", "release"]
    count: int = Field(description="Rows the action would move now.")
    cap: int = Field(
        description="The most one confirmation moves (IDEMDASH_BULK_MAX_KEYS): the preview records "
        "the oldest rows up to it."
    )
    filter: OutboxBulkFilter
    filter_text: str
    by_event_type: list[EventTypeCount]
    sample: list[BulkRow]


class OutboxBulkResult(Answer):
    bulk_id: str
    audit_id: int = Field(description="The bulk's one audit entry; each row's entry points to it (parent_id).")
    as_of: datetime
    action: Literal["park", "release"]
    filter: OutboxBulkFilter
    filter_text: str
    previewed: int
    changed: int
    skipped: int = Field(
        description="Rows the preview showed that were not moved: no longer pending and likely "
        "poison (a park) or parked (a release), or held by the relay throughout."
    )
    still_eligible: int = Field(description="Rows the preview showed that still qualify and were not moved.")


class OutboxBulkAnswer(RootModel[OutboxBulkPreview | OutboxBulkResult]):
    """A preview's counts, or a confirmation's result."""

    # a preview (a confirmation answers an OutboxBulkResult: bulk_id, audit_id, previewed, changed, skipped, ...)
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "as_of": _AS_OF,
                    "action": "park",
                    "count": 1,
                    "cap": 1000,
                    "filter": {"event_type": "legacy.unroutable"},
                    "filter_text": "likely poison pending outbox rows of event type 'legacy.unroutable'",
                    "by_event_type": [{"event_type": "legacy.unroutable", "rows": 1}],
                    "sample": [
                        {
                            "outbox_id": "0b6d7c1e-5c59-4f0e-9a43-7d2f3c1a9e55",
                            "event_type": "legacy.unroutable",
                            "idempotency_scope": "create_order",
                            "idempotency_key": "cart/3/checkout-0003",
                            "attempt_count": 2160,
                            "created_at": "2026-11-21T21:47:48.135812+00:00",
                        }
                    ],
                }
            ]
        }
    )
