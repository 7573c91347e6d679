"""idemdash's own reference tables (queries/app_schema.sql), under today's table-name settings' defaults."""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

PROFILE = Profile(
    name="reference",
    library="idemdash reference schema",
    default_schema="app",
    tables=(
        Table(
            "keys",
            "idempotency_request",
            "keys_table",
            (
                Column("idempotency_scope", TEXT),
                Column("idempotency_key", TEXT),
                Column("status"),
                Column("locked_until", TSTZ),
                Column("attempt_count", INTEGER),
                Column("expires_at", TSTZ),
            ),
            identity=("idempotency_scope", "idempotency_key"),
            state="status",
            lease="locked_until",
            owner="claimed_by",
            attempts="attempt_count",
            times=(
                Time("claimed_at", "claimed", TIMESTAMPTZ),
                Time("locked_until", "lease ends", TIMESTAMPTZ),
                Time("updated_at", "last change", TIMESTAMPTZ),
                Time("expires_at", "may be purged", TIMESTAMPTZ),
            ),
            payload="response_body",
            error="failure_message",
            groups=("idempotency_scope",),
            extras=("decisions", "suppression"),
            changed="updated_at",
        ),
        Table(
            "inbox",
            "processed_message",
            "inbox_table",
            (Column("consumer_name", TEXT), Column("message_id", TEXT), Column("processed_at", TSTZ)),
            identity=("consumer_name", "message_id"),
            times=(Time("processed_at", "processed", TIMESTAMPTZ, done=True),),
            groups=("consumer_name",),
            extras=("suppression",),
        ),
        Table(
            "outbox",
            "outbox_event",
            "outbox_table",
            (
                Column("outbox_id", UUID),
                Column("status"),
                Column("attempt_count", INTEGER),
                Column("created_at", TSTZ),
                Column("published_at", TSTZ),
                Column("payload", JSONB),
            ),
            identity=("outbox_id",),
            state="status",
            attempts="attempt_count",
            times=(
                Time("created_at", "written", TIMESTAMPTZ),
                Time("published_at", "published", TIMESTAMPTZ, done=True),
            ),
            payload="payload",
            groups=("event_type",),
            extras=("decisions",),
        ),
    ),
    states=(
        State(IN_PROGRESS, "keys", "state_reference_keys_in_progress"),
        State(
            STUCK,
            "keys",
            "state_reference_keys_stuck",
            "a key without a lease end is stuck once claimed longer ago than the lease (IDEMDASH_LEASE_SECONDS)",
        ),
        State(DONE, "keys", "state_reference_keys_done"),
        State(
            FAILED,
            "keys",
            "state_reference_keys_failed",
            "failed_retryable may be claimed again; failed_final is final",
        ),
        State(
            PURGEABLE,
            "keys",
            "state_reference_keys_purgeable",
            "terminal and expired; a purge also keeps a key an operator decided on within the replay horizon, "
            "which this count includes",
        ),
        State(DONE, "inbox", "state_reference_inbox_done", "a row is a message consumed once"),
        State(PURGEABLE, "inbox", "state_reference_inbox_purgeable"),
        State(PENDING, "outbox", "state_reference_outbox_pending"),
        State(DONE, "outbox", "state_reference_outbox_done"),
        State(FAILED, "outbox", "state_reference_outbox_failed", "set aside by an operator"),
        State(PURGEABLE, "outbox", "state_reference_outbox_purgeable"),
    ),
    cleanup="idemdash's own purges (queries/eligibility.sql): terminal, expired keys outside the replay horizon; "
    "inbox rows and published outbox rows past their retention.",
    sources=(Source("idemdash", "queries/app_schema.sql", "this repository"),),
)
