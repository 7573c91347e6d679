"""pg-transactional-outbox (npm): its outbox and inbox tables, of one shape.

Follows Zehelein/pg-transactional-outbox examples/setup/out/example-trx-polling.sql (the setup script the library
generates), at aac88bad.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_COLUMNS = (
    Column("id", UUID),
    Column("aggregate_type", TEXT),
    Column("message_type", TEXT),
    Column("payload", JSONB),
    Column("locked_until", TSTZ),
    Column("created_at", TSTZ),
    Column("processed_at", TSTZ),
    Column("abandoned_at", TSTZ),
    Column("started_attempts", INTEGER),
    Column("finished_attempts", INTEGER),
)
_TIMES = (
    Time("created_at", "written", TIMESTAMPTZ),
    Time("locked_until", "lease ends", TIMESTAMPTZ),
    Time("processed_at", "processed", TIMESTAMPTZ, done=True),
    Time("abandoned_at", "abandoned", TIMESTAMPTZ),
)


# One shape for both tables: the same states, one block each in queries/profile_states.sql for both.
_BLOCKS = (
    (PENDING, "state_pg_transactional_outbox_pending", ""),
    (IN_PROGRESS, "state_pg_transactional_outbox_in_progress", ""),
    (STUCK, "state_pg_transactional_outbox_stuck", "a worker took it and its lease ran out without finishing"),
    (DONE, "state_pg_transactional_outbox_done", ""),
    (FAILED, "state_pg_transactional_outbox_failed", "poisonous or out of attempts"),
    (PURGEABLE, "state_pg_transactional_outbox_purgeable", ""),
)
_STATES = tuple(State(meaning, role, block, note) for role in ("outbox", "inbox") for meaning, block, note in _BLOCKS)


PROFILE = Profile(
    name="pg-transactional-outbox",
    library="pg-transactional-outbox",
    default_schema="public",
    # the outbox and the inbox are one shape: the library generates both tables from the same definition
    tables=tuple(
        Table(
            role,
            role,
            f"{role}_table",
            _COLUMNS,
            identity=("id",),
            lease="locked_until",
            attempts="started_attempts",
            times=_TIMES,
            payload="payload",
            optional=True,
        )
        for role in ("outbox", "inbox")
    ),
    states=_STATES,
    unfinished_cleanup="pg-transactional-outbox deletes every row older than 60 days, processed or not.",
    cleanup="Every 5 min: processed rows older than 7 days, abandoned older than 14 days, and every row older "
    "than 60 days, processed or not.",
    defaults=tuple(
        Default(
            setting,
            7,
            "its scheduled cleanup: processed rows older than 7 days",
            "abandoned rows go after the same 7 days; the library keeps them 14",
        )
        for setting in ("OUTBOX_RETENTION_DAYS", "INBOX_RETENTION_DAYS")
    ),
    sources=(
        Source(
            "Zehelein/pg-transactional-outbox",
            "examples/setup/out/example-trx-polling.sql",
            "aac88badf4c4a8d18ad967bc58e8f006a853099a",
        ),
    ),
)
