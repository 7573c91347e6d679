"""Retry hotspots (`GET /api/v1/hotspots`): keys attempted at least N times, by scope and worker, the top keys and
the attempt histogram, over the keys last changed within a window."""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from idemdash.dashboard.schemas.common import Answer, Precomputed, Query
from idemdash.dashboard.schemas.keys import KeyState

HotspotWindow = Literal["1h", "24h", "7d", "all"]


class HotspotsQuery(Query):
    window: HotspotWindow = Field("24h", description="Keys last changed (updated_at) within the last hour, 24 hours "
                                                     "or 7 days, or all of them.")
    min_attempts: int | None = Field(None, ge=1, le=1_000_000, description="The hotspot threshold (default "
                                                                           "IDEMDASH_HOTSPOT_MIN_ATTEMPTS).")


class GroupCounts(Answer):
    hotspot_keys: int
    stuck: int
    processing: int = Field(description="Every processing hotspot key, the stuck ones included.")
    failed_retryable: int
    failed_final: int
    succeeded: int
    max_attempts: int


class ScopeHotspots(GroupCounts):
    scope: str


class WorkerHotspots(GroupCounts):
    claimed_by: str | None = Field(description="The worker that claimed the keys last; null is its own group.")


class HotspotKey(Answer):
    scope: str
    key: str
    status: KeyState
    request_hash: str
    claimed_by: str | None
    claimed_at: datetime | None
    locked_until: datetime | None
    overdue_seconds: float | None
    attempt_count: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    stuck: bool


class AttemptBucket(Answer):
    bucket: str = Field(description="'1', '2', '3', '4', '5-9', '10-19', '20+'.")
    min: int
    max: int | None = Field(description="null: no upper bound.")
    keys: int


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


class Hotspots(Answer):
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
        description="The sections the rollup job computed, when and how long it took; empty when read live.")
    definitions: HotspotDefinitions
