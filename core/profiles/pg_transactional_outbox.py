"""pg-transactional-outbox (npm): its outbox and inbox tables, of one shape.

Follows Zehelein/pg-transactional-outbox examples/setup/out/example-trx-polling.sql (the setup script the library
generates), at aac88bad.
"""
from __future__ import annotations

from idemdash.core.profiles.shape import (
    DONE,
    FAILED,
    IN_PROGRESS,
    INTEGER,
    JSONB,
    PENDING,
    PURGEABLE,
    STUCK,
    TEXT,
    TIMESTAMPTZ,
    TSTZ,
    UUID,
    Column,
    Profile,
    Source,
    State,
    Table,
    Time,
)

_COLUMNS = (Column("id", UUID), Column("aggregate_type", TEXT), Column("message_type", TEXT),
            Column("payload", JSONB), Column("locked_until", TSTZ), Column("created_at", TSTZ),
            Column("processed_at", TSTZ), Column("abandoned_at", TSTZ), Column("started_attempts", INTEGER),
            Column("finished_attempts", INTEGER))
_TIMES = (Time("created_at", "written", TIMESTAMPTZ), Time("locked_until", "lease ends", TIMESTAMPTZ),
          Time("processed_at", "processed", TIMESTAMPTZ), Time("abandoned_at", "abandoned", TIMESTAMPTZ))


def _states(role: str) -> tuple[State, ...]:
    return (
        State(PENDING, role, "{processed_at} IS NULL AND {abandoned_at} IS NULL"),
        State(IN_PROGRESS, role, "{processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} > now()"),
        State(STUCK, role, "{processed_at} IS NULL AND {abandoned_at} IS NULL AND {locked_until} <= now() "
                           "AND {started_attempts} > {finished_attempts}",
              "a worker took it and its lease ran out without finishing"),
        State(DONE, role, "{processed_at} IS NOT NULL"),
        State(FAILED, role, "{abandoned_at} IS NOT NULL", "poisonous or out of attempts"),
        State(PURGEABLE, role, "({processed_at} < now() - %(retention)s OR {abandoned_at} < now() - %(retention)s)"),
    )


PROFILE = Profile(
    name="pg-transactional-outbox",
    library="pg-transactional-outbox",
    default_schema="public",
    tables=(
        Table("outbox", "outbox", "outbox_table", _COLUMNS, identity=("id",), lease="locked_until",
              attempts="started_attempts", times=_TIMES, payload="payload", optional=True),
        Table("inbox", "inbox", "inbox_table", _COLUMNS, identity=("id",), lease="locked_until",
              attempts="started_attempts", times=_TIMES, payload="payload", optional=True),
    ),
    states=_states("outbox") + _states("inbox"),
    cleanup="Every 5 min: processed rows older than 7 days, abandoned older than 14 days, and every row older "
            "than 60 days, processed or not.",
    sources=(Source("Zehelein/pg-transactional-outbox", "examples/setup/out/example-trx-polling.sql",
                    "aac88badf4c4a8d18ad967bc58e8f006a853099a"),),
)
