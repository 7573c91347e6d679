"""The outbox: its backlog and row list (`GET /api/v1/outbox`), the likely poison rows
(`GET /api/v1/outbox/poison`), one row (`GET /api/v1/outbox/{outbox_id}`), and parking and releasing a row
(`POST /api/v1/outbox/park`, `POST /api/v1/outbox/release`)."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import Field

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
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS

# an outbox status as the table stores it: any text (a status type of the application's own), not only pending
# and published
StatusText = Annotated[str, Field(min_length=1, max_length=100, pattern=NO_NUL)]
EventType = Annotated[str, Field(min_length=1, max_length=2000, pattern=NO_NUL)]


class OutboxQuery(Query):
    status: StatusText = Field("pending", description="Rows with this status (pending: oldest first; any other "
                                                      "status: newest first).")
    event_type: EventType | None = Field(None, description="Only rows of this event type (the whole name).")
    cursor: Annotated[str, CURSOR_TEXT, cursor_of("outbox")] | None = None
    limit: Limit = 50


class PoisonQuery(Query):
    min_attempts: int = Field(POISON_MIN_ATTEMPTS, ge=POISON_MIN_ATTEMPTS, le=1_000_000,
                              description=f"Pending rows with at least this many delivery attempts (at least "
                                          f"{POISON_MIN_ATTEMPTS}).")
    cursor: Annotated[str, CURSOR_TEXT, cursor_of("poison")] | None = None
    limit: Limit = 50


class RowPageQuery(Query):
    """The row's page only: the audit_id of the action just done there, to say so."""

    done: PositiveInt | None = Field(None, description="The audit_id of the park or release just done.")


class OutboxItem(Answer):
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


class OutboxRowState(OutboxItem):
    key_exists: bool = Field(description="The key the row was written under is still in the key table.")


class OutboxRowPage(OutboxRowState):
    key_url: str = Field(description="The page of the key the row was written under.")
    likely_poison: bool = Field(description=f"Pending with {POISON_MIN_ATTEMPTS} or more delivery attempts.")


class Backlog(Answer):
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float | None = Field(description="Age of the oldest pending row.")
    pending_many_attempts: int = Field(description="Pending rows with many_attempts_threshold attempts or more "
                                                   "(likely poison).")
    oldest_healthy_at: datetime | None
    healthy_lag_seconds: float | None = Field(description="Age of the oldest pending row that is not likely poison: "
                                                          "how far behind the relay is.")
    oldest_poison_at: datetime | None
    many_attempts_threshold: int


class EventTypeRow(Answer):
    event_type: str
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float | None
    max_attempts: int | None
    published_24h: int


class ParkedItem(Answer):
    outbox_id: str
    event_type: str
    idempotency_scope: str
    idempotency_key: str
    attempt_count: int
    created_at: datetime
    parked_by: str | None
    parked_at: datetime | None
    reason: str | None


class Precomputed(Answer):
    computed_at: datetime
    computed_ms: float


class OutboxPage(Answer):
    items: list[OutboxItem]
    next_cursor: str | None
    status: str
    event_type: str | None
    as_of: datetime
    backlog: Backlog
    by_event_type: list[EventTypeRow]
    many_attempts: list[OutboxItem]
    parked: list[ParkedItem] = Field(description="Rows an operator parked, oldest first, with who, when and why.")
    definitions: dict[str, str] = Field(description="What each number counts, by its dotted name.")
    precomputed: dict[str, Precomputed] = Field(description="The sections read from a rollup (by_event_type), when "
                                                            "computed and how long that took; empty when all live.")


class PoisonPage(Answer):
    items: list[OutboxItem]
    next_cursor: str | None
    min_attempts: int
    definitions: dict[str, str]


class MoveBody(Body):
    outbox_id: UUID = Field(description="The outbox row's id.")
    reason: Reason = Field(description="Why: for the audit log and the next person on call.")
    expected_attempt_count: OutboxAttemptCount | None = Field(None,
                                               description="The attempt_count you saw: refused (409) if it changed.")


class Moved(OutboxRowState):
    audit_id: int = Field(description="The audit row of this action.")


class OutboxConflict(Error):
    row: OutboxRowState | None = Field(None, description="The row as it is now (absent when the refusal is not "
                                                         "about the row's state: the relay holds it, or the table "
                                                         "refuses status 'parked').")
