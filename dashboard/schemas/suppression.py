"""Suppression (`GET /api/v1/suppression`): per scope, keys created in a window that ran once vs needed a
re-claim."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import Answer, Precomputed, Query, Window


class SuppressionQuery(Query):
    window: Window = Field("24h", description="Keys created within the last hour, 24 hours or 7 days.")


class SuppressionCounts(Answer):
    keys: int = Field(description="Keys created in the window.")
    first_attempt: int = Field(description="Keys that ran once (attempt_count = 1).")
    retried: int = Field(description="Keys that needed a re-claim (attempt_count > 1).")
    retried_pct: float | None = Field(description="retried / keys * 100; null when there are no keys.")
    total_attempts: int = Field(description="sum(attempt_count).")
    extra_attempts: int = Field(
        description="sum(attempt_count) - keys: duplicate executions the keys let through safely."
    )
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
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "window": "24h",
                    "since": "2026-11-23T21:47:48.570734+00:00",
                    "as_of": "2026-11-24T21:47:48.570734+00:00",
                    "scopes": [
                        {
                            "keys": 11,
                            "first_attempt": 7,
                            "retried": 4,
                            "retried_pct": 36.36363636363637,
                            "total_attempts": 25,
                            "extra_attempts": 14,
                            "max_attempts": 6,
                            "succeeded": 0,
                            "failed_final": 0,
                            "processing": 5,
                            "failed_retryable": 6,
                            "scope": "refund",
                        }
                    ],
                    "truncated": False,
                    "totals": {
                        "keys": 36,
                        "first_attempt": 25,
                        "retried": 11,
                        "retried_pct": 30.555555555555557,
                        "total_attempts": 74,
                        "extra_attempts": 38,
                        "max_attempts": 9,
                        "succeeded": 6,
                        "failed_final": 10,
                        "processing": 14,
                        "failed_retryable": 6,
                        "scopes": 4,
                    },
                    "counts": "Keys whose created_at is within the last 24 hours, per idempotency_scope: "
                    "first_attempt keys ran "
                    "once (attempt_count = 1); retried keys needed a re-claim after a stale lease or a retryable "
                    "failure (attempt_count > 1); extra_attempts = sum(attempt_count) - keys, each a duplicate "
                    "execution the key let through safely, not a duplicate effect; status columns are the status now; "
                    "replays of succeeded keys (client retries answered from the stored response) do not change the "
                    "row and are not counted.",
                    "precomputed": {},
                }
            ]
        },
    )

    window: Window
    since: datetime = Field(description="The window's start.")
    as_of: datetime
    scopes: list[ScopeSuppression] = Field(description="Per scope, the most keys first.")
    truncated: bool = Field(description="More scopes had keys than are listed (totals count them all).")
    totals: SuppressionTotals
    counts: str = Field(description="What the numbers count, in one sentence.")
    precomputed: dict[Literal["scopes"], Precomputed] = Field(
        description="Set when the scheduler's rollup job computed the counts: when, and how long that took."
    )
