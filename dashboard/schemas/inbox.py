"""The inbox (`GET /api/v1/inbox`): volume per consumer, and each consumer's oldest row against the retention."""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from idemdash.dashboard.schemas.common import Answer, Name, Precomputed, Query

Retention = Literal["purge overdue", "within retention"]


class InboxQuery(Query):
    consumer: Name | None = Field(None, description="Only consumers whose name contains this, ignoring case.")


class InboxConsumer(Answer):
    consumer_name: str
    rows_1h: int
    rows_24h: int
    rows_7d: int
    oldest_processed_at: datetime | None
    oldest_age_seconds: float | None
    purge_overdue: bool
    newest_processed_at: datetime | None
    newest_age_seconds: float | None
    retention: Retention = Field(description="'purge overdue' when the oldest row is older than the retention.")


class InboxTotals(Answer):
    rows_1h: int
    rows_24h: int
    rows_7d: int
    oldest_processed_at: datetime | None
    oldest_age_seconds: float | None
    purge_overdue: bool
    newest_processed_at: datetime | None
    retention: Retention
    consumers_shown: int = Field(description="How many consumers the answer lists.")
    consumers_purge_overdue: int = Field(description="Of those listed, how many are past the retention.")


class InboxDefinitions(Answer):
    rows_1h: str
    rows_24h: str
    rows_7d: str
    oldest_processed_at: str
    newest_processed_at: str
    retention: str
    consumers: str


class Inbox(Answer):
    retention_days: int = Field(description="IDEMDASH_INBOX_RETENTION_DAYS.")
    as_of: datetime
    consumer: str | None = Field(description="The consumer filter, as given, or null.")
    consumers: list[InboxConsumer] = Field(description="Consumers by name, at most 200.")
    consumers_truncated: bool = Field(description="More consumers match than are listed.")
    totals: InboxTotals = Field(description="Every consumer's rows (not only those listed).")
    definitions: InboxDefinitions
    precomputed: dict[Literal["consumers", "totals"], Precomputed] = Field(
        description="The sections the scheduler's rollup job computed, when and how long that took; empty when "
                    "everything was read now.")
