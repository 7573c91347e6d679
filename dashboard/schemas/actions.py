"""The key actions' bodies and answers: `POST /api/v1/keys/reclassify` (one key) and
`POST /api/v1/keys/reclassify-bulk` (preview, then confirm)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal
from uuid import UUID

from pydantic import BeforeValidator, ConfigDict, Field, RootModel, ValidationInfo, field_validator, model_validator

from idemdash.core.fill_in import contradicting_ids, contradiction_message
from idemdash.core.statuses import BulkOutcome, Outcome
from idemdash.dashboard.schemas.common import (
    Answer,
    AttemptCount,
    Body,
    BodyDuration,
    Count,
    Error,
    HoldFor,
    Key,
    Name,
    Reason,
    Timestamp,
    require_to_confirm,
)
from idemdash.dashboard.schemas.examples import RETRYABLE_KEY
from idemdash.dashboard.schemas.key_page import KeyDetail
from idemdash.queries.reclassify_bulk import BulkSampleRow, BulkScopeCount


class _Reclassify(Body):
    scope: Name = Field(description="Idempotency scope.")
    key: Key = Field(description="Idempotency key.")
    reason: Reason = Field(description="Why: for the audit log and the next person on call.")
    expected_attempt_count: AttemptCount | None = Field(
        None, description="The attempt_count you saw: refused (409) if it changed."
    )
    expected_locked_until: Timestamp | None = Field(
        None,
        description="The lease end you saw (null: there was no lease): refused (409) if it changed. Checked "
        "only when given.",
    )


class SafeToRetry(_Reclassify):
    to: Literal["safe_to_retry"]


class Abandoned(_Reclassify):
    to: Literal["abandoned"]
    override_evidence: bool = Field(
        False,
        description="Abandon although an outbox row shows the effect committed "
        "(a known false positive): audited as an override.",
    )


class AlreadySucceeded(_Reclassify):
    to: Literal["already_succeeded"]
    # before response_body, which is checked against them
    result_ref_type: Name | None = None
    result_ref_id: UUID | None = Field(None, description="The effect's id (the column is uuid).")
    response_body: Any = Field(
        description="The response retries get replayed (any JSON value). With result_ref_id, "
        "an id field of the body (id, or <result_ref_type>Id / _id) holding "
        "another UUID is refused (400): it names another effect."
    )

    @field_validator("response_body")
    @classmethod
    def _ids_agree(cls, body: Any, info: ValidationInfo) -> Any:
        # another key's response copied in would be replayed to this client: refused where the ids tell
        ref_id = info.data.get("result_ref_id")
        found = contradicting_ids(body, info.data.get("result_ref_type"), ref_id)
        if found and ref_id is not None:
            raise ValueError(contradiction_message(found, ref_id))
        return body


class NeedsReview(_Reclassify):
    to: Literal["needs_review"]
    hold_for: HoldFor = Field(86400.0, description="How long the key is held for review (default 1 day).")


class ReclassifyBody(
    RootModel[Annotated[SafeToRetry | Abandoned | AlreadySucceeded | NeedsReview, Field(discriminator="to")]]
):
    """One stuck key's new state; the fields besides the common ones depend on ``to``."""

    # a field of another outcome, said as why it does not belong to this one
    field_hints: ClassVar[dict[str, str]] = {
        "override_evidence": "applies to abandoned only: safe_to_retry with an outbox row would run a committed "
        "effect a second time",
        "hold_for": "applies to needs_review only",
        "response_body": "applies to already_succeeded only",
        "result_ref_type": "applies to already_succeeded only",
        "result_ref_id": "applies to already_succeeded only",
    }


class Reclassified(KeyDetail):
    model_config = ConfigDict(
        from_attributes=True, frozen=True, json_schema_extra={"examples": [{**RETRYABLE_KEY, "audit_id": 8}]}
    )

    audit_id: int = Field(description="The audit row of this decision.")


class KeyConflict(Error):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "error": "the key is failed_retryable now, not stuck: alice marked it safe to retry 12 s ago. "
                    "Nothing was "
                    "overwritten.",
                    "key": RETRYABLE_KEY,
                }
            ]
        },
    )

    key: KeyDetail | None = Field(None, description="The key as it is now (null: it is gone).")


# -- bulk -------------------------------------------------------------------------------------------------------


