"""Suppression (`GET /api/v1/suppression`): per scope, keys created in a window that ran once vs needed a
re-claim."""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from idemdash.dashboard.schemas.common import Answer, Precomputed, Query, Window


class SuppressionQuery(Query):
    window: Window = Field("24h", description="Keys created within the last hour, 24 hours or 7 days.")


class SuppressionCounts(Answer):
    keys: int = Field(description="Keys created in the window.")
    first_attempt: int = Field(description="Keys that ran once (attempt_count = 1).")
    retried: int = Field(description="Keys that needed a re-claim (attempt_count > 1).")
    retried_pct: float | None = Field(description="retried / keys * 100; null when there are no keys.")
    total_attempts: int = Field(description="sum(attempt_count).")
    extra_attempts: int = Field(description="sum(attempt_count) - keys: duplicate executions the keys let through "
                                            "safely.")
    max_attempts: int | None
    succeeded: int = Field(description="Of those keys, how many are succeeded now (not at the window's end).")
    failed_final: int
    processing: int
    failed_retryable: int


class ScopeSuppression(SuppressionCounts):
    scope: str


class SuppressionTotals(SuppressionCounts):
    scopes: int = Field(description="How many scopes had keys created in the window.")


class Suppression(Answer):
    window: Window
    since: datetime = Field(description="The window's start.")
    as_of: datetime
    scopes: list[ScopeSuppression] = Field(description="Per scope, the most keys first.")
    truncated: bool = Field(description="More scopes had keys than are listed (totals count them all).")
    totals: SuppressionTotals
    counts: str = Field(description="What the numbers count, in one sentence.")
    precomputed: dict[Literal["scopes"], Precomputed] = Field(
        description="Set when the scheduler's rollup job computed the counts: when, and how long that took.")
