"""A library's own documented actions on one row of its tables (`POST /api/v1/tables/<role>/row/<action>`): the body,
the answer, and the 409."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import Answer, Body, Error, Reason
from idemdash.dashboard.schemas.table_rows import Identity

_ID = '["0b6f0c7e-2d1c-4c55-9a8e-5f7f0d3c1a20"]'
_ENVELOPE: dict[str, Any] = {
    "id": "0b6f0c7e-2d1c-4c55-9a8e-5f7f0d3c1a20",
    "status": "Incoming",
    "owner_id": 0,
    "attempts": 1,
    "message_type": "OrderPlaced",
    "received_at": "rabbitmq://queue/orders",
    "execution_time": None,
    "keep_until": None,
    "body": "\\x7b7d",
}
Seen = Annotated[str | int | bool | None, Field(description="A value as the row's page shows it.")]


class LibraryActionBody(Body):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "examples": [
                {"id": _ID, "reason": "INC-88: node 7 was terminated and never came back", "expected": {"owner_id": 7}}
            ]
        },
    )

    id: Identity
    reason: Reason = Field(description="Why: for the audit log and the next person on call.")
    expected: dict[str, Seen] = Field(
        description="The values you saw of the columns the action names (the row "
        "page's `actions[].expected`): refused (409) if any changed."
    )


class LibraryActionDone(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "database": "orders",
                    "profile": "wolverine",
                    "role": "inbox",
                    "table": "wolverine_incoming_envelopes",
                    "action": "release-dead-node",
                    "identity": _ID,
                    "audit_id": 42,
                    "row": _ENVELOPE,
                }
            ]
        },
    )

    database: str
    profile: str
    role: str
    table: str
    action: str
    identity: str
    audit_id: int = Field(description="The audit row of this action.")
    row: dict[str, Any] = Field(description="The row as it is now, every column by its own name.")


class LibraryActionConflict(Error):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "error": "owner_id is 0 now, you saw 7: the row changed since you looked. Nothing was changed.",
                    "row": _ENVELOPE,
                }
            ]
        },
    )

    row: dict[str, Any] | None = Field(None, description="The row as it is now (absent when the library holds it).")
