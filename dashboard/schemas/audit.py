"""The audit log (`GET /api/v1/audit`) and the notes (`POST /api/v1/keys/notes`): who did what, when and why."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

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

AuditCursor = Annotated[str, CURSOR_TEXT, cursor_of("audit")]

ActionKind = Literal["reclassify", "reclassify-bulk", "purge", "purge-dry-run", "purge-cancel", "note",
                     "outbox-park", "outbox-release"]


class AuditEntry(Answer):
    audit_id: int
    at: datetime
    actor: str
    action: str = Field(description="The kind of action, then ':' and what it acted on or became.")
    scope: str | None
    key: str | None
    from_status: str | None
    to_status: str | None
    reason: str | None
    evidence: Any = Field(description="What the operator saw when acting (JSON), or null.")
    detail: Any = Field(description="The action's own record (JSON), or null.")
    parent_id: int | None = Field(description="The bulk action this per-key row belongs to.")
    children: int = Field(description="Per-key rows under this entry (a bulk action); 0 otherwise.")


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
    items: list[AuditEntry]
    next_cursor: str | None


class Note(Answer):
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
    text: NoteText = Field(description="What you found or did, for the next person on call (trimmed; it must say "
                                       "something).")
