"""The inbox (`GET /api/v1/inbox`): volume per consumer, and each consumer's oldest row against the retention."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import Answer, Name, Precomputed, Query
from idemdash.queries import inbox

Retention = Literal["purge overdue", "within retention"]


class InboxQuery(Query):
    consumer: Name | None = Field(None, description="Only consumers whose name contains this, ignoring case.")


# the answer's rows are the queries' rows with what the answer adds (a pydantic model cannot extend a dataclass)
@dataclass(frozen=True)
class InboxConsumer(inbox.ConsumerVolume):
    retention: Annotated[
        Retention, Field(description="'purge overdue' when the oldest row is older than the retention.")
    ]


@dataclass(frozen=True)
class InboxTotals(inbox.InboxTotals):
    retention: Retention
    consumers_shown: Annotated[int, Field(description="How many consumers the answer lists.")]
    consumers_purge_overdue: Annotated[int, Field(description="Of those listed, how many are past the retention.")]


class InboxDefinitions(Answer):
    rows_1h: str
    rows_24h: str
    rows_7d: str
    oldest_processed_at: str
    newest_processed_at: str
    retention: str
    consumers: str


_CONSUMER: dict[str, Any] = {
    "consumer_name": "invoice-mailer",
    "rows_1h": 312,
    "rows_24h": 7480,
    "rows_7d": 52113,
    "oldest_processed_at": "2026-10-25T21:50:02.118734+00:00",
    "oldest_age_seconds": 2591866.232825,
    "purge_overdue": False,
    "newest_processed_at": "2026-11-24T21:47:46.904512+00:00",
    "newest_age_seconds": 1.447047,
    "retention": "within retention",
}


class Inbox(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "retention_days": 30,
                    "as_of": "2026-11-24T21:47:48.351559+00:00",
                    "consumer": None,
                    "consumers": [
                        _CONSUMER,
                        {
                            **_CONSUMER,
                            "consumer_name": "ledger-sync",
                            "rows_1h": 0,
                            "rows_24h": 0,
                            "rows_7d": 0,
                            "oldest_processed_at": "2026-10-02T08:12:40.551230+00:00",
                            "oldest_age_seconds": 4628107.800329,
                            "purge_overdue": True,
                            "newest_processed_at": "2026-11-09T16:03:11.002417+00:00",
                            "newest_age_seconds": 1316677.349142,
                            "retention": "purge overdue",
                        },
                    ],
                    "consumers_truncated": False,
                    "totals": {
                        "rows_1h": 312,
                        "rows_24h": 7480,
                        "rows_7d": 52113,
                        "oldest_processed_at": "2026-10-02T08:12:40.551230+00:00",
                        "oldest_age_seconds": 4628107.800329,
                        "purge_overdue": True,
                        "newest_processed_at": "2026-11-24T21:47:46.904512+00:00",
                        "retention": "purge overdue",
                        "consumers_shown": 2,
                        "consumers_purge_overdue": 1,
                    },
                    "definitions": {
                        "rows_1h": "inbox rows whose processed_at is within the last hour",
                        "rows_24h": "inbox rows whose processed_at is within the last 24 hours",
                        "rows_7d": "inbox rows whose processed_at is within the last 7 days",
                        "oldest_processed_at": "the earliest processed_at still in the table (not yet purged)",
                        "newest_processed_at": "the latest processed_at: when the consumer last recorded a message",
                        "retention": "'purge overdue' when the oldest row is older than the retention (30 days, "
                        "IDEMDASH_INBOX_RETENTION_DAYS): the inbox purge has not removed it; 'within retention' "
                        "otherwise",
                        "consumers": "consumers by name, at most 200; totals count every consumer",
                    },
                    "precomputed": {},
                }
            ]
        },
    )

    retention_days: int = Field(description="IDEMDASH_INBOX_RETENTION_DAYS.")
    as_of: datetime
    consumer: str | None = Field(description="The consumer filter, as given, or null.")
    consumers: list[InboxConsumer] = Field(description="Consumers by name, at most 200.")
    consumers_truncated: bool = Field(description="More consumers match than are listed.")
    totals: InboxTotals = Field(description="Every consumer's rows (not only those listed).")
    definitions: InboxDefinitions
    precomputed: dict[Literal["consumers", "totals"], Precomputed] = Field(
        description="The sections the scheduler's rollup job computed, when and how long that took; empty when "
        "everything was read now."
    )
