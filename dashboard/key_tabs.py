"""The state tabs of the key list, each with a count that stays cheap on a big table.

A count is exact up to ``COUNT_CAP``; past it, the tab shows the snapshot job's number with its age where the
snapshot records that state (stuck, processing, failed_retryable), and "10,000+" otherwise, as River UI does since
its count timeouts. Counting every row on every view (and every 15 s refresh) would read the whole index each time.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import current_app

from dashboard import panels
from dashboard.db import get_target
from queries import keys as q
from queries import snapshots as qs

COUNT_CAP = 10_000

LABELS = {"stuck": "Stuck", "needs_review": "Needs review", "processing": "Processing",
          "failed_retryable": "Failed, retryable", "failed_final": "Failed, final", "succeeded": "Succeeded"}
# the snapshot column that records a state's full count (the overview's headline numbers)
SNAPSHOT_FIELDS = {"stuck": "stuck_keys", "processing": "processing_keys", "failed_retryable": "failed_retryable_keys"}


@dataclass(frozen=True)
class Tab:
    status: str
    label: str
    count: int                         # exact when not ``more``; COUNT_CAP when more
    more: bool                         # more than COUNT_CAP
    snapshot: int | None = None        # the snapshot job's count, when ``more`` and it records this state
    snapshot_at: datetime | None = None
    current: bool = False


def load(current: str) -> panels.Panel[list[Tab]]:
    """One tab per key status, in KEY_STATUSES order, ``current`` marked."""
    tables = get_target().tables
    counted = panels.load(q.count_keys_by_state, tables, lease_seconds=current_app.config["DEFAULT_LEASE_SECONDS"],
                          cap=COUNT_CAP, index="index_keys_updated")
    if not counted.ok:
        return panels.Panel(problem=counted.problem, message=counted.message, index_sql=counted.index_sql,
                            index_why=counted.index_why)
    counts = counted.value
    snapshot = None
    if any(getattr(counts, status) > COUNT_CAP for status in SNAPSHOT_FIELDS):
        snapshot = panels.load(qs.get_latest_snapshot).value
    tabs = []
    for status in q.KEY_STATUSES:
        value = getattr(counts, status)
        more = value > COUNT_CAP
        from_snapshot = getattr(snapshot, SNAPSHOT_FIELDS[status]) if more and snapshot and status in SNAPSHOT_FIELDS \
            else None
        tabs.append(Tab(status, LABELS[status], min(value, COUNT_CAP), more, from_snapshot,
                        snapshot.taken_at if from_snapshot is not None else None, status == current))
    return panels.Panel(value=tabs)


def counts_json(tabs: list[Tab]) -> dict[str, Any]:
    return {t.status: {"count": t.count, "more": t.more, "snapshot": t.snapshot, "snapshot_at": t.snapshot_at}
            for t in tabs}
