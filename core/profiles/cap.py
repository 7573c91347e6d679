"""DotNetCore.CAP's PostgreSQL storage: "published" (its outbox) and "received" (its inbox), in schema "cap".

Follows dotnetcore/CAP at e52b8508: src/DotNetCore.CAP.PostgreSql/IStorageInitializer.PostgreSql.cs (the tables,
quoted PascalCase columns), IDataStorage.PostgreSql.cs (what each status is written with, the retry query and
DeleteExpiresAsync, the cleaner's statement), src/DotNetCore.CAP/Internal/StatusName.cs (Failed, Scheduled,
Succeeded, Delayed, Queued), Internal/IMessageSender.Default.cs and Internal/ISubscribeExector.Default.cs (ExpiresAt
of a Succeeded or Failed row), Processor/IDispatcher.Default.cs (Delayed and Queued: ExpiresAt is the publish time),
Processor/IProcessor.Collector.cs (the cleaner) and CAP.Options.cs (the defaults). "Added" and "ExpiresAt" are
`timestamp` columns written from DateTime.Now, the application host's local clock: LIBRARY_TIMEZONE says which
zone that is (default: local). The published table has no "Group"; the received one has.
"""

from __future__ import annotations

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_REPO = "dotnetcore/CAP"
_COMMIT = "e52b8508e54cdb7a9ce7f9fec03d9ea8ad2710fb"
_PG = "src/DotNetCore.CAP.PostgreSql/"
_CAP = "src/DotNetCore.CAP/"

# CapOptions.FailedRetryCount's default: a Failed row with fewer Retries is still retried by the retry processor
FAILED_RETRY_COUNT = 50

_COLUMNS = (
    Column("Id", INTEGER),
    Column("Version", TEXT),
    Column("Name", TEXT),
    Column("Content", TEXT),
    Column("Retries", INTEGER),
    Column("Added", TS),
    Column("ExpiresAt", TS),
    Column("StatusName", TEXT),
)
_TIMES = (
    Time("Added", "added", LOCAL_TIMESTAMP),
    Time("ExpiresAt", "expires (Delayed, Queued: publish) at", LOCAL_TIMESTAMP),
)
_GIVEN_UP = (("failed_retry_count", FAILED_RETRY_COUNT),)


# each state's block of queries/profile_states.sql, by table
_BLOCKS = {
    "outbox": {
        "pending": "state_cap_outbox_pending",
        "in progress": "state_cap_outbox_in_progress",
        "stuck": "state_cap_outbox_stuck",
        "done": "state_cap_outbox_done",
        "failed": "state_cap_outbox_failed",
        "purgeable": "state_cap_outbox_purgeable",
    },
    "inbox": {
        "pending": "state_cap_inbox_pending",
        "stuck": "state_cap_inbox_stuck",
        "done": "state_cap_inbox_done",
        "failed": "state_cap_inbox_failed",
        "purgeable": "state_cap_inbox_purgeable",
    },
}


def _states(role: str, word: str) -> tuple[State, ...]:
    block = _BLOCKS[role]
    return (
        State(
            PENDING,
            role,
            block["pending"],
            f"Scheduled: stored, {word} now, or by the retry processor once Added is "
            "FallbackWindowLookbackSeconds (240 s) old"
            + ("; Delayed: waits for its publish time (ExpiresAt)" if role == "outbox" else ""),
            order="Added",
        ),
        *(
            (
                State(
                    IN_PROGRESS,
                    role,
                    block["in progress"],
                    "Queued: its publish time (ExpiresAt) is within a minute, held in one instance's in-memory "
                    "scheduler queue; CAP records no owner or lease",
                    order="ExpiresAt",
                ),
            )
            if role == "outbox"
            else ()
        ),
        State(
            STUCK,
            role,
            block["stuck"],
            "Scheduled with Added, "
            + ("or Queued with its publish time (ExpiresAt), " if role == "outbox" else "")
            + "older than DEFAULT_LEASE_SECONDS: CAP holds no lease, so nothing marks it late",
            order="Added",
        ),
        State(
            DONE,
            role,
            block["done"],
            "Succeeded; ExpiresAt = then + SucceedMessageExpiredAfter (1 day)",
            order="ExpiresAt",
        ),
        State(
            FAILED,
            role,
            block["failed"],
            f"Failed; retried while Retries < FailedRetryCount ({FAILED_RETRY_COUNT}), given up after",
            order="Added",
        ),
        State(
            PURGEABLE,
            role,
            block["purgeable"],
            "ExpiresAt passed (in LIBRARY_TIMEZONE) and Succeeded, or Failed with its retries spent: what "
            "DeleteExpiresAsync deletes, less the Failed rows CAP may still retry",
            order="ExpiresAt",
            params=_GIVEN_UP,
        ),
    )


