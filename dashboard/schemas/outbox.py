"""The outbox: its backlog and row list (`GET /api/v1/outbox`), the likely poison rows
(`GET /api/v1/outbox/poison`), one row (`GET /api/v1/outbox/{outbox_id}`), and parking and releasing a row
(`POST /api/v1/outbox/park`, `POST /api/v1/outbox/release`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import (
    CURSOR_TEXT,
    NO_NUL,
    Answer,
    Body,
    Error,
    Limit,
    OutboxAttemptCount,
    PositiveInt,
    Query,
    Reason,
    cursor_of,
)
from idemdash.dashboard.schemas.examples import ACTOR, AS_OF, OUTBOX_ROW
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS, EventTypeSummary, OutboxDetail, OutboxRow
from idemdash.queries.outbox_actions import ParkedRow

# an outbox status as the table stores it: any text (a status type of the application's own), not only pending
# and published
StatusText = Annotated[str, Field(min_length=1, max_length=100, pattern=NO_NUL)]
EventType = Annotated[str, Field(min_length=1, max_length=2000, pattern=NO_NUL)]


class OutboxQuery(Query):
    status: StatusText = Field(
        "pending", description="Rows with this status (pending: oldest first; any other status: newest first)."
    )
    event_type: EventType | None = Field(None, description="Only rows of this event type (the whole name).")
    cursor: Annotated[str, CURSOR_TEXT, cursor_of("outbox")] | None = None
    limit: Limit = 50


class PoisonQuery(Query):
    min_attempts: int = Field(
        POISON_MIN_ATTEMPTS,
        ge=POISON_MIN_ATTEMPTS,
        le=1_000_000,
        description=f"Pending rows with at least this many delivery attempts (at least {POISON_MIN_ATTEMPTS}).",
    )
    cursor: Annotated[str, CURSOR_TEXT, cursor_of("poison")] | None = None
    limit: Limit = 50


class RowPageQuery(Query):
    """The row's page only: the audit_id of the action just done there, to say so."""

    done: PositiveInt | None = Field(None, description="The audit_id of the park or release just done.")


# a newer pending row, delivered yet to no one (the relay is behind)
_NEWER_ROW: dict[str, Any] = {
    **OUTBOX_ROW,
    "outbox_id": "3abc765a-f414-49d7-8d44-37d120832146",
    "event_type": "order.created",
    "aggregate_id": "fd8bf3f0-4c35-4992-af43-7d7bc40fc1d5",
    "idempotency_key": "cart/6/checkout-0006",
    "attempt_count": 0,
    "created_at": "2026-11-24T21:17:48.135812+00:00",
    "age_seconds": 1800.215747,
    "payload": {"order_id": "fd8bf3f0-4c35-4992-af43-7d7bc40fc1d5", "total_cents": 1999, "currency": "EUR"},
}
_ROW_NOW: dict[str, Any] = {**OUTBOX_ROW, "key_exists": True}


class OutboxRowState(Answer):
    """A row and whether its key is still there (queries.outbox.OutboxDetail), as the base of the answers that add
    to it: a pydantic model cannot extend a dataclass."""

    outbox_id: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    idempotency_scope: str
    idempotency_key: str
    status: str
    attempt_count: int
    created_at: datetime
    published_at: datetime | None
    age_seconds: float = Field(description="Seconds since created_at.")
    payload: Any = Field(description="The event's payload (JSON).")
    key_exists: bool = Field(description="The key the row was written under is still in the key table.")


class OutboxRowPage(OutboxRowState):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [{**_ROW_NOW, "key_url": "/keys/create_order/cart/0/checkout-0000", "likely_poison": True}]
        },
    )

    key_url: str = Field(description="The page of the key the row was written under.")
    likely_poison: bool = Field(description=f"Pending with {POISON_MIN_ATTEMPTS} or more delivery attempts.")


class Backlog(Answer):
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float | None = Field(
        description="The lag: age of the oldest pending row that is not likely poison "
        "(the same as healthy_lag_seconds and every other page's lag)."
    )
    pending_many_attempts: int = Field(
        description="Pending rows with many_attempts_threshold attempts or more (likely poison)."
    )
    oldest_healthy_at: datetime | None
    healthy_lag_seconds: float | None = Field(
        description="Age of the oldest pending row that is not likely poison: how far behind the relay is."
    )
    oldest_poison_at: datetime | None
    poison_oldest_seconds: float | None = Field(description="Age of the oldest likely poison row, null when none.")
    many_attempts_threshold: int


