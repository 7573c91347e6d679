"""Routes learned from the tables: for each event type, the databases whose outbox wrote it (producers) and the
consumers whose inbox consumed messages of it in the recent window, with their usual delay after publishing.

A consumed message is matched to its outbox row by message id (the identity columns each profile names); the delay
is the inbox's consumed time less the outbox row's published time (its written time where none is recorded). The
usual delay is the 95th percentile of those delays, so one slow message does not move it much.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from idemdash.core.journey import Consumed, Expected, Sent, consumer_name


@dataclass(frozen=True)
class RouteConsumer:
    database: str
    consumer: str
    messages: int  # messages of the type it consumed in the window
    p50_seconds: float | None  # None: its library records no consumed time
    p95_seconds: float | None


@dataclass(frozen=True)
class Route:
    event_type: str
    producers: tuple[str, ...]
    sent: int  # messages of the type written in the window, in all
    consumers: tuple[RouteConsumer, ...]


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def learn(sent: list[tuple[str, Sent]], consumed: list[tuple[str, Consumed]]) -> list[Route]:
    """The routes the samples show, by event type; a consumed message whose outbox row is not in ``sent`` teaches
    nothing (its type is unknown)."""
    rows = {row.message_id.lower(): (database, row) for database, row in sent if row.event_type}
    producers: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for database, row in rows.values():
        assert row.event_type is not None
        producers.setdefault(row.event_type, set()).add(database)
        counts[row.event_type] = counts.get(row.event_type, 0) + 1
    delays: dict[tuple[str, str, str], list[float]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for database, got in consumed:
        hit = rows.get(got.message_id.lower())
        if hit is None or got.state != "consumed":
            continue
        event_type = hit[1].event_type or ""
        where = (event_type, database, consumer_name(database, got))
        seen[where] = seen.get(where, 0) + 1
        start = hit[1].published_at or hit[1].created_at
        if got.consumed_at is not None and start is not None:
            delays.setdefault(where, []).append(max(0.0, (got.consumed_at - start).total_seconds()))
        else:
            delays.setdefault(where, [])
    routes = []
    for event_type in sorted(producers):
        consumers = tuple(
            RouteConsumer(db, name, seen[(t, db, name)], _percentile(values, 0.5), _percentile(values, 0.95))
            for (t, db, name), values in sorted(delays.items())
            if t == event_type
        )
        routes.append(Route(event_type, tuple(sorted(producers[event_type])), counts[event_type], consumers))
    return routes


def expected(routes: list[Route]) -> dict[str, list[Expected]]:
    """For each event type, the consumers that usually get it, with their usual (95th percentile) delay."""
    return {r.event_type: [Expected(c.database, c.consumer, c.p95_seconds) for c in r.consumers] for r in routes}


@dataclass(frozen=True)
class Learned:
    routes: list[Route]
    learned_at: datetime
    window_seconds: int
    not_answered: dict[str, str]  # databases whose tables were not read, and why
