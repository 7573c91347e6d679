"""Idempotency keys as Brandur Leach's rocket-rides-atomic keeps them (the shape his articles made common).

Follows brandur/rocket-rides-atomic schema.sql (idempotency_keys; last changed at 1226b75a), and the lock timeout,
completer and reaper of api.rb, completer.rb and reaper.rb, at 94b370dd.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_REPO = "brandur/rocket-rides-atomic"
_COMMIT = "94b370ddbdc8d08fb263f07c221bab42190d48e6"

PROFILE = Profile(
    name="brandur",
    library="Brandur-style idempotency keys",
    default_schema="public",
    tables=(
        Table(
            "keys",
            "idempotency_keys",
            "keys_table",
            (
                Column("id", INTEGER),
                Column("created_at", TSTZ),
                Column("idempotency_key", TEXT),
                Column("last_run_at", TSTZ),
                Column("locked_at", TSTZ),
                Column("recovery_point", TEXT),
                Column("response_code", INTEGER),
                Column("response_body", JSONB),
                Column("user_id", INTEGER),
            ),
            identity=("user_id", "idempotency_key"),
            state="recovery_point",
            lease="locked_at",
            times=(
                Time("created_at", "created", TIMESTAMPTZ),
                Time("last_run_at", "last run", TIMESTAMPTZ),
                Time("locked_at", "locked", TIMESTAMPTZ),
            ),
            payload="response_body",
            changed="last_run_at",
        ),
    ),
    states=(
        State(
            PENDING,
            "keys",
            "state_brandur_keys_pending",
            "unlocked and unfinished: waiting for a retry or the completer",
        ),
        State(IN_PROGRESS, "keys", "state_brandur_keys_in_progress"),
        State(STUCK, "keys", "state_brandur_keys_stuck", "the lock timeout is 90 s (IDEMPOTENCY_KEY_LOCK_TIMEOUT)"),
        State(DONE, "keys", "state_brandur_keys_done", "error responses finish a key too: response_code says which"),
        State(PURGEABLE, "keys", "state_brandur_keys_purgeable", "the reaper's 72 h, finished keys only"),
    ),
    unfinished_cleanup="Brandur's reaper deletes every key created more than 72 h ago, whatever its recovery point: "
    "an unfinished key a client may still retry goes with it.",
    cleanup="reaper.rb deletes every key created more than 72 h ago, 1000 a batch, whatever its recovery_point "
    "(unfinished keys too); completer.rb re-drives unfinished keys older than 5 min.",
    defaults=(
        Default("INBOX_RETENTION_DAYS", 3, "reaper.rb: IDEMPOTENCY_KEY_REAP_TIMEOUT, 72 hours"),
        Default("DEFAULT_LEASE_SECONDS", 90, "api.rb: IDEMPOTENCY_KEY_LOCK_TIMEOUT = 90"),
    ),
    sources=(
        Source(_REPO, "schema.sql", _COMMIT),
        Source(_REPO, "api.rb", _COMMIT),
        Source(_REPO, "completer.rb", _COMMIT),
        Source(_REPO, "reaper.rb", _COMMIT),
    ),
)
