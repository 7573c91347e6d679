"""The table Debezium's outbox event router reads from the write-ahead log; its name is the user's choice.

Follows debezium/debezium documentation/modules/ROOT/pages/transformations/outbox-event-router.adoc (the expected
columns; Debezium ships no CREATE TABLE). The table records no state: what is pending is what the replication
slot has not yet read.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

PROFILE = Profile(
    name="debezium-outbox",
    library="Debezium outbox event router",
    default_schema="public",
    tables=(
        Table(
            "outbox",
            "outboxevent",
            "outbox_table",
            (
                Column("id", UUID),
                Column("aggregatetype", TEXT),
                Column("aggregateid", TEXT),
                Column("type", TEXT),
                Column("payload", JSONB + TEXT + ("bytea",)),
            ),
            identity=("id",),
            payload="payload",
            match=ANY_NAME,
        ),
    ),
    states=(
        State(
            PENDING,
            "outbox",
            "state_debezium_outbox_outbox_pending",
            "rows the replication slot may not have "
            "read: compare the slot's "
            "confirmed_flush_lsn with the current WAL position",
        ),
    ),
    cleanup="None in the connector; the Quarkus extension deletes each row right after inserting it "
    "(remove-after-insert, default true). A row is safe to delete only once the slot has read it.",
    reads_wal=True,
    sources=(
        Source(
            "debezium/debezium", "documentation/modules/ROOT/pages/transformations/outbox-event-router.adoc", "aad55199"
        ),
    ),
)
