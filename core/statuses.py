"""The words of the reference tables and of idemdash's own records, each written once, as ``Literal`` types (the
JSON models name them too, so the OpenAPI document lists the values) with their values as tuples, in this order.

The SQL that creates or checks them (queries/app_schema.sql's status enum and CHECK, idemdash.purge_run's CHECK)
is the database's side of the same list; tests/test_statuses.py holds the two together.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# A key's status column (the reference schema's enum).
KeyStatus = Literal["processing", "succeeded", "failed_retryable", "failed_final"]
KEY_STATUSES: Final[tuple[KeyStatus, ...]] = get_args(KeyStatus)

# The key list's tabs: stuck (processing past its lease), held for review, then each status.
KeyListStatus = Literal["stuck", "needs_review", KeyStatus]
KEY_LIST_STATUSES: Final[tuple[KeyListStatus, ...]] = ("stuck", "needs_review", *KEY_STATUSES)

# What an operator reclassifies a stuck key to (core/triage.py OUTCOMES says what each does); a bulk
# reclassification takes all but already_succeeded, which needs a result per key.
BulkOutcome = Literal["safe_to_retry", "abandoned", "needs_review"]
Outcome = Literal["already_succeeded", BulkOutcome]
BULK_OUTCOMES: Final[tuple[BulkOutcome, ...]] = get_args(BulkOutcome)
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)

# How a purge run ended ('running' until it does).
PurgeEnd = Literal["succeeded", "failed", "skipped", "budget_exhausted", "cancelled"]
PurgeOutcome = Literal["running", PurgeEnd]
PURGE_ENDS: Final[tuple[PurgeEnd, ...]] = get_args(PurgeEnd)

# claimed_by of a key an operator holds for review (reclassified needs_review): still processing, long lease. The
# SQL names it as {review_holder}, filled in as this literal (queries/__init__.py CONSTANTS).
ReviewHolder = Literal["idemdash:needs_review"]
REVIEW_HOLDER: Final[ReviewHolder] = get_args(ReviewHolder)[0]

# An outbox row of the reference tables: waiting for the relay, or parked by an operator (a sent row is deleted
# by the relay or kept as the application decides: idemdash only reads pending and parked ones).
OutboxStatus = Literal["pending", "parked"]

# The key list's tabs read by a lease's end (processing keys: stuck, held for review, or any), and those read by
# their last change (updated_at), which a window (updated_within) narrows.
LEASE_TABS: Final[tuple[KeyListStatus, ...]] = ("stuck", "needs_review", "processing")
CHANGE_TABS: Final[tuple[KeyListStatus, ...]] = ("succeeded", "failed_retryable", "failed_final")

# How a purge run's batches found their rows (null for runs recorded before it was), and the words for each.
PurgeMethod = Literal["due_index", "heap", "primary_key"]
PURGE_METHOD_WORDS: Final[dict[PurgeMethod, str]] = {
    "due_index": "through the index of due rows",
    "heap": "page by page (the table was mostly due)",
    "primary_key": "walking the primary key",
}

# What a purge did with a partition of a table partitioned by time.
PartitionAction = Literal["dropped", "would_drop", "kept", "detached", "attached_again"]

# What comes before the ':' of an audited action: one key reclassified, a bulk reclassification (one line, its keys
# under it), a purge or dry run started by a person, a run's cancel, a triage note, an outbox row parked or released
# (one by one, or in bulk: one line, its rows under it), a library's own documented action on one of its rows
# (library:<action>, core/profiles).
ActionKind = Literal[
    "reclassify",
    "reclassify-bulk",
    "purge",
    "purge-dry-run",
    "purge-cancel",
    "note",
    "outbox-park",
    "outbox-release",
    "outbox-park-bulk",
    "outbox-release-bulk",
    "library",
]
ACTION_KINDS: Final[tuple[ActionKind, ...]] = get_args(ActionKind)
