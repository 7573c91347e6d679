"""One request across services, from the tables alone: what each database recorded of it (a key, the outbox rows it
wrote, each consumer's inbox row of each message) and the first step that has not happened, in words.

Nothing here runs SQL: queries/journey.py reads the rows (as the dataclasses below) and core/routes.py says which
consumers usually get an event type, and how soon. A consumer is named by what its inbox records (a consumer name, a
CAP group) or, where the library records none (pg-transactional-outbox, MassTransit, Wolverine), by its database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from idemdash.core.formatting import duration

# a message nobody consumed this long after it was published, and after twice a consumer's usual delay, is missing
MISSING_AFTER_SECONDS = 60.0
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


@dataclass(frozen=True)
class KeyStep:
    scope: str
    key: str
    status: str
    claimed_by: str | None
    attempt_count: int
    created_at: datetime
    updated_at: datetime
    locked_until: datetime | None
    stuck: bool


@dataclass(frozen=True)
class Sent:
    """An outbox row: a message the producer wrote. ``phase`` is pending, published, parked or failed."""

    message_id: str
    event_type: str | None
    status: str
    phase: str
    attempts: int | None
    created_at: datetime | None
    published_at: datetime | None
    scope: str | None
    key: str | None
    traceparent: str | None


@dataclass(frozen=True)
class Consumed:
    """An inbox row: a message a consumer received. ``state`` is consumed, received (not finished) or failed."""

    consumer: str | None
    message_id: str
    received_at: datetime | None
    consumed_at: datetime | None
    state: str


@dataclass(frozen=True)
class Expected:
    """A consumer that usually gets an event type (core/routes.py): where, and its usual delay after publishing."""

    database: str
    consumer: str
    usual_seconds: float | None


@dataclass
class Message:
    database: str
    sent: Sent
    consumed: list[tuple[str, str, Consumed]] = field(default_factory=list)  # (database, consumer, row)
    waiting: list[Expected] = field(default_factory=list)  # expected, not yet consumed, still within its delay
    missing: list[Expected] = field(default_factory=list)  # expected, not consumed long after its delay
    unknown: list[Expected] = field(default_factory=list)  # expected, in a database that did not answer


@dataclass
class Journey:
    q: str
    keys: list[tuple[str, KeyStep]]  # (database, key)
    messages: list[Message]
    unmatched: list[tuple[str, str, Consumed]]  # inbox rows of q whose outbox row was not found
    verdict: str  # the first step that has not happened, in words
    problems: list[str]  # every step not taken (missing, stuck, parked), in words
    traces: list[tuple[str, str]] = field(default_factory=list)  # (trace id, parent span id)


def consumer_name(database: str, row: Consumed) -> str:
    return row.consumer or database


def trace_of(traceparent: str | None) -> tuple[str, str] | None:
    """The trace id and parent span id of a W3C ``traceparent``, or None when it is not one."""
    match = _TRACEPARENT.match((traceparent or "").strip().lower())
    return (match.group(1), match.group(2)) if match else None


def _since(moment: datetime | None, now: datetime) -> str:
    return "at a time not recorded" if moment is None else f"{duration((now - moment).total_seconds())} ago"


def _key_words(key: KeyStep, now: datetime) -> str | None:
    """What a key that wrote no outbox row says, or None when it finished cleanly."""
    name = f"key `{key.scope}/{key.key}`"
    if key.status == "processing" and key.stuck:
        lease = "" if key.locked_until is None else f": its lease ran out {_since(key.locked_until, now)}"
        return (
            f"{name} is stuck in processing{lease} (claimed by {key.claimed_by or 'nobody recorded'}, "
            f"{key.attempt_count} attempts); no outbox row was written"
        )
    if key.status == "processing":
        return f"{name} is processing (since {_since(key.updated_at, now)}); no outbox row written yet"
    if key.status.startswith("failed"):
        return f"{name} {key.status.replace('_', ' ')} {_since(key.updated_at, now)}; no outbox row was written"
    return None


def _message_words(m: Message, now: datetime) -> list[str]:
    s = m.sent
    what = f"`{s.event_type or s.message_id}` ({m.database})"
    if s.phase == "parked":
        return [f"{what} is parked by an operator (attempts {s.attempts}): not published, no consumer will get it"]
    if s.phase == "failed":
        return [f"{what} was given up by the library ({s.status}, attempts {s.attempts}): never published"]
    if s.phase == "pending":
        return [
            f"{what} written {_since(s.created_at, now)}; not yet published"
            + (f" ({s.attempts} attempts)" if s.attempts else "")
        ]
    published = f"{what} published {_since(s.published_at or s.created_at, now)}"
    words = [
        f"{published}; missing at `{e.consumer}` ({e.database}): it usually consumes within "
        f"{duration(e.usual_seconds) if e.usual_seconds is not None else 'a time not recorded'}"
        for e in m.missing
    ]
    words += [f"{published}; not yet consumed by `{e.consumer}` ({e.database})" for e in m.waiting]
    words += [f"{published}; unknown at `{e.consumer}`: its database {e.database} did not answer" for e in m.unknown]
    words += [
        f"{what}: `{c}` ({db}) received it and has not finished it ({row.state})"
        for db, c, row in m.consumed
        if row.state != "consumed"
    ]
    return words


def place(
    sent: list[tuple[str, Sent]],
    consumed: list[tuple[str, Consumed]],
    expected: dict[str, list[Expected]],
    now: datetime,
    unanswered: frozenset[str] = frozenset(),
) -> tuple[list[Message], list[tuple[str, str, Consumed]]]:
    """Each outbox row with its consumers' inbox rows, and the expected consumers that have none (waiting while within
    twice their usual delay and MISSING_AFTER_SECONDS, missing after; unknown where their database did not answer);
    inbox rows of no row found, apart."""
    by_id: dict[str, list[tuple[str, str, Consumed]]] = {}
    for database, got_row in consumed:
        by_id.setdefault(got_row.message_id.lower(), []).append((database, consumer_name(database, got_row), got_row))
    messages, used = [], set()
    for database, row in sent:
        got = by_id.get(row.message_id.lower(), [])
        used.add(row.message_id.lower())
        message = Message(database, row, got)
        if row.phase == "published":
            have = {(db, c) for db, c, _ in got}
            published = row.published_at or row.created_at
            age = (now - published).total_seconds() if published else None
            for e in expected.get(row.event_type or "", []):
                if (e.database, e.consumer) in have:
                    continue
                if e.database in unanswered:
                    message.unknown.append(e)
                    continue
                late = max(MISSING_AFTER_SECONDS, 2 * (e.usual_seconds or 0))
                (message.missing if age is None or age > late else message.waiting).append(e)
        messages.append(message)
    unmatched = [hit for mid, hits in by_id.items() if mid not in used for hit in hits]
    return messages, unmatched


def follow(
    q: str,
    keys: list[tuple[str, KeyStep]],
    sent: list[tuple[str, Sent]],
    consumed: list[tuple[str, Consumed]],
    expected: dict[str, list[Expected]],
    now: datetime,
    unanswered: frozenset[str] = frozenset(),
) -> Journey:
    messages, unmatched = place(sent, consumed, expected, now, unanswered)
    problems: list[str] = []
    if not messages:
        problems += [w for _, k in keys if (w := _key_words(k, now))]
    for m in messages:
        problems += _message_words(m, now)
    traces = list(dict.fromkeys(t for m in messages if (t := trace_of(m.sent.traceparent))))
    if problems:
        verdict = problems[0]
    elif messages:
        verdict = "every message was consumed by every consumer that usually gets its event type"
    elif keys:
        verdict = "the key finished and wrote no outbox row: there is nothing further to follow"
    elif unmatched:
        verdict = (
            f"consumed by {', '.join(sorted({f'`{c}`' for _, c, _ in unmatched}))}; its outbox row is not "
            "in any database that answered (published and purged, or written by a service not served here)"
        )
    else:
        verdict = "no database that answered records it"
    return Journey(q, keys, messages, unmatched, verdict, problems, traces)
