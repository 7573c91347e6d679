"""Retry hotspots (`GET /api/v1/hotspots`): keys attempted at least N times, by scope and worker, the top keys and
the attempt histogram, over the keys last changed within a window."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import Answer, Precomputed, Query
from idemdash.dashboard.schemas.examples import KEY
from idemdash.dashboard.schemas.keys import KeyColumns
from idemdash.queries.hotspots import AttemptBucket, ScopeHotspots, WorkerHotspots

HotspotWindow = Literal["1h", "24h", "7d", "all"]


class HotspotsQuery(Query):
    window: HotspotWindow = Field(
        "24h", description="Keys last changed (updated_at) within the last hour, 24 hours or 7 days, or all of them."
    )
    min_attempts: int | None = Field(
        None, ge=1, le=1_000_000, description="The hotspot threshold (default IDEMDASH_HOTSPOT_MIN_ATTEMPTS)."
    )


class HotspotKey(KeyColumns):
    stuck: bool


class Truncated(Answer):
    by_scope: bool
    by_worker: bool


class HotspotDefinitions(Answer):
    window: str
    hotspot: str
    by_scope: str
    by_worker: str
    stuck: str
    processing: str
    top_keys: str
    histogram: str


_GROUP: dict[str, Any] = {
    "hotspot_keys": 4,
    "stuck": 4,
    "processing": 4,
    "failed_retryable": 0,
    "failed_final": 0,
    "succeeded": 0,
}


class Hotspots(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "window": "24h",
                    "since": "2026-11-23T21:47:48.511039+00:00",
                    "min_attempts": 2,
                    "as_of": "2026-11-24T21:47:48.511039+00:00",
                    "by_scope": [
                        {**_GROUP, "max_attempts": 6, "scope": "refund"},
                        {**_GROUP, "max_attempts": 5, "scope": "capture_payment"},
                    ],
                    "by_worker": [
                        {
                            **_GROUP,
                            "hotspot_keys": 3,
                            "stuck": 3,
                            "processing": 3,
                            "max_attempts": 6,
                            "claimed_by": "worker-3",
                        }
                    ],
                    "top_keys": [
                        {
                            **{name: value for name, value in KEY.items() if name != "hold"},
                            "scope": "refund",
                            "key": "cart/11/checkout-0011",
                            "claimed_by": "worker-3",
                            "locked_until": "2026-11-24T21:31:48.159412+00:00",
                            "overdue_seconds": 960.359849,
                            "attempt_count": 6,
                            "stuck": True,
                        }
                    ],
                    "histogram": [
                        {"bucket": "1", "min": 1, "max": 1, "keys": 25},
                        {"bucket": "5-9", "min": 5, "max": 9, "keys": 4},
                    ],
                    "truncated": {"by_scope": False, "by_worker": False},
                    "precomputed": {},
                    "definitions": {
                        "window": "window=24h: only keys whose updated_at is within the last 24 hours (since = as_of "
                        "minus the "
                        "window). The claim function sets updated_at (and claimed_at) on every attempt and "
                        "complete/fail set it again, so a key is in the window when its last attempt or its outcome "
                        "is. A precomputed section's window ends at its computed_at.",
                        "hotspot": "a key with attempt_count >= 2 and updated_at >= since",
                        "by_scope": "hotspot keys grouped by idempotency_scope, the 100 with the most first",
                        "by_worker": "hotspot keys grouped by claimed_by (the worker that claimed the key last; null "
                        "is its own "
                        "group), the 100 with the most first",
                        "stuck": "status = 'processing' and locked_until < now(), or locked_until is NULL and "
                        "claimed_at older "
                        "than 300 s",
                        "processing": "status = 'processing', the stuck keys included",
                        "top_keys": "the 20 hotspot keys with the most attempts, then the most recently changed",
                        "histogram": "every key with updated_at >= since (not only hotspots) counted by "
                        "attempt_count; max null "
                        "= no upper bound",
                    },
                }
            ]
        },
    )

    window: HotspotWindow
    since: datetime | None = Field(description="The window's start (as_of minus the window); null for all.")
    min_attempts: int
    as_of: datetime
    by_scope: list[ScopeHotspots]
    by_worker: list[WorkerHotspots]
    top_keys: list[HotspotKey]
    histogram: list[AttemptBucket]
    truncated: Truncated
    precomputed: dict[Literal["by_scope", "by_worker", "histogram"], Precomputed] = Field(
        description="The sections the rollup job computed, when and how long it took; empty when read live."
    )
    definitions: HotspotDefinitions