def _bulk_outcome(value: Any) -> Any:
    if value in ("already_succeeded",):
        raise ValueError(
            "bulk to must be safe_to_retry, abandoned or needs_review (already_succeeded needs one "
            "key at a time: each key's response_body is its own)"
        )
    return value


class BulkFilterBody(Body):
    scope: Name | None = None
    claimed_by: Name | None = None
    min_attempts: AttemptCount | None = None
    overdue: BodyDuration | None = Field(None, description="Lease ended at least this long ago.")
    suggested: Outcome | None = None


# to confirm (no "preview": true), reason and as_of are required and not null; hold_for is for needs_review only
_REQUIRED_WHEN: Any = [
    {
        "if": {"properties": {"preview": {"const": True}}, "required": ["preview"]},
        "else": {
            "required": ["reason", "as_of"],
            "properties": {"reason": {"type": "string"}, "as_of": {"type": "string"}},
        },
    },
    {"if": {"properties": {"to": {"const": "needs_review"}}}, "else": {"properties": {"hold_for": {"type": "null"}}}},
]


class BulkBody(Body):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"allOf": _REQUIRED_WHEN})

    filter: BulkFilterBody = Field(
        default_factory=lambda: BulkFilterBody.model_validate({}), description="Which stuck keys (all: none)."
    )
    to: Annotated[BulkOutcome, BeforeValidator(_bulk_outcome)]
    preview: bool = Field(False, description="true: count and sample, change nothing, and record the preview.")
    reason: Reason | None = Field(None, description="Why (required to confirm).")
    as_of: Timestamp | None = Field(None, description="The as_of of the preview you confirm (required to confirm).")
    all_scopes: bool = Field(False, description="Confirm a filter without a scope: every scope.")
    previewed: Count | None = Field(
        None,
        description="The count the preview you confirm showed (its count): the "
        "confirmation changes no more keys than that; 409 when it "
        "is not the recorded preview's.",
    )
    hold_for: HoldFor | None = Field(None, description="needs_review only: how long each key is held (default 1 d).")

    @model_validator(mode="after")
    def _required_when(self) -> BulkBody:
        require_to_confirm(self)
        if self.hold_for is not None and self.to != "needs_review":
            raise ValueError("hold_for applies to needs_review only")
        return self


class BulkFilterAnswer(Answer):
    scope: str | None
    claimed_by: str | None
    min_attempts: int | None
    overdue_seconds: float | None
    suggested: Outcome | None = None


class BulkPreview(Answer):
    as_of: datetime = Field(description="Send it back to confirm what this preview showed.")
    to: BulkOutcome
    count: int
    left_out_committed: int = Field(description="Keys left out because an outbox row shows the effect committed.")
    cap: int
    filter: BulkFilterAnswer
    filter_text: str
    all_scopes: bool
    by_scope: list[BulkScopeCount]
    sample: list[BulkSampleRow]


class BulkResult(Answer):
    bulk_id: str
    audit_id: int
    as_of: datetime
    to: BulkOutcome
    filter: BulkFilterAnswer
    filter_text: str
    previewed: int
    changed: int
    skipped: int
    still_eligible: int
    cap: int
    capped: bool


_BULK_FILTER: dict[str, Any] = {
    "scope": "refund",
    "claimed_by": None,
    "min_attempts": None,
    "overdue_seconds": None,
    "suggested": None,
}


class BulkAnswer(RootModel[BulkPreview | BulkResult]):
    """A preview's counts, or a confirmation's result."""

    # a preview (a confirmation answers a BulkResult: bulk_id, audit_id, previewed, changed, skipped, ...)
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "as_of": "2026-11-24T21:47:48.594128+00:00",
                    "to": "needs_review",
                    "count": 5,
                    "left_out_committed": 0,
                    "cap": 1000,
                    "filter": _BULK_FILTER,
                    "filter_text": "stuck keys in scope 'refund' (exact matches)",
                    "all_scopes": False,
                    "by_scope": [{"scope": "refund", "keys": 5}],
                    "sample": [
                        {
                            "scope": "refund",
                            "key": "cart/11/checkout-0011",
                            "claimed_by": "worker-3",
                            "attempt_count": 6,
                            "locked_until": "2026-11-24T21:31:48.159412+00:00",
                        },
                        {
                            "scope": "refund",
                            "key": "cart/8/checkout-0008",
                            "claimed_by": "worker-0",
                            "attempt_count": 3,
                            "locked_until": "2026-11-24T21:34:48.158931+00:00",
                        },
                    ],
                }
            ]
        }
    )