class Precomputed(Answer):
    computed_at: datetime
    computed_ms: float


class OutboxPage(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [OUTBOX_ROW, _NEWER_ROW],
                    "next_cursor": None,
                    "status": "pending",
                    "event_type": None,
                    "as_of": AS_OF,
                    "backlog": {
                        "pending": 2,
                        "oldest_pending_at": "2026-11-24T18:47:48.135812+00:00",
                        "lag_seconds": 1800.215747,
                        "pending_many_attempts": 1,
                        "oldest_healthy_at": "2026-11-24T21:17:48.135812+00:00",
                        "healthy_lag_seconds": 1800.215747,
                        "oldest_poison_at": "2026-11-24T18:47:48.135812+00:00",
                        "poison_oldest_seconds": 10800.215747,
                        "many_attempts_threshold": 3,
                    },
                    "by_event_type": [
                        {
                            "event_type": "invoice.sent",
                            "pending": 1,
                            "oldest_pending_at": OUTBOX_ROW["created_at"],
                            "lag_seconds": 10800.215747,
                            "max_attempts": 14,
                            "published_24h": 0,
                        }
                    ],
                    "many_attempts": [OUTBOX_ROW],
                    "parked": [
                        {
                            "outbox_id": "a97db497-e978-48d1-830b-e40ba1f785cc",
                            "event_type": "order.created",
                            "idempotency_scope": "create_order",
                            "idempotency_key": "cart/3/checkout-0003",
                            "attempt_count": 0,
                            "created_at": "2026-11-24T21:27:48.135812+00:00",
                            "parked_by": ACTOR,
                            "parked_at": "2026-11-24T21:47:48.344335+00:00",
                            "reason": "INC-5: payload fails the schema",
                        }
                    ],
                    "definitions": {
                        "backlog.pending": "outbox rows with status = 'pending'",
                        "backlog.lag_seconds": "age of the oldest pending row that is not likely poison "
                        "(attempt_count < 3): "
                        "the lag every page shows",
                        "backlog.poison_oldest_seconds": "age of the oldest pending row with attempt_count >= 3",
                        "many_attempts": "pending rows with attempt_count >= 3, most attempts first, at most 20",
                        "items": "rows with the requested status (pending: oldest first; any other status: newest "
                        "first)",
                    },
                    "precomputed": {},
                }
            ]
        },
    )

    items: list[OutboxRow]
    next_cursor: str | None
    status: str
    event_type: str | None
    as_of: datetime
    backlog: Backlog
    by_event_type: list[EventTypeSummary]
    many_attempts: list[OutboxRow]
    parked: list[ParkedRow] = Field(description="Rows an operator parked, oldest first, with who, when and why.")
    definitions: dict[str, str] = Field(description="What each number counts, by its dotted name.")
    precomputed: dict[str, Precomputed] = Field(
        description="The sections read from a rollup (backlog, by_event_type), when "
        "computed and how long that took; empty when all live."
    )


class PoisonPage(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [OUTBOX_ROW],
                    "next_cursor": None,
                    "min_attempts": 3,
                    "definitions": {
                        "items": "pending outbox rows with attempt_count >= min_attempts (at least 3), oldest first"
                    },
                }
            ]
        },
    )

    items: list[OutboxRow]
    next_cursor: str | None
    min_attempts: int
    definitions: dict[str, str]


class MoveBody(Body):
    outbox_id: UUID = Field(description="The outbox row's id.")
    reason: Reason = Field(description="Why: for the audit log and the next person on call.")
    expected_attempt_count: OutboxAttemptCount | None = Field(
        None,
        description="The attempt_count you saw. Park: refused (409) if the "
        "row is no longer likely poison (fewer than "
        f"min(this, {POISON_MIN_ATTEMPTS}) attempts); the relay "
        "retrying it since is no reason. Release: refused if it "
        "changed.",
    )


class Moved(OutboxRowState):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={"examples": [{**_ROW_NOW, "status": "parked", "audit_id": 16}]},
    )

    audit_id: int = Field(description="The audit row of this action.")


class OutboxConflict(Error):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "error": "the row is parked now, not pending: someone or the relay changed it since you looked. "
                    "Nothing was "
                    "changed.",
                    "row": {**_ROW_NOW, "status": "parked"},
                }
            ]
        },
    )

    row: OutboxDetail | None = Field(
        None,
        description="The row as it is now (absent when the refusal is not "
        "about the row's state: the relay holds it, or the table "
        "refuses status 'parked').",
    )
