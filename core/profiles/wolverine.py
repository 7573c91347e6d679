"""Wolverine's PostgreSQL durability: incoming and outgoing envelopes, dead letters, nodes.

Wolverine ships no SQL file: Weasel renders the tables that JasperFx/wolverine src/Persistence/
Wolverine.Postgresql/Schema/{IncomingEnvelopeTable,OutgoingEnvelopeTable,DeadLettersTable}.cs and
PostgresqlMessageStore.cs (wolverine_nodes) declare, names from src/Persistence/Wolverine.RDBMS/
DatabaseConstants.cs, at a4b6f5bd. Guid is uuid, string varchar, DateTimeOffset timestamptz.

Its two actions are what Wolverine itself writes: the orphan sweep (src/Persistence/Wolverine.RDBMS/Durability/
ReleaseOrphanedMessagesCommand.cs) reads the owners present in a table, then the node numbers of wolverine_nodes,
does nothing when that table is empty, and sets ``owner_id = 0`` on the incoming and outgoing rows of every owner
missing from it, so that any node recovers them. A dead letter is replayed by setting ``replayable = true``
(``ReplayAsync`` in src/Persistence/Wolverine.RDBMS/MessageDatabase.DeadLetterAdminService.cs); the durability
agent then copies replayable rows into the incoming table as Incoming, unowned, and deletes them
(src/Persistence/Wolverine.RDBMS/Durability/MoveReplayableErrorMessagesToIncomingOperation.cs).
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_REPO = "JasperFx/wolverine"
_DIR = "src/Persistence/Wolverine.Postgresql/"
_COMMIT = "a4b6f5bd91adf23246fe49f1a3935ce72ab7e307"
_RDBMS = "src/Persistence/Wolverine.RDBMS/"

PROFILE = Profile(
    name="wolverine",
    library="Wolverine durable messaging (PostgreSQL)",
    default_schema="wolverine",
    tables=(
        Table(
            "inbox",
            "wolverine_incoming_envelopes",
            "inbox_table",
            (
                Column("id", UUID),
                Column("status", TEXT),
                Column("owner_id", INTEGER),
                Column("execution_time", TSTZ),
                Column("attempts", INTEGER),
                Column("body"),
                Column("message_type", TEXT),
                Column("received_at", TEXT),
                Column("keep_until", TSTZ),
            ),
            identity=("id",),
            state="status",
            owner="owner_id",
            attempts="attempts",
            times=(Time("execution_time", "scheduled for", TIMESTAMPTZ), Time("keep_until", "kept until", TIMESTAMPTZ)),
            payload="body",
            unowned=("0",),
        ),
        Table(
            "outbox",
            "wolverine_outgoing_envelopes",
            "outbox_table",
            (
                Column("id", UUID),
                Column("owner_id", INTEGER),
                Column("destination", TEXT),
                Column("deliver_by", TSTZ),
                Column("body"),
                Column("attempts", INTEGER),
            ),
            identity=("id",),
            owner="owner_id",
            attempts="attempts",
            times=(Time("deliver_by", "deliver by", TIMESTAMPTZ),),
            payload="body",
            unowned=("0",),
        ),
        Table(
            "dead_letters",
            "wolverine_dead_letters",
            "dead_letters_table",
            (
                Column("id", UUID),
                Column("exception_type", TEXT),
                Column("exception_message", TEXT),
                Column("replayable", BOOLEAN),
                Column("sent_at", TSTZ),
            ),
            identity=("id",),
            times=(Time("sent_at", "sent", TIMESTAMPTZ),),
            payload="body",
            error="exception_message",
        ),
        Table(
            "nodes",
            "wolverine_nodes",
            "nodes_table",
            (Column("id", UUID), Column("node_number", INTEGER), Column("health_check", TSTZ)),
            identity=("node_number",),
            times=(Time("health_check", "last heartbeat", TIMESTAMPTZ),),
            optional=True,
        ),
    ),
    states=(
        State(
            PENDING,
            "inbox",
            "state_wolverine_inbox_pending",
            "unowned Incoming rows (any node may recover them) and Scheduled rows waiting for execution_time",
        ),
        State(IN_PROGRESS, "inbox", "state_wolverine_inbox_in_progress", "owned by node number owner_id"),
        State(
            STUCK,
            "inbox",
            "state_wolverine_inbox_stuck",
            "Incoming rows owned by a node missing from wolverine_nodes (while it lists any node, as Wolverine's "
            "orphan sweep judges), and Scheduled rows overdue by more than the lease "
            "(IDEMDASH_DEFAULT_LEASE_SECONDS)",
        ),
        State(DONE, "inbox", "state_wolverine_inbox_done", "kept until keep_until as the idempotency record"),
        State(PURGEABLE, "inbox", "state_wolverine_inbox_purgeable"),
        State(PENDING, "outbox", "state_wolverine_outbox_pending", "a row exists until it is sent, then it is deleted"),
        State(
            STUCK,
            "outbox",
            "state_wolverine_outbox_stuck",
            "owned by a node missing from wolverine_nodes, while it lists any node",
        ),
        State(
            FAILED,
            "dead_letters",
            "state_wolverine_dead_letters_failed",
            "every row; replayable = true is queued for replay",
        ),
    ),
    cleanup="Deletes Handled incoming rows whose keep_until has passed (5 min after handling by default) in ctid "
    "batches; deletes outgoing rows once sent; releases rows of dead nodes to owner_id = 0; dead letters "
    "stay unless DeadLetterQueueExpirationEnabled (then deleted past expires).",
    sources=(
        Source(_REPO, _DIR + "Schema/IncomingEnvelopeTable.cs", _COMMIT),
        Source(_REPO, _DIR + "Schema/OutgoingEnvelopeTable.cs", _COMMIT),
        Source(_REPO, _DIR + "Schema/DeadLettersTable.cs", _COMMIT),
        Source(_REPO, _DIR + "PostgresqlMessageStore.cs", _COMMIT),
        Source(_REPO, "src/Persistence/Wolverine.RDBMS/DatabaseConstants.cs", _COMMIT),
    ),
    actions=(
        LibraryAction(
            "release-dead-node",
            ("inbox", "outbox"),
            "Release to any node",
            "Wolverine's orphan sweep: an envelope owned by a node number missing from wolverine_nodes (while that "
            "table lists any node at all) gets owner_id = 0, so that any live node recovers it.",
            Source(_REPO, _RDBMS + "Durability/ReleaseOrphanedMessagesCommand.cs", _COMMIT),
            "action_wolverine_release_dead_node",
            "action_wolverine_release_dead_node_sets",
            expected=("owner_id",),
            changes=("owner_id",),
        ),
        LibraryAction(
            "replay-dead-letter",
            ("dead_letters",),
            "Replay",
            "Wolverine's dead-letter replay: replayable = true; its durability agent then moves the envelope back "
            "to wolverine_incoming_envelopes (Incoming, owner_id = 0) and deletes the dead letter.",
            Source(_REPO, _RDBMS + "MessageDatabase.DeadLetterAdminService.cs", _COMMIT),
            "action_wolverine_replay_dead_letter",
            "action_wolverine_replay_dead_letter_sets",
            expected=("replayable",),
            changes=("replayable",),
        ),
    ),
)
