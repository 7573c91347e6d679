"""The overview (`GET /api/v1/overview`): the headline numbers, the last purges and the trends."""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from idemdash.dashboard.schemas.common import Answer, Precomputed, Query

TrendRange = Literal["1h", "6h", "24h", "7d"]
PurgeOutcome = Literal["running", "succeeded", "failed", "skipped", "budget_exhausted", "cancelled"]


class OverviewQuery(Query):
    range: TrendRange = Field("24h", description="The time range of trends.points.")


class OverviewKeys(Answer):
    stuck: int = Field(description="Processing keys whose lease ran out (definitions.stuck).")
    processing: int = Field(description="Every key in status processing, stuck or not.")
    needs_review: int = Field(description="Processing keys held for review by an operator.")
    failed_retryable: int
    failed_final_24h: int
    succeeded_24h: int
    oldest_stuck_lease: datetime | None = Field(description="When the oldest stuck key's lease ended, or null.")


class OverviewOutbox(Answer):
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float | None = Field(description="Age of the oldest pending row, or null when none is pending.")


class OverviewInbox(Answer):
    rows_24h: int
    consumers_24h: int


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
    method: Literal["due_index", "primary_key"] | None = Field(
        description="How its batches found the due rows: through an index of them, or walking the primary key "
                    "(null for runs from before it was recorded).")
    partitions_dropped: int
    cancel_requested_by: str | None = Field(description="Who asked the run to stop after its current batch.")


class OverviewTrendPoint(Answer):
    taken_at: datetime = Field(description="The first snapshot the point stands for.")
    until: datetime = Field(description="The last snapshot the point stands for.")
    snapshots: int = Field(description="How many consecutive snapshots the point merges.")
    stuck_keys: int
    outbox_pending: int
    outbox_lag_seconds: float | None
    rows_purged: int


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
    points: list[OverviewTrendPoint] = Field(description="Oldest first; empty when the snapshots could not be read.")
    problem: PanelProblem | None = Field(description="Why points is empty although snapshots exist, or null.")


class OverviewDefinitions(Answer):
    stuck: str
    needs_review: str
    failed_final_24h: str
    succeeded_24h: str
    outbox_pending: str = Field(alias="outbox.pending")
    inbox_rows_24h: str = Field(alias="inbox.rows_24h")
    trends_points: str = Field(alias="trends.points")
    trends_points_rows_purged: str = Field(alias="trends.points.rows_purged")


class Overview(Answer):
    as_of: datetime
    keys: OverviewKeys
    outbox: OverviewOutbox
    inbox: OverviewInbox
    last_purges: list[LastPurge] = Field(description="The newest purge runs, newest first (at most 5).")
    precomputed: dict[Literal["keys", "inbox"], Precomputed] = Field(
        description="The sections the scheduler's rollup job computed, when and how long that took; empty when "
                    "everything was read now.")
    trends: OverviewTrends
    definitions: OverviewDefinitions = Field(description="What each number counts, in words.")
