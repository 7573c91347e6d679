"""NServiceBus SQL persistence's outbox: one "<prefix>OutboxData" table per endpoint.

Follows Particular/NServiceBus.Persistence.Sql src/ScriptBuilder/Outbox/Create_PostgreSql.sql (last changed at
c9acb71a) and the outbox cleaner of the persistence, at d1ecdeda. The prefix defaults to the endpoint's name and
'_'; "DispatchedAt" is a timestamp without time zone that the code writes from DateTime.UtcNow.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

PROFILE = Profile(
    name="nservicebus",
    library="NServiceBus SQL persistence outbox",
    default_schema="public",
    tables=(
        Table(
            "outbox",
            "OutboxData",
            "outbox_table",
            (
                Column("MessageId", TEXT),
                Column("Dispatched", BOOLEAN),
                Column("DispatchedAt", TS),
                Column("Operations", JSONB),
            ),
            identity=("MessageId",),
            state="Dispatched",
            times=(Time("DispatchedAt", "dispatched", UTC_TIMESTAMP, done=True),),
            payload="Operations",
            match=SUFFIX,
        ),
    ),
    states=(
        State(
            PENDING,
            "outbox",
            "state_nservicebus_outbox_pending",
            "written in the handler's transaction, not yet dispatched; no creation time is recorded",
        ),
        State(
            DONE,
            "outbox",
            "state_nservicebus_outbox_done",
            "also the deduplication record of the incoming MessageId",
            order="DispatchedAt",
        ),
        State(
            PURGEABLE,
            "outbox",
            "state_nservicebus_outbox_purgeable",
            "DispatchedAt read as UTC whatever the server's time zone",
            order="DispatchedAt",
        ),
    ),
    cleanup="The outbox cleaner deletes rows Dispatched with DispatchedAt older than KeepDeduplicationDataFor "
    "(7 days) every minute, in batches; undispatched rows stay forever.",
    defaults=(Default("OUTBOX_RETENTION_DAYS", 7, "the outbox cleaner's KeepDeduplicationDataFor, 7 days"),),
    sources=(
        Source(
            "Particular/NServiceBus.Persistence.Sql",
            "src/ScriptBuilder/Outbox/Create_PostgreSql.sql",
            "d1ecdedac138d3f490e6bc27b97d8251f35d78bb",
        ),
    ),
)
