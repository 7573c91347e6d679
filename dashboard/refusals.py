"""Why a reclassification was refused, in words that name who or what got there first.

The UPDATE decides (its WHERE clause); this only explains its "no" from the row as it was locked, the outbox
rows that contradict the outcome, and the key's latest audit entry: another operator's decision is named with
who and when, a worker's finish with the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from idemdash.core.formatting import duration
from idemdash.core.statuses import REVIEW_HOLDER
from idemdash.queries.audit import AuditEntry
from idemdash.queries.reclassify import LockedKey, Reclassification

# an audit action ("reclassify:abandoned", "reclassify-bulk:safe_to_retry") as a verb phrase
_DID = {
    "abandoned": "abandoned it",
    "safe_to_retry": "marked it safe to retry",
    "already_succeeded": "marked it already succeeded",
    "needs_review": "put it on hold for review",
}


def why_not(
    locked: LockedKey, change: Reclassification, outbox_rows: Sequence[Any], last: AuditEntry | None, *, now: datetime
) -> str:
    """The 409 message for a reclassification the database refused."""
    decided = _operator_decision(last, now)
    if locked.status != "processing":
        who = decided if decided and last is not None and last.to_status == locked.status else _worker_finish(locked)
        return f"the key is {locked.status} now, not stuck: {who}. Nothing was overwritten."
    if change.expected_attempt_count is not None and locked.attempt_count != change.expected_attempt_count:
        return (
            f"changed since you looked: attempt_count is {locked.attempt_count}, you saw "
            f"{change.expected_attempt_count} (a retry re-claimed it{_by(locked.claimed_by)}). "
            "Nothing was changed."
        )
    if change.check_locked_until and locked.locked_until != change.expected_locked_until:
        held = decided and last is not None and last.action.endswith(":needs_review")
        by = (
            f" ({decided})"
            if held and locked.claimed_by == REVIEW_HOLDER
            else f" (claimed by {locked.claimed_by})"
            if locked.claimed_by
            else ""
        )
        return (
            "changed since you looked: locked_until is "
            f"{locked.locked_until.isoformat() if locked.locked_until else 'NULL'}, you saw "
            f"{change.expected_locked_until.isoformat() if change.expected_locked_until else 'NULL'}{by}. "
            "Nothing was changed."
        )
    if outbox_rows:
        return _contradicted(change.to, outbox_rows)
    return (
        f"the key is not stuck: its lease is live ({locked.claimed_by or 'a worker'} holds it"
        f"{' until ' + locked.locked_until.isoformat() if locked.locked_until else ''}). Nothing was changed."
    )


def _contradicted(to: str, rows: Sequence[Any]) -> str:
    first = rows[0]
    named = f"outbox row {first.outbox_id} ({first.event_type}, {first.status})"
    more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
    if to == "abandoned":
        return (
            f"{named}{more} exists for this key: its business effect committed, so abandoned would tell the "
            "client the request failed while the effect exists. Nothing was changed: choose already_succeeded "
            "(the form is filled in from the outbox row), or needs_review; if the row is a known false "
            "positive, send override_evidence: true with a reason saying so."
        )
    return (
        f"{named}{more} exists for this key now: its business effect committed, so a retry would run it a "
        "second time. Nothing was changed: look at the key again and choose already_succeeded."
    )


def _operator_decision(last: AuditEntry | None, now: datetime) -> str | None:
    if last is None or not last.action.startswith(("reclassify:", "reclassify-bulk:")):
        return None
    outcome = last.action.partition(":")[2]
    how = " in a bulk action" if last.parent_id is not None or last.action.startswith("reclassify-bulk:") else ""
    return f"{last.actor} {_DID.get(outcome, outcome)}{how} {duration(max((now - last.at).total_seconds(), 0))} ago"


def _worker_finish(locked: LockedKey) -> str:
    return f"its worker{_by(locked.claimed_by)} or a client's retry finished it first"


def _by(worker: str | None) -> str:
    return f", {worker}" if worker and worker != REVIEW_HOLDER else ""
