"""The overview (`GET /api/v1/overview`): the headline numbers, the last purges and the trends."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from idemdash.core.statuses import REVIEW_HOLDER, PurgeMethod, PurgeOutcome
from idemdash.dashboard.schemas.common import Answer, Precomputed, Query
from idemdash.dashboard.schemas.examples import AS_OF, PURGE_RUN, RUNNING_PURGE, without_pacing
from idemdash.queries.overview import InboxVolume, KeyCounts, OutboxBacklog
from idemdash.queries.snapshots import TrendPoint

TrendRange = Literal["1h", "6h", "24h", "7d"]


class OverviewQuery(Query):
    range: TrendRange = Field("24h", description="The time range of trends.points.")


class LastPurge(Answer):
    run_id: int
    table_name: str
    started_at: datetime
    finished_at: datetime | None = Field(description="Null while the run is running.")
    batches: int
    rows_deleted: int = Field(description="Rows deleted (a dry run: rows it would delete).")
    dry_run: bool
    outcome: PurgeOutcome
    error: str | None
    started_by: str
    duration_seconds: float | None
    method: PurgeMethod | None = Field(
        description="How its batches found the due rows: through an index of them, page by page through a table "
        "mostly due (heap), or walking the primary key (null for runs from before it was recorded)."
    )
    partitions_dropped: int
    cancel_requested_by: str | None = Field(description="Who asked the run to stop after its current batch.")


class TrendMarker(Answer):
    kind: Literal["action", "purge"] = Field(description="An operator's action (the audit log) or a purge run.")
    at: datetime = Field(description="When: the action's time; a purge run's end (its start while it runs).")
    by: str = Field(description="Who acted, or who started the purge (scheduler for a scheduled one).")
    what: str = Field(description="What happened, in words (what the chart's hover says).")
    audit_id: int | None = Field(description="The action's audit entry (GET /api/v1/audit), or null.")
    run_id: int | None = Field(description="The purge run (GET /api/v1/purges), or null.")


class PanelProblem(Answer):
    """Why a section has no value: its query timed out, or the schema it reads is missing."""

    problem: Literal["timeout", "schema"]
    message: str | None
    index: str | None = Field(description="The index statement that would make it fast, when one would.")


class OverviewTrends(Answer):
    window_hours: int
    range: TrendRange
    snapshot_interval_seconds: int
    max_points: int = Field(description="More snapshots than this come merged into points (see snapshots).")
    points: list[TrendPoint] = Field(description="Oldest first; empty when the snapshots could not be read.")
    problem: PanelProblem | None = Field(description="Why points is empty although snapshots exist, or null.")
    markers: list[TrendMarker] = Field(
        description="What the charts mark: operators' actions and purge runs of the "
        "range, oldest first (definitions.trends.markers)."
    )
    markers_cut: bool = Field(
        description="True when the newest 200 actions or purge runs of the range were all that was read."
    )


class OverviewDefinitions(Answer):
    stuck: str
    needs_review: str
    failed_final_24h: str
    succeeded_24h: str
    outbox_pending: str = Field(alias="outbox.pending")
    outbox_poison: str = Field(alias="outbox.poison")
    inbox_rows_24h: str = Field(alias="inbox.rows_24h")
    trends_points: str = Field(alias="trends.points")
    trends_points_rows_purged: str = Field(alias="trends.points.rows_purged")
    trends_points_claims: str = Field(alias="trends.points.claims")
    trends_markers: str = Field(alias="trends.markers")


def definitions(lease_seconds: int) -> dict[str, Any]:
    """What each number of the overview counts, in words (``definitions`` of its answer)."""
    return {
        "stuck": f"status = 'processing' and locked_until < now(), or locked_until is NULL and claimed_at older "
        f"than {lease_seconds} s",
        "needs_review": f"status = 'processing' and claimed_by = '{REVIEW_HOLDER}': held for review by an "
        "operator (a hold that ended is counted in stuck too)",
        "failed_final_24h": "status = 'failed_final' and updated_at within the last 24 hours",
        "succeeded_24h": "status = 'succeeded' and updated_at within the last 24 hours",
        "outbox.pending": "outbox rows with status = 'pending'; lag is the age of the oldest with attempt_count "
        "< 3 (not likely poison)",
        "outbox.poison": "pending outbox rows with attempt_count >= 3 (likely poison), counted apart from the lag",
        "inbox.rows_24h": "inbox rows with processed_at within the last 24 hours",
        "trends.points": "metric snapshots of the range (range: 1h, 6h, 24h or 7d; window_hours), oldest first, "
        "recorded by the scheduler's snapshot job; when there are more than max_points, "
        "consecutive snapshots are merged (stuck_keys, outbox_pending and outbox_lag_seconds: "
        "the peak; rows_purged: the sum)",
        "trends.points.rows_purged": "rows deleted by real purge runs that finished since the previous snapshot",
        "trends.points.claims": "keys whose claimed_at falls after the previous snapshot (a key claimed twice in "
        "that interval counts once); completions: keys that became succeeded, failures: "
        "failed_retryable or failed_final, by updated_at in the interval, a "
        "reclassification by an operator left out; *_per_minute: their sum times 60 over "
        "interval_seconds, the seconds the point's snapshots counted (null: not counted)",
        "trends.markers": "operators' actions (the audit log: one per decision, notes and purges left out) and "
        "real purge runs that deleted rows or partitions or failed, of the range, oldest "
        "first; markers_cut: the newest 200 of either kind were all that was read",
    }


class Overview(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "as_of": AS_OF,
                    "keys": {
                        "stuck": 13,
                        "processing": 14,
                        "needs_review": 0,
                        "failed_retryable": 6,
                        "failed_final_24h": 10,
                        "succeeded_24h": 6,
                        "oldest_stuck_lease": "2026-11-24T21:31:48.159412+00:00",
                    },
                    "outbox": {
                        "pending": 2,
                        "oldest_pending_at": "2026-11-24T18:47:48.135812+00:00",
                        "lag_seconds": 10800.215747,
                        "poison": 0,
                        "oldest_poison_at": None,
                        "poison_oldest_seconds": None,
                    },
                    "inbox": {"rows_24h": 5, "consumers_24h": 2},
                    "last_purges": [without_pacing(RUNNING_PURGE), without_pacing(PURGE_RUN)],
                    "precomputed": {},
                    "trends": {
                        "window_hours": 24,
                        "range": "24h",
                        "snapshot_interval_seconds": 60,
                        "max_points": 240,
                        "points": [
                            {
                                "taken_at": "2026-11-24T21:27:48.174676+00:00",
                                "until": "2026-11-24T21:27:48.174676+00:00",
                                "snapshots": 1,
                                "stuck_keys": 2,
                                "outbox_pending": 2,
                                "outbox_lag_seconds": 120.0,
                                "rows_purged": 20,
                                "interval_seconds": 60.0,
                                "claims": 130,
                                "completions": 121,
                                "failures": 6,
                                "claims_per_minute": 130.0,
                                "completions_per_minute": 121.0,
                                "failures_per_minute": 6.0,
                            },
                            {
                                "taken_at": "2026-11-24T21:37:48.174676+00:00",
                                "until": "2026-11-24T21:37:48.174676+00:00",
                                "snapshots": 1,
                                "stuck_keys": 1,
                                "outbox_pending": 1,
                                "outbox_lag_seconds": 60.0,
                                "rows_purged": 10,
                                "interval_seconds": 600.0,
                                "claims": 1250,
                                "completions": 1240,
                                "failures": 12,
                                "claims_per_minute": 125.0,
                                "completions_per_minute": 124.0,
                                "failures_per_minute": 1.2,
                            },
                        ],
                        "problem": None,
                        "markers": [
                            {
                                "kind": "action",
                                "at": "2026-11-24T21:30:02.500000+00:00",
                                "by": "alice",
                                "what": "alice reclassified 40 keys in capture_payment as abandoned (bulk)",
                                "audit_id": 17,
                                "run_id": None,
                            },
                            {
                                "kind": "purge",
                                "at": "2026-11-24T21:35:00.100000+00:00",
                                "by": "scheduler",
                                "what": "purge of keys: 5,000 rows deleted, started by scheduler",
                                "audit_id": None,
                                "run_id": 41,
                            },
                        ],
                        "markers_cut": False,
                    },
                    "definitions": definitions(300),
                }
            ]
        },
    )

    as_of: datetime
    keys: KeyCounts
    outbox: OutboxBacklog
    inbox: InboxVolume
    last_purges: list[LastPurge] = Field(description="The newest purge runs, newest first (at most 5).")
    precomputed: dict[Literal["keys", "outbox", "inbox"], Precomputed] = Field(
        description="The sections the scheduler's rollup job computed, when and how long that took; empty when "
        "everything was read now."
    )
    trends: OverviewTrends
    definitions: OverviewDefinitions = Field(description="What each number counts, in words.")
