"""The state tabs of the key list, each with a count that stays cheap on a big table.

A count is exact up to ``COUNT_CAP``; past it, the tab shows the snapshot job's number with its age where the
snapshot records that state (stuck, processing, failed_retryable), and "10,000+" otherwise, as River UI does since
its count timeouts. Counting every row on every view (and every 15 s refresh) would read the whole index each time.
A state a fresh snapshot already puts far past the cap is not counted at all: its number is the snapshot's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from flask import g

from idemdash.core.profiles.shape import DONE
from idemdash.core.statuses import CHANGE_TABS
from idemdash.dashboard import panels
from idemdash.dashboard.targets import get_target
from idemdash.queries import keys, snapshots
from idemdash.queries.overview import WindowCounts
from idemdash.queries.rollup_states import stored_state_counts
from idemdash.queries.rollups import read_stored

COUNT_CAP = 10_000
# a snapshot this many snapshot intervals old still stands in for a count, when it is past SKIP_FACTOR x the cap
FRESH_INTERVALS = 3
SKIP_FACTOR = 2

LABELS = {
    "stuck": "Stuck",
    "needs_review": "Needs review",
    "processing": "Processing",
    "failed_retryable": "Failed, retryable",
    "failed_final": "Failed, final",
    "succeeded": "Succeeded",
}
# the snapshot column that records a state's full count (the overview's headline numbers)
SNAPSHOT_FIELDS = {"stuck": "stuck_keys", "processing": "processing_keys", "failed_retryable": "failed_retryable_keys"}


@dataclass(frozen=True)
class Tab:
    status: str
    label: str
    count: int  # exact when not ``more``; COUNT_CAP when more
    more: bool  # more than COUNT_CAP
    snapshot: int | None = None  # the snapshot job's count, when ``more`` and it records this state
    snapshot_at: datetime | None = None
    current: bool = False


def load(current: str, updated_within: float | None = None) -> panels.Panel[list[Tab]]:
    """One tab per key status, in KEY_STATUSES order, ``current`` marked; with ``updated_within`` (seconds) the
    terminal and failed tabs count only keys changed that recently (the snapshot counts every one: not used).
    Read once per request (the breakdown looks at the current tab's count: ``counted``)."""
    read = g.setdefault("key_tabs", {})
    if (current, updated_within) not in read:
        read[(current, updated_within)] = _load(current, updated_within)
    return read[(current, updated_within)]


def counted(status: str, updated_within: float | None) -> Tab | None:
    """``status``'s tab as this request already counted it with ``updated_within``, else None (nothing is read)."""
    for (_, window), panel in g.get("key_tabs", {}).items():
        if window == updated_within and panel.ok and panel.value is not None:
            return next((t for t in panel.value if t.status == status), None)
    return None


def far_past_cap(windowed: bool) -> set[str]:
    """The states a fresh snapshot puts far past the cap (not counted: their number is the snapshot's), and the
    succeeded and failed_final keys when the rollup job's count of them (stored because counting them is slow) is
    far past it."""
    config = get_target().settings
    snapshot = _snapshot()
    done = None if windowed else _stored_counts().get(("keys", DONE))
    many_done = {"succeeded"} if done is not None and (done.count or 0) > SKIP_FACTOR * COUNT_CAP else set()
    windows = None if windowed else _stored_windows()
    if windows is not None and windows.failed_final > SKIP_FACTOR * COUNT_CAP:
        many_done.add("failed_final")
    fresh = (
        snapshot is not None
        and (datetime.now(timezone.utc) - snapshot.taken_at).total_seconds()
        <= FRESH_INTERVALS * config.snapshot_interval_seconds
    )
    return many_done | {
        status
        for status, field in SNAPSHOT_FIELDS.items()
        if fresh and not (windowed and status in CHANGE_TABS) and getattr(snapshot, field) > SKIP_FACTOR * COUNT_CAP
    }


def _stored_windows() -> WindowCounts | None:
    if "key_tabs_windows" not in g:
        # a panel of its own: nothing reads after it in its transaction, which ends when it fails (page_reads)
        g.key_tabs_windows = panels.load(read_stored, "key_windows", savepoint=False).value
    return g.key_tabs_windows


def _stored_counts() -> dict:
    if "key_tabs_stored" not in g:
        g.key_tabs_stored = panels.load(stored_state_counts, savepoint=False).value or {}
    return g.key_tabs_stored


def _snapshot() -> snapshots.Snapshot | None:
    if "key_tabs_snapshot" not in g:
        g.key_tabs_snapshot = panels.load(snapshots.get_latest_snapshot).value
    return g.key_tabs_snapshot


def _load(current: str, updated_within: float | None) -> panels.Panel[list[Tab]]:
    config = get_target().settings  # this database's lease and snapshot interval, as its list reads them
    snapshot = _snapshot()
    windowed = set(CHANGE_TABS) if updated_within is not None else set()
    far_past = far_past_cap(updated_within is not None)
    caps = {status: 0 if status in far_past else COUNT_CAP for status in keys.KEY_STATUSES}
    counted = panels.load(
        keys.count_keys_by_state,
        get_target().tables,
        lease_seconds=config.default_lease_seconds,
        caps=caps,
        updated_within=updated_within,
        index="index_keys_updated",
    )
    if not counted.ok:
        return panels.failed(counted)
    tabs = []
    for status in keys.KEY_STATUSES:
        value = getattr(counted.value, status)
        more = status in far_past or value > COUNT_CAP
        from_snapshot = (
            getattr(snapshot, SNAPSHOT_FIELDS[status])
            if more and snapshot is not None and status in SNAPSHOT_FIELDS and status not in windowed
            else None
        )
        taken_at = snapshot.taken_at if snapshot is not None and from_snapshot is not None else None
        tabs.append(
            Tab(
                status,
                LABELS[status],
                COUNT_CAP if status in far_past else min(value, COUNT_CAP),
                more,
                from_snapshot,
                taken_at,
                status == current,
            )
        )
    return panels.Panel(value=tabs)


def counts_json(tabs: list[Tab]) -> dict[str, Any]:
    return {
        t.status: {"count": t.count, "more": t.more, "snapshot": t.snapshot, "snapshot_at": t.snapshot_at} for t in tabs
    }