PROFILE = Profile(
    name="cap",
    library="DotNetCore.CAP (PostgreSQL)",
    default_schema="cap",
    tables=(
        Table(
            "outbox",
            "published",
            "outbox_table",
            _COLUMNS,
            identity=("Id",),
            state="StatusName",
            attempts="Retries",
            times=_TIMES,
            payload="Content",
            groups=("Name",),
        ),
        Table(
            "inbox",
            "received",
            "inbox_table",
            (*_COLUMNS, Column("Group", TEXT)),
            identity=("Id",),
            state="StatusName",
            owner="Group",
            attempts="Retries",
            times=_TIMES,
            payload="Content",
            groups=("Name", "Group"),
        ),
    ),
    states=(*_states("outbox", "sent"), *_states("inbox", "executed")),
    indexes=(
        Index(
            "outbox",
            "unfinished",
            "profile_index_cap_outbox_unfinished",
            "published messages not Succeeded, by Added: the pending, in-progress, stuck and failed counts and "
            "lists, and the backlog (CAP's own indexes lead with ExpiresAt, which serves the purge)",
        ),
        Index(
            "inbox",
            "unfinished",
            "profile_index_cap_inbox_unfinished",
            "received messages not Succeeded, by Added: the pending, stuck and failed counts and lists, and the "
            "backlog",
        ),
        Index(
            "outbox",
            "message_id",
            "profile_index_cap_outbox_message_id",
            "published messages by the cap-msg-id header in Content: the journey's one lookup of a message",
        ),
        Index(
            "inbox",
            "message_id",
            "profile_index_cap_inbox_message_id",
            "received messages by the cap-msg-id header in Content: the journey's one lookup of a message",
        ),
    ),
    cleanup="The collector deletes, every CollectorCleaningInterval (5 min), from published then received, 1000 rows "
    "a statement, the rows whose ExpiresAt has passed by the local clock and whose StatusName is Succeeded "
    "(ExpiresAt: a day after success) or Failed (ExpiresAt: 15 days after Added). Scheduled, Delayed and "
    "Queued rows stay.",
    unfinished_cleanup="CAP's collector deletes Failed rows past ExpiresAt even when their Retries are below "
    "FailedRetryCount, rows the retry processor would still retry.",
    sources=(
        Source(_REPO, _PG + "IStorageInitializer.PostgreSql.cs", _COMMIT),
        Source(_REPO, _PG + "IDataStorage.PostgreSql.cs", _COMMIT),
        Source(_REPO, _CAP + "Internal/StatusName.cs", _COMMIT),
        Source(_REPO, _CAP + "Internal/IMessageSender.Default.cs", _COMMIT),
        Source(_REPO, _CAP + "Internal/ISubscribeExector.Default.cs", _COMMIT),
        Source(_REPO, _CAP + "Processor/IDispatcher.Default.cs", _COMMIT),
        Source(_REPO, _CAP + "Processor/IProcessor.Collector.cs", _COMMIT),
        Source(_REPO, _CAP + "Processor/IProcessor.NeedRetry.cs", _COMMIT),
        Source(_REPO, _CAP + "CAP.Options.cs", _COMMIT),
    ),
    timezone="local",  # DateTime.Now: the application host's zone (core/parsers.py's LOCAL_ZONE)
)
