"""Suggested classification of a key, with the evidence behind it (docs/concepts.md, Reclassification).

A suggestion is evidence for a person to weigh, never an action: nothing
here changes a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from idemdash.core.formatting import duration, plural
from idemdash.core.statuses import REVIEW_HOLDER, Outcome


class KeyFacts(Protocol):
    """What a suggestion reads of a key (a row of queries.keys; read-only, so frozen dataclasses fit)."""

    @property
    def status(self) -> str: ...
    @property
    def stuck(self) -> bool: ...
    @property
    def overdue_seconds(self) -> float | None: ...
    @property
    def claimed_by(self) -> str | None: ...
    @property
    def attempt_count(self) -> int: ...
    @property
    def expires_at(self) -> datetime: ...


class OutboxFact(Protocol):
    """What a suggestion reads of an outbox row written under the key (read-only)."""

    @property
    def event_type(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


OUTCOMES: dict[Outcome, str] = {
    "safe_to_retry": "becomes failed_retryable with the lock cleared; the client's next retry re-claims it and runs "
    "again",
    "abandoned": "becomes failed_final (failure code 'abandoned', the reason as message); retries get the final "
    "failure",
    "already_succeeded": "becomes succeeded with the result you give; retries get that result replayed",
    "needs_review": "stays processing with the lease extended, so no retry re-runs it while someone looks",
}


@dataclass(frozen=True)
class Suggestion:
    to: str | None
    evidence: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"to": self.to, "evidence": self.evidence}


def suggest(key: KeyFacts, outbox: Sequence[OutboxFact], *, hotspot_min_attempts: int, now: datetime) -> Suggestion:
    if key.status != "processing":
        return Suggestion(None, [f"The key is {key.status}: it is finished, there is nothing to reclassify."])
    held = key.claimed_by == REVIEW_HOLDER
    if held and not key.stuck:
        return _decide_held(key, outbox)
    if not key.stuck:
        left = -(key.overdue_seconds or 0)
        return Suggestion(
            None,
            [
                f"The lease is still live for {duration(left)} more: the worker "
                f"{key.claimed_by or '(unknown)'} may still finish. Wait for the lease to run out."
            ],
        )
    evidence: list[str] = []
    if held:
        evidence.append("It was held for review and the hold has ended: the next client retry re-claims it.")
    if outbox:
        kinds = ", ".join(sorted({row.event_type for row in outbox}))
        evidence.append(
            f"{plural(len(outbox), 'outbox row')} exist{'s' if len(outbox) == 1 else ''} for this scope "
            f"and key ({kinds}), first written "
            f"{outbox[0].created_at.isoformat(timespec='seconds')}: the business effect committed, "
            "only the completion is missing."
        )
        if key.attempt_count >= hotspot_min_attempts:
            evidence.append(f"It was also attempted {key.attempt_count} times.")
        return Suggestion("already_succeeded", evidence)
    evidence.append("No outbox row exists for this scope and key, so there is no sign the business effect committed.")
    if key.attempt_count >= hotspot_min_attempts:
        evidence.append(
            f"It has been attempted {key.attempt_count} times (hotspot threshold {hotspot_min_attempts}): "
            "retrying again is likely to fail the same way. Look at it before letting it run."
        )
        return Suggestion("needs_review", evidence)
    if key.expires_at < now:
        evidence.append(
            f"Its replay window ended at {key.expires_at.isoformat(timespec='seconds')}: "
            "clients are no longer expected to retry it."
        )
        return Suggestion("abandoned", evidence)
    evidence.append(
        f"The lease ran out {duration(key.overdue_seconds or 0)} ago with "
        f"{plural(key.attempt_count, 'attempt')}: the worker most likely died before the effect. A retry "
        "can safely run it again."
    )
    return Suggestion("safe_to_retry", evidence)


def _decide_held(key: KeyFacts, outbox: Sequence[OutboxFact]) -> Suggestion:
    """A key an operator holds for review: nothing re-runs it while the hold lasts; the evidence decides."""
    held = (
        f"Held for review for {duration(-(key.overdue_seconds or 0))} more: a client's retry gets \"still "
        'processing" until then, so nothing runs it again while someone looks.'
    )
    if outbox:
        return Suggestion(
            "already_succeeded",
            [
                held,
                f"{plural(len(outbox), 'outbox row')} "
                f"exist{'s' if len(outbox) == 1 else ''} for this scope and "
                "key: the business effect committed.",
            ],
        )
    return Suggestion(
        None,
        [
            held,
            "No outbox row exists for this scope and key. Decide when you know: "
            "safe_to_retry if the effect did not happen, abandoned if it must not run again.",
        ],
    )
