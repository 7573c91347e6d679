"""The key lists (`GET /api/v1/keys`) with their tabs' counts and filters, a key's row as every list shows it, and
the breakdown of a tab by scope and worker (`GET /api/v1/keys/breakdown`). One key's page: schemas/key_page.py."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from idemdash.core.statuses import KeyListStatus, KeyStatus, Outcome
from idemdash.dashboard.schemas.common import (
    CURSOR_TEXT,
    Answer,
    Duration,
    Limit,
    Name,
    Query,
    cursor_of,
)
from idemdash.dashboard.schemas.examples import KEY
from idemdash.queries.key_matching import Matching, SuggestionGroup

KeysCursor = Annotated[str, CURSOR_TEXT, cursor_of("keys")]


class KeyFilterQuery(Query):
    """A key list's tab and filters (the list, and its breakdown by scope and worker)."""

    status: KeyListStatus = Field("stuck", description="Which keys: a state tab.")
    scope: Name | None = Field(None, description="Only this scope (the whole name).")
    claimed_by: Name | None = Field(None, description="Only keys last claimed by this worker (the whole name).")
    min_attempts: int | None = Field(None, ge=1, le=1_000_000, description="attempt_count at least this.")
    overdue: Duration | None = Field(
        None, description="Lease ended at least this long ago (stuck, needs_review and processing only)."
    )
    suggested: Outcome | None = Field(None, description="Only stuck keys whose suggested outcome is this (stuck only).")
    updated_within: Duration | None = Field(
        None,
        description="Only keys whose last change (updated_at) is at most "
        "this long ago, such as 24h (succeeded, "
        "failed_retryable and failed_final only); the counts "
        "of those tabs honour it too.",
    )


class KeyListQuery(KeyFilterQuery):
    order: Literal["asc", "desc"] | None = Field(
        None,
        description="By the list's sort column: lease end (stuck, "
        "needs_review, processing; default asc) or last "
        "change (default desc).",
    )
    cursor: KeysCursor | None = None
    limit: Limit = 50


class Hold(Answer):
    until: datetime | None
    by: str | None
    reason: str | None
    at: datetime | None


class KeyColumns(Answer):
    """A key's row as every list shows it (the key list, the hotspots' top keys)."""

    scope: str
    key: str
    status: KeyStatus
    request_hash: str
    claimed_by: str | None
    claimed_at: datetime | None
    locked_until: datetime | None
    overdue_seconds: float | None = Field(description="Seconds since the lease ended (processing keys), else null.")
    attempt_count: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime


class KeyItem(KeyColumns):
    hold: Hold | None = Field(description="A key held for review: until when, by whom and why; else null.")


class TabCount(Answer):
    count: int = Field(description="Exact when not more; the cap when more.")
    more: bool
    snapshot: int | None = Field(description="The snapshot job's full count, when more and it records the state.")
    snapshot_at: datetime | None


class NotApplied(Answer):
    filter: Literal["overdue", "suggested", "updated_within"]
    applies_to: list[KeyListStatus] = Field(description="The tabs (status) the filter means something on.")


class ScopeCount(Answer):
    scope: str
    count: int


class WorkerCount(Answer):
    worker: str | None = Field(description="claimed_by; null for keys no worker claimed.")
    count: int


class KeyBreakdown(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "status": "stuck",
                    "total": 23,
                    "too_many": False,
                    "cap": 10000,
                    "by_scope": [{"scope": "capture_payment", "count": 21}, {"scope": "refund", "count": 2}],
                    "by_worker": [{"worker": "api-3", "count": 19}, {"worker": "api-1", "count": 4}],
                    "page_only": False,
                    "more": False,
                    "as_of": "2026-11-24T21:47:48.149746+00:00",
                    "not_applied": [],
                }
            ]
        },
    )

    status: KeyListStatus
    total: int = Field(description="Keys of the tab matching every filter, broken down (0 when too_many).")
    too_many: bool = Field(description="More than cap keys match: not broken down (by_scope, by_worker empty).")
    cap: int = Field(description="The most keys a breakdown reads.")
    by_scope: list[ScopeCount] = Field(description="Keys per scope, most first, then by name.")
    by_worker: list[WorkerCount] = Field(description="Keys per worker (claimed_by), most first, then by name.")
    page_only: bool = Field(
        description="Only the keys of the list's first page (limit 50) are broken down: a stuck list filtered by "
        "suggested, whose filter costs an outbox lookup per key."
    )
    more: bool = Field(
        description="total is a lower bound: with page_only, the list has other pages; else a filtered stuck, "
        "needs_review or processing tab holds more keys than the cap + 1 of each index range examined."
    )
    as_of: datetime
    not_applied: list[NotApplied] = Field(description="Filters given that do not apply to this tab, not applied.")


def _tab(count: int) -> dict[str, Any]:
    return {"count": count, "more": False, "snapshot": None, "snapshot_at": None}


class KeyList(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {
                            **KEY,
                            "scope": "refund",
                            "key": "cart/2/checkout-0002",
                            "claimed_by": "worker-2",
                            "locked_until": "2026-11-24T21:40:48.149746+00:00",
                            "overdue_seconds": 420.201813,
                            "attempt_count": 3,
                        },
                        KEY,
                    ],
                    "next_cursor": "WyIyMDI2LTExLTI0VDIxOjQyOjQ4LjE0MTg4MCswMDowMCIsImNyZWF0ZV9v"
                    "cmRlciIsImNhcnQvMC9jaGVja291dC0wMDAwIl0",
                    "prev_cursor": None,
                    "order": "asc",
                    "counts": {
                        "stuck": _tab(13),
                        "needs_review": _tab(0),
                        "processing": _tab(14),
                        "succeeded": _tab(6),
                        "failed_retryable": _tab(6),
                        "failed_final": _tab(10),
                    },
                    "count_cap": 10000,
                    "matching": {"count": 13, "more": False},
                    "suggestions": [
                        {"suggested": "already_succeeded", "keys": 2, "more": False},
                        {"suggested": "safe_to_retry", "keys": 6, "more": False},
                        {"suggested": "needs_review", "keys": 5, "more": False},
                    ],
                    "suggestions_cap": 50,
                    "not_applied": [],
                }
            ]
        },
    )

    items: list[KeyItem]
    next_cursor: str | None
    prev_cursor: str | None
    order: Literal["asc", "desc"]
    counts: dict[KeyListStatus, TabCount] = Field(description="Every state tab's count, over every scope.")
    count_cap: int
    matching: Matching
    suggestions: list[SuggestionGroup] = Field(
        description="The stuck tab: the stuck keys on the page shown, per suggested outcome; empty on the others."
    )
    suggestions_cap: int = Field(
        description="Most stuck keys whose outcome is looked up: the page's size, for groups and a suggested count."
    )
    not_applied: list[NotApplied] = Field(
        description="Filters given that do not apply to this tab: not applied "
        "(overdue off the lease tabs, suggested off stuck)."
    )
