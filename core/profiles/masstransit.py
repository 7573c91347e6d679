"""MassTransit's Entity Framework Core transactional outbox: InboxState, OutboxState, OutboxMessage.

MassTransit ships no SQL: the application's own EF migration creates the tables from the model that
MassTransit/MassTransit src/Persistence/MassTransit.EntityFrameworkCoreIntegration/Configuration/
EntityFrameworkOutboxConfigurationExtensions.cs (ConfigureInboxStateEntity, ConfigureOutboxStateEntity,
ConfigureOutboxMessageEntity) and the entity classes beside it describe, at c1e5caa9. EF Core quotes the
PascalCase names by default; EFCore.NamingConventions' snake_case gives inbox_state, message_id, ...
Npgsql 6+ maps DateTime to timestamptz; its legacy timestamp switch gives timestamp holding UTC.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_REPO = "MassTransit/MassTransit"
_DIR = "src/Persistence/MassTransit.EntityFrameworkCoreIntegration/"
_COMMIT = "c1e5caa9a49ba4e56dbad6ed1b9c8f7843a9dba5"

PROFILE = Profile(
    name="masstransit",
    library="MassTransit Entity Framework Core outbox",
    default_schema="public",
    tables=(
        Table(
            "inbox",
            "InboxState",
            "inbox_table",
            (
                Column("Id", INTEGER),
                Column("MessageId", UUID),
                Column("ConsumerId", UUID),
                Column("Received", ANY_TIMESTAMP),
                Column("ReceiveCount", INTEGER),
                Column("Consumed", ANY_TIMESTAMP),
                Column("Delivered", ANY_TIMESTAMP),
            ),
            identity=("MessageId", "ConsumerId"),
            attempts="ReceiveCount",
            times=(
                Time("Received", "received", TIMESTAMPTZ),
                Time("Consumed", "consumed", TIMESTAMPTZ, done=True),
                Time("Delivered", "its outbox messages sent", TIMESTAMPTZ),
            ),
            optional=True,
        ),
        Table(
            "outbox_state",
            "OutboxState",
            "outbox_state_table",
            (Column("OutboxId", UUID), Column("Created", ANY_TIMESTAMP), Column("Delivered", ANY_TIMESTAMP)),
            identity=("OutboxId",),
            times=(Time("Created", "saved", TIMESTAMPTZ),),
            optional=True,
        ),
        Table(
            "outbox",
            "OutboxMessage",
            "outbox_table",
            (
                Column("SequenceNumber", INTEGER),
                Column("MessageId", UUID),
                Column("SentTime", ANY_TIMESTAMP),
                Column("Body", TEXT),
                Column("OutboxId", UUID),
                Column("InboxMessageId", UUID),
                Column("InboxConsumerId", UUID),
            ),
            identity=("SequenceNumber",),
            times=(Time("SentTime", "written", TIMESTAMPTZ), Time("EnqueueTime", "scheduled for", TIMESTAMPTZ)),
            payload="Body",
        ),
    ),
    states=(
        State(
            PENDING,
            "outbox",
            "state_masstransit_outbox_pending",
            "a message row exists until it is sent, then it is deleted",
        ),
        State(
            STUCK,
            "outbox_state",
            "state_masstransit_outbox_state_stuck",
            "no lease: the delivery service only holds a row lock, taken with SKIP LOCKED",
        ),
        State(
            FAILED,
            "outbox",
            "state_masstransit_outbox_failed",
            "orphans: messages whose OutboxState row is gone are never delivered",
        ),
        State(
            IN_PROGRESS,
            "inbox",
            "state_masstransit_inbox_in_progress",
            "received, not yet consumed (a faulted consumer leaves it so)",
        ),
        State(STUCK, "inbox", "state_masstransit_inbox_stuck"),
        State(DONE, "inbox", "state_masstransit_inbox_done", order="Delivered"),
        State(
            PURGEABLE,
            "inbox",
            "state_masstransit_inbox_purgeable",
            "InboxCleanupService's rule; a row never delivered is never deleted",
            order="Delivered",
        ),
    ),
    namings=(AS_IS, SNAKE_CASE),
    indexes=(
        Index(
            "inbox",
            "undelivered",
            "profile_index_masstransit_inbox_undelivered",
            "inbox rows never delivered, by when they were received: the in-progress and stuck counts and lists "
            "(the library's own index on Delivered serves the purge)",
        ),
        Index(
            "outbox_state",
            "undelivered",
            "profile_index_masstransit_outbox_state_undelivered",
            "outbox states never delivered, by when they were created: the stuck count and list",
        ),
        Index(
            "outbox",
            "message_id",
            "profile_index_masstransit_outbox_message_id",
            "outbox messages by MessageId: the journey's one lookup of a message not yet sent",
        ),
    ),
    cleanup="InboxCleanupService deletes InboxState rows delivered longer ago than DuplicateDetectionWindow "
    "(30 min), 100 a batch every 10 s; the delivery service deletes each OutboxMessage once sent and the "
    "OutboxState once delivered. Undelivered InboxState rows and orphaned messages stay.",
    defaults=(
        Default(
            "INBOX_RETENTION_DAYS",
            1,
            "InboxCleanupService: DuplicateDetectionWindow, 30 minutes",
            "the setting counts whole days: 1, the least it can say, keeps rows longer than MassTransit, never shorter",
        ),
    ),
    sources=(
        Source(_REPO, _DIR + "Configuration/EntityFrameworkOutboxConfigurationExtensions.cs", _COMMIT),
        Source(_REPO, _DIR + "EntityFrameworkCoreIntegration/InboxState.cs", _COMMIT),
        Source(_REPO, _DIR + "EntityFrameworkCoreIntegration/OutboxState.cs", _COMMIT),
        Source(_REPO, _DIR + "EntityFrameworkCoreIntegration/OutboxMessage.cs", _COMMIT),
    ),
)
