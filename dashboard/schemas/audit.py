"""The audit log (`GET /api/v1/audit`) and the notes (`POST /api/v1/keys/notes`): who did what, when and why."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field

from idemdash.core.statuses import ActionKind
from idemdash.dashboard.schemas.common import (
    CURSOR_TEXT,
    Answer,
    Body,
    Key,
    Limit,
    Moment,
    Name,
    NoteText,
    PositiveInt,
    Query,
    cursor_of,
)
from idemdash.dashboard.schemas.examples import ACTOR, OUTBOX_ID
from idemdash.queries.audit import AuditEntry

AuditCursor = Annotated[str, CURSOR_TEXT, cursor_of("audit")]


class AuditQuery(Query):
    scope: Name | None = Field(None, description="Only this scope.")
    key: Key | None = Field(None, description="Only this key (its history includes the per-key rows of bulk actions).")
    actor: Name | None = Field(None, description="Only this person (or the scheduler).")
    parent: PositiveInt | None = Field(None, description="The per-key rows of this bulk action (its audit_id).")
    action: ActionKind | None = Field(None, description="The kind of action.")
    since: Moment | None = Field(None, description="From this time, or this long ago (24h).")
    until: Moment | None = Field(None, description="Up to this time, or this long ago.")
    cursor: AuditCursor | None = None
    limit: Limit = 50


class AuditPage(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {
                            "audit_id": 7,
                            "at": "2026-11-24T21:47:48.344335+00:00",
                            "actor": ACTOR,
                            "action": "outbox-park",
                            "scope": "create_order",
                            "key": "cart/0/checkout-0000",
                            "from_status": "pending",
                            "to_status": "parked",
                            "reason": "INC-5: payload fails the schema",
                            "evidence": [],
                            "detail": {"outbox_id": OUTBOX_ID, "event_type": "invoice.sent", "attempt_count": 14},
                            "parent_id": None,
                            "children": 0,
                        },
                        {
                            "audit_id": 6,
                            "at": "2026-11-24T21:47:48.339589+00:00",
                            "actor": ACTOR,
                            "action": "reclassify:abandoned",
                            "scope": "create_order",
                            "key": "cart/6/checkout-0006",
                            "from_status": "processing",
                            "to_status": "failed_final",
                            "reason": "INC-7: the outbox row is a test event written by the load test",
                            "evidence": [
                                "1 outbox row exists for this scope and key (order.created), first written "
                                "2026-11-24T21:17:48+00:00: the business effect committed, only the completion is "
                                "missing."
                            ],
                            "detail": {
                                "claimed_by": "worker-2",
                                "hold_seconds": None,
                                "locked_until": "2026-11-24T21:36:48.158572+00:00",
                                "attempt_count": 1,
                                "result_ref_id": None,
                                "result_ref_type": None,
                                "override_evidence": True,
                            },
                            "parent_id": None,
                            "children": 0,
                        },
                    ],
                    "next_cursor": "WyIyMDI2LTExLTI0VDIxOjQ3OjQ4LjMzOTU4OSswMDowMCIsNl0",
                }
            ]
        },
    )

    items: list[AuditEntry]
    next_cursor: str | None


class Note(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "note_id": 2,
                    "scope": "create_order",
                    "key": "cart/0/checkout-0000",
                    "at": "2026-11-24T21:47:48.608899+00:00",
                    "author": ACTOR,
                    "text": "INC-5: provider says the charge did not go through",
                    "audit_id": 15,
                }
            ]
        },
    )

    note_id: int
    scope: str
    key: str
    at: datetime
    author: str
    text: str
    audit_id: int | None = Field(description="The audit row written with the note.")


class NoteBody(Body):
    scope: Name = Field(description="The key's idempotency scope.")
    key: Key = Field(description="The idempotency key.")
    text: NoteText = Field(
        description="What you found or did, for the next person on call (trimmed; it must say something)."
    )
