"""One key (`GET /api/v1/keys/{scope}/{key}`, `GET /api/v1/key`): the key with its detail, its outbox events, history,
notes and suggested outcome; and the parameters that name a key."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from idemdash.core.statuses import Outcome
from idemdash.dashboard.schemas.audit import Note
from idemdash.dashboard.schemas.common import (
    Answer,
    Key,
    Name,
    PositiveInt,
    Query,
)
from idemdash.dashboard.schemas.examples import ACTOR, KEY_DETAIL, OUTBOX_ROW
from idemdash.dashboard.schemas.keys import KeyItem
from idemdash.queries.audit import AuditEntry
from idemdash.queries.keys import KeyOutboxRow


class KeyRef(Query):
    scope: Name = Field(description="Idempotency scope.")
    key: Key = Field(description="Idempotency key.")


class KeyPageQuery(Query):
    """The key page after an action: which audit row or note to point out."""

    done: PositiveInt | None = None
    noted: PositiveInt | None = None


class RunbookQuery(Query):
    scope: Name | None = None
    key: Key | None = None


class KeyDetail(KeyItem):
    response_body: Any = Field(description="The stored response (JSON) a retry receives, or null.")
    result_ref_type: str | None
    result_ref_id: str | None
    failure_code: str | None
    failure_message: str | None
    stuck: bool


class KeyAnswer(KeyDetail):
    purgeable_from: datetime | None = Field(
        description="When the keys purge may delete this key; null while it "
        "is processing or failed_retryable (never purged)."
    )


class Suggestion(Answer):
    to: Outcome | None = Field(description="The outcome the evidence points to, or null (not stuck).")
    evidence: list[str]


class KeyPage(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "key": {**KEY_DETAIL, "purgeable_from": None},
                    "outbox_events": [
                        {
                            name: OUTBOX_ROW[name]
                            for name in (
                                "outbox_id",
                                "event_type",
                                "aggregate_type",
                                "aggregate_id",
                                "status",
                                "attempt_count",
                                "created_at",
                                "published_at",
                                "payload",
                            )
                        }
                    ],
                    "audit": [
                        {
                            "audit_id": 5,
                            "at": "2026-11-24T21:47:48.334892+00:00",
                            "actor": ACTOR,
                            "action": "note",
                            "scope": "create_order",
                            "key": "cart/0/checkout-0000",
                            "from_status": None,
                            "to_status": None,
                            "reason": "INC-5: looking at the payment provider",
                            "evidence": {},
                            "detail": {"note_id": 1},
                            "parent_id": None,
                            "children": 0,
                        }
                    ],
                    "notes": [
                        {
                            "note_id": 1,
                            "scope": "create_order",
                            "key": "cart/0/checkout-0000",
                            "at": "2026-11-24T21:47:48.334892+00:00",
                            "author": ACTOR,
                            "text": "INC-5: looking at the payment provider",
                            "audit_id": 5,
                        }
                    ],
                    "suggestion": {
                        "to": "already_succeeded",
                        "evidence": [
                            "1 outbox row exists for this scope and key (invoice.sent), first written "
                            "2026-11-24T18:47:48+00:00: "
                            "the business effect committed, only the completion is missing."
                        ],
                    },
                    "runbook_url": "/runbook/stuck-keys?scope=create_order&key=cart/0/checkout-0000",
                }
            ]
        },
    )

    key: KeyAnswer
    outbox_events: list[KeyOutboxRow]
    audit: list[AuditEntry]
    notes: list[Note]
    suggestion: Suggestion
    runbook_url: str
