"""The workers that claim keys (`GET /api/v1/workers`): each owner seen lately, its last claim, in flight, stuck,
failed and succeeded, worst first."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from idemdash.core.statuses import REVIEW_HOLDER, ReviewHolder
from idemdash.dashboard.schemas.common import Answer, Precomputed, Query, Window


class WorkersQuery(Query):
    window: Window = Field(
        "1h",
        description="How far back a failed or succeeded key counts (its updated_at): the "
        "last hour, 24 hours or 7 days. Stuck and in flight are now.",
    )


class WorkerLinks(Answer):
    keys: str = Field(description="The owner's keys (/keys?claimed_by=…: its stuck keys first).")
    stuck: str
    in_flight: str = Field(description="The owner's processing keys (the stuck ones included).")
    failed_retryable: str
    failed_final: str
    succeeded: str


class Worker(Answer):
    name: str = Field(description="The owner: the keys table's claimed_by.")
    last_claim: datetime | None = Field(description="The latest claimed_at among the keys counted for it.")
    in_flight: int = Field(description="Processing keys it holds whose lease is live.")
    stuck: int = Field(description="Processing keys it holds whose lease ran out.")
    failed: int = Field(description="failed_retryable + failed_final, updated in the window.")
    failed_retryable: int
    failed_final: int
    succeeded: int = Field(description="Succeeded keys updated in the window.")
    links: WorkerLinks


class HeldForReview(Answer):
    keys: int = Field(
        description=f"Keys idemdash holds for review (claimed_by '{REVIEW_HOLDER}'): not a worker, so not in items."
    )
    holder: ReviewHolder
    url: str


class WorkerDefinitions(Answer):
    window: str
    owners: str
    order: str
    in_flight: str
    stuck: str
    failed: str
    succeeded: str
    last_claim: str


_WORKER: dict[str, Any] = {
    "name": "worker-7",
    "last_claim": "2026-11-24T21:40:02.101532+00:00",
    "in_flight": 3,
    "stuck": 12,
    "failed": 5,
    "failed_retryable": 4,
    "failed_final": 1,
    "succeeded": 210,
    "links": {
        "keys": "/keys?claimed_by=worker-7",
        "stuck": "/keys?status=stuck&claimed_by=worker-7",
        "in_flight": "/keys?status=processing&claimed_by=worker-7",
        "failed_retryable": "/keys?status=failed_retryable&claimed_by=worker-7",
        "failed_final": "/keys?status=failed_final&claimed_by=worker-7",
        "succeeded": "/keys?status=succeeded&claimed_by=worker-7",
    },
}


class Workers(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [_WORKER],
                    "next_cursor": None,
                    "as_of": "2026-11-24T21:47:48.511039+00:00",
                    "window": "1h",
                    "since": "2026-11-24T20:47:48.511039+00:00",
                    "limit": 200,
                    "truncated": False,
                    "held_for_review": {"keys": 2, "holder": REVIEW_HOLDER, "url": "/keys?status=needs_review"},
                    "precomputed": {},
                    "definitions": {
                        "window": "window=1h: failed and succeeded count the keys whose updated_at is within the last "
                        "hour "
                        "(since = as_of minus the window); stuck and in flight are the processing keys now",
                        "owners": "every claimed_by holding a processing key now or owning a key that failed or "
                        "succeeded in "
                        f"the window; idemdash's own holder {REVIEW_HOLDER} is not a worker (held_for_review)",
                        "order": "most stuck first, then most failed, then by name; at most 200 (truncated: more "
                        "exist)",
                        "in_flight": "status = 'processing' and the lease is live",
                        "stuck": "status = 'processing' and locked_until < now(), or locked_until is NULL and "
                        "claimed_at older "
                        "than 300 s",
                        "failed": "failed_retryable + failed_final with updated_at >= since",
                        "succeeded": "succeeded with updated_at >= since",
                        "last_claim": "the latest claimed_at among the keys counted for the owner (a key re-claimed "
                        "by another "
                        "worker counts for that one)",
                    },
                }
            ]
        },
    )

    items: list[Worker]
    next_cursor: None = Field(description="Always null: the worst owners, at most limit, come in one answer.")
    as_of: datetime
    window: Window
    since: datetime = Field(description="The window's start (as_of minus the window).")
    limit: int
    truncated: bool = Field(description="More owners exist than are listed (the least bad are left off).")
    held_for_review: HeldForReview
    precomputed: dict[Literal["items"], Precomputed] = Field(
        description="Set when the list came from the rollup job: when it was computed and how long it took."
    )
    definitions: WorkerDefinitions
