"""Spring Modulith's event publication registry (JDBC), schema v1 and v2, and its archive table.

Follows spring-projects/spring-modulith: spring-modulith-events/spring-modulith-events-jdbc/src/main/resources/
org/springframework/modulith/events/jdbc/schemas/{v1,v2}/schema-postgresql{,-archive}.sql and the statements of
JdbcEventPublicationRepositoryV2.java (incomplete, failed, completed, delete-completed), at fc0a547c.
"""
from __future__ import annotations

from idemdash.core.profiles.shape import (
    DONE,
    FAILED,
    IN_PROGRESS,
    PENDING,
    PURGEABLE,
    STUCK,
    TEXT,
    TIMESTAMPTZ,
    TSTZ,
    UUID,
    Column,
    Profile,
    Source,
    State,
    Table,
    Time,
    Version,
)

_COLUMNS = (Column("id", UUID), Column("listener_id", TEXT), Column("event_type", TEXT),
            Column("serialized_event", TEXT), Column("publication_date", TSTZ), Column("completion_date", TSTZ))
_TIMES = (Time("publication_date", "published", TIMESTAMPTZ), Time("completion_date", "completed", TIMESTAMPTZ),
          Time("last_resubmission_date", "last resubmitted (v2)", TIMESTAMPTZ))
_INCOMPLETE = "({completion_date} IS NULL OR {status} IS DISTINCT FROM 'COMPLETED')"
_REPO = "spring-projects/spring-modulith"
_DIR = ("spring-modulith-events/spring-modulith-events-jdbc/src/main/resources/org/springframework/modulith/events/"
        "jdbc/schemas/")
_COMMIT = "fc0a547c05dfd240d23c32f3fbb9fa45283af21f"

PROFILE = Profile(
    name="spring-modulith",
    library="Spring Modulith event publication registry",
    default_schema="public",
    tables=(
        Table("outbox", "event_publication", "outbox_table", _COLUMNS, identity=("id",), state="status",
              attempts="completion_attempts", times=_TIMES, payload="serialized_event"),
        Table("archive", "event_publication_archive", "archive_table", _COLUMNS, identity=("id",), state="status",
              attempts="completion_attempts", times=_TIMES, payload="serialized_event", optional=True),
    ),
    states=(
        State(PENDING, "outbox", _INCOMPLETE,
              "the registry's own 'incomplete' (v1: completion_date IS NULL); v2 legacy rows with a NULL status "
              "count"),
        State(IN_PROGRESS, "outbox", "{status} = 'PROCESSING'", "v2 only; no owner or lease is recorded"),
        State(STUCK, "outbox", "{status} IN ('PUBLISHED', 'PROCESSING', 'RESUBMITTED') "
                               "AND {publication_date} < now() - %(stale_after)s",
              "the staleness monitor's rule, measured from publication_date (v1: incomplete and old)"),
        State(DONE, "outbox", "({completion_date} IS NOT NULL OR {status} = 'COMPLETED')"),
        State(FAILED, "outbox", "({status} = 'FAILED' OR ({status} IS NULL AND {completion_date} IS NULL))",
              "findFailedPublications: FAILED, and v1-era rows never completed"),
        State(PURGEABLE, "outbox", "{completion_date} < now() - %(retention)s "
                                   "AND ({status} = 'COMPLETED' OR {status} IS NULL)",
              "deletePublicationsOlderThan; never a FAILED row, even with a completion date"),
        State(PURGEABLE, "archive", "{completion_date} < now() - %(retention)s "
                                    "AND ({status} = 'COMPLETED' OR {status} IS NULL)"),
    ),
    versions=(
        Version("v2", "outbox", present=("status", "completion_attempts", "last_resubmission_date")),
        Version("v1", "outbox", absent=("status",)),
    ),
    cleanup="None by default (completion mode UPDATE keeps every row); completion mode DELETE deletes a "
            "publication on completion, ARCHIVE moves it to event_publication_archive; "
            "CompletedEventPublications.deletePublicationsOlderThan deletes completed rows by completion_date.",
    sources=(Source(_REPO, _DIR + "v1/schema-postgresql.sql", _COMMIT),
             Source(_REPO, _DIR + "v2/schema-postgresql.sql", _COMMIT),
             Source(_REPO, _DIR + "v2/schema-postgresql-archive.sql", _COMMIT),
             Source(_REPO, "spring-modulith-events/spring-modulith-events-jdbc/src/main/java/org/springframework/"
                           "modulith/events/jdbc/JdbcEventPublicationRepositoryV2.java", _COMMIT)),
)
