"""Spring Modulith's event publication registry (JDBC), schema v1 and v2, and its archive table.

Follows spring-projects/spring-modulith: spring-modulith-events/spring-modulith-events-jdbc/src/main/resources/
org/springframework/modulith/events/jdbc/schemas/{v1,v2}/schema-postgresql{,-archive}.sql and the statements of
JdbcEventPublicationRepositoryV2.java (incomplete, failed, completed, delete-completed), at fc0a547c.
"""

from __future__ import annotations

from dataclasses import replace

from idemdash.core.profiles.shape import *  # the profile vocabulary: shape.__all__

_COLUMNS = (
    Column("id", UUID),
    Column("listener_id", TEXT),
    Column("event_type", TEXT),
    Column("serialized_event", TEXT),
    Column("publication_date", TSTZ),
    Column("completion_date", TSTZ),
)
_TIMES = (
    Time("publication_date", "published", TIMESTAMPTZ),
    Time("completion_date", "completed", TIMESTAMPTZ, done=True),
    Time("last_resubmission_date", "last resubmitted (v2)", TIMESTAMPTZ),
)
_REPO = "spring-projects/spring-modulith"
_DIR = (
    "spring-modulith-events/spring-modulith-events-jdbc/src/main/resources/org/springframework/modulith/events/"
    "jdbc/schemas/"
)
_COMMIT = "fc0a547c05dfd240d23c32f3fbb9fa45283af21f"

_OUTBOX = Table(
    "outbox",
    "event_publication",
    "outbox_table",
    _COLUMNS,
    identity=("id",),
    state="status",
    attempts="completion_attempts",
    times=_TIMES,
    payload="serialized_event",
)

PROFILE = Profile(
    name="spring-modulith",
    library="Spring Modulith event publication registry",
    default_schema="public",
    # the archive (completion mode ARCHIVE) has the registry's own columns: completed rows move there
    tables=(
        _OUTBOX,
        replace(_OUTBOX, role="archive", name="event_publication_archive", setting="archive_table", optional=True),
    ),
    # v1 has no status column: its states are the v2 ones without it.
    states=(
        State(
            PENDING,
            "outbox",
            "state_spring_modulith_outbox_pending_v2",
            "the registry's own 'incomplete' less what it counts as failed (failed rows wait for a resubmit, not "
            "the relay); a v1-era row (NULL status) counts until it has a completion date",
            version="v2",
        ),
        State(
            IN_PROGRESS,
            "outbox",
            "state_spring_modulith_outbox_in_progress_v2",
            "no owner or lease is recorded",
            version="v2",
        ),
        State(
            STUCK,
            "outbox",
            "state_spring_modulith_outbox_stuck_v2",
            "the staleness monitor's rule, measured from publication_date",
            version="v2",
        ),
        State(
            DONE,
            "outbox",
            "state_spring_modulith_outbox_done_v2",
            "exactly the rows that are not incomplete",
            version="v2",
            order="completion_date",
        ),
        State(
            FAILED,
            "outbox",
            "state_spring_modulith_outbox_failed_v2",
            "findFailedPublications: FAILED, and v1-era rows never completed",
            version="v2",
        ),
        State(
            PURGEABLE,
            "outbox",
            "state_spring_modulith_outbox_purgeable_v2",
            "deletePublicationsOlderThan; never a FAILED row, even with a completion date",
            version="v2",
            order="completion_date",
        ),
        State(
            PURGEABLE, "archive", "state_spring_modulith_archive_purgeable_v2", version="v2", order="completion_date"
        ),
        State(
            PENDING,
            "outbox",
            "state_spring_modulith_outbox_pending_v1",
            "the registry's own 'incomplete'",
            version="v1",
        ),
        State(
            STUCK, "outbox", "state_spring_modulith_outbox_stuck_v1", "incomplete and published long ago", version="v1"
        ),
        State(DONE, "outbox", "state_spring_modulith_outbox_done_v1", version="v1", order="completion_date"),
        State(
            PURGEABLE,
            "outbox",
            "state_spring_modulith_outbox_purgeable_v1",
            "deletePublicationsOlderThan",
            version="v1",
            order="completion_date",
        ),
    ),
    indexes=(
        Index(
            "outbox",
            "incomplete",
            "profile_index_spring_modulith_outbox_incomplete_v2",
            "incomplete publications by publication date (spring-modulith#1148): the pending, in-progress, stuck "
            "and failed counts and lists read only those rows, oldest first",
            version="v2",
        ),
        Index(
            "outbox",
            "incomplete",
            "profile_index_spring_modulith_outbox_incomplete_v1",
            "incomplete publications by publication date: the pending and stuck counts and lists",
            version="v1",
        ),
    ),
    versions=(
        Version("v2", "outbox", present=("status", "completion_attempts", "last_resubmission_date")),
        Version("v1", "outbox", absent=("status",)),
    ),
    application_acts="Resubmitting a publication is the application's call, not the database's: idemdash changes no "
    "row. In the application, IncompleteEventPublications.resubmitIncompletePublications(filter) or "
    "resubmitIncompletePublicationsOlderThan(duration) resubmits incomplete ones, and (Spring "
    "Modulith 2.0) FailedEventPublications.resubmit(ResubmissionOptions) failed ones; republishing "
    "every incomplete one when the application restarts is a property of the application (off by "
    "default since Spring Modulith 1.1).",
    cleanup="None by default (completion mode 'update' keeps every row); completion mode 'delete' removes a "
    "publication on completion, 'archive' moves it to event_publication_archive; "
    "CompletedEventPublications.deletePublicationsOlderThan deletes completed rows by completion_date.",
    sources=(
        Source(_REPO, _DIR + "v1/schema-postgresql.sql", _COMMIT),
        Source(_REPO, _DIR + "v2/schema-postgresql.sql", _COMMIT),
        Source(_REPO, _DIR + "v2/schema-postgresql-archive.sql", _COMMIT),
        Source(
            _REPO,
            "spring-modulith-events/spring-modulith-events-jdbc/src/main/java/org/springframework/"
            "modulith/events/jdbc/JdbcEventPublicationRepositoryV2.java",
            _COMMIT,
        ),
    ),
)
