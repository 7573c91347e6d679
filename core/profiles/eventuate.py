"""Eventuate Tram's message table (the outbox the CDC relays) and received_messages (the consumer's dedup).

Follows eventuate-foundation/eventuate-common postgres/2.initialize-database.sql and, for the database-id mode
(a dbid primary key), postgres/5.initialize-database-db-id.sql, at 6de8d54d. creation_time is epoch milliseconds.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_REPO = "eventuate-foundation/eventuate-common"
_COMMIT = "6de8d54d50049f0a6444a79f74c90670905754f4"

PROFILE = Profile(
    name="eventuate",
    library="Eventuate Tram",
    default_schema="eventuate",
    tables=(
        Table(
            "outbox",
            "message",
            "outbox_table",
            (
                Column("id", TEXT),
                Column("destination", TEXT),
                Column("headers", TEXT),
                Column("payload", TEXT),
                Column("published", INTEGER),
                Column("creation_time", INTEGER),
            ),
            identity=("id",),
            state="published",
            times=(Time("creation_time", "written", EPOCH_MS),),
            payload="payload",
        ),
        Table(
            "inbox",
            "received_messages",
            "inbox_table",
            (Column("consumer_id", TEXT), Column("message_id", TEXT), Column("creation_time", INTEGER)),
            identity=("consumer_id", "message_id"),
            times=(Time("creation_time", "consumed", EPOCH_MS),),
            optional=True,
        ),
    ),
    states=(
        State(PENDING, "outbox", "state_eventuate_outbox_pending", "not yet relayed by the CDC"),
        State(DONE, "outbox", "state_eventuate_outbox_done"),
        State(PURGEABLE, "outbox", "state_eventuate_outbox_purgeable"),
        State(DONE, "inbox", "state_eventuate_inbox_done", "a row is a message consumed once"),
        State(PURGEABLE, "inbox", "state_eventuate_inbox_purgeable"),
    ),
    indexes=(
        Index(
            "inbox",
            "message_id",
            "profile_index_eventuate_inbox_message_id",
            "received messages by message_id in every consumer: the journey's one lookup of a message "
            "(the library's primary key leads with consumer_id)",
        ),
    ),
    versions=(Version("db-id", "outbox", present=("dbid",)), Version("message-id", "outbox", absent=("dbid",))),
    # the db-id version keys a message by its dbid (its id may be empty: the CDC derives it from the dbid)
    version_identity=(("db-id", "outbox", ("dbid",)),),
    unfinished_cleanup="Eventuate CDC's opt-in MessageCleaner deletes messages by creation_time alone: unpublished "
    "messages too.",
    cleanup="None in Tram itself; the CDC's opt-in MessageCleaner deletes by creation_time alone, unpublished "
    "messages too.",
    sources=(
        Source(_REPO, "postgres/2.initialize-database.sql", _COMMIT),
        Source(_REPO, "postgres/5.initialize-database-db-id.sql", _COMMIT),
    ),
)
