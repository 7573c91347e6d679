"""Property: a purge of a library's table (jobs/library_purge.py) deletes exactly the rows the library itself would
let go, and never one it still needs.

For every library table with a purgeable state, Hypothesis writes rows in every state the library has (its own
status values, times on both sides of the retention cutoff and far from it, NULLs where the columns allow) into the
library's own tables (tests/library_ddl.py), runs a dry run and then a real purge in tiny batches, and compares whole
rows (``to_jsonb``) before and after with an ORACLE WRITTEN HERE IN PYTHON from the library's own cleanup rule (each
cites the library file that decides), never from queries/profile_states.sql. Times are minutes from the cutoff,
never within a minute of it, so the seconds a purge takes cannot move a row across it. The retentions of inbox-like
(inbox, keys) and other tables differ, so a purge reading the wrong one fails.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from idemdash.core import settings as idemdash_settings
from idemdash.core.profiles.detect import snake_case
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.migrate import migrate
from idemdash.queries.target import Target
from tests import library_ddl as ddl
from tests.test_detect import _create_case, _masstransit_snake, _nservicebus

# a Hypothesis property per library table, about a second each: in the full run, out of the fast loop
pytestmark = pytest.mark.system

DAY = 24 * 60  # minutes
INBOX_LIKE = ("inbox", "keys")  # kept INBOX_RETENTION_DAYS; every other role OUTBOX_RETENTION_DAYS

# minutes from the cutoff: near it on both sides (a time zone's hours, a retention mixed up), and far
offsets = st.one_of(st.integers(2, 12 * 60), st.integers(12 * 60, 20 * DAY)).flatmap(lambda m: st.sampled_from([m, -m]))
maybe = st.none() | offsets


@dataclass(frozen=True)
class Case:
    id: str
    profile: str
    version: str | None
    schema: str
    statements: list[str]
    role: str
    table: str  # as SQL, quoted where the library quotes it
    key: str  # the column that tells rows apart
    insert: str  # one row, %(column)s placeholders
    row: st.SearchStrategy  # one row: times as minutes from the cutoff (or None)
    purgeable: Callable[[dict[str, Any]], bool]  # the oracle: the library lets this row go (times < 0: older)
    times: tuple[str, ...]
    unit: str = "tz"  # "tz": timestamptz; "naive_utc": timestamp holding UTC; "epoch_ms": bigint;
    # "naive_local": timestamp holding CAP_HOST_ZONE's wall clock (LIBRARY_TIMEZONE)
    from_now: bool = False  # the cutoff is now (Wolverine's keep_until), not now - retention
    uuid_key: bool = False  # the key holds uuid.UUID(int=i + 1) for row i, else i
    setup: Callable[[psycopg.Connection, str], None] = field(default=lambda conn, url: None)
    config: dict[str, Any] = field(default_factory=dict)  # settings the purge runs with besides the retentions


def older(value: int | None) -> bool:
    return value is not None and value < 0


SPRING_INSERT = (
    "INSERT INTO public.{t} (id, listener_id, event_type, serialized_event, publication_date,"
    " completion_date{s}) VALUES (%(uuid)s, 'l', 't', 'e', %(publication_date)s, %(completion_date)s{v})"
)
SPRING_V1 = st.fixed_dictionaries({"publication_date": offsets, "completion_date": maybe})
# EventPublication.Status (spring-modulith-events-api EventPublication.java), and NULL for rows left from v1
SPRING_V2 = st.fixed_dictionaries(
    {
        "publication_date": offsets,
        "completion_date": maybe,
        "status": st.sampled_from(["PUBLISHED", "PROCESSING", "COMPLETED", "FAILED", "RESUBMITTED", None]),
    }
)


def spring_v2_purgeable(r):
    # JdbcEventPublicationRepositoryV2.java SQL_STATEMENT_DELETE_COMPLETED_BEFORE:
    # COMPLETION_DATE < ? AND (STATUS = 'COMPLETED' OR STATUS IS NULL): never a FAILED row, even with a completion date
    return older(r["completion_date"]) and r["status"] in ("COMPLETED", None)


MASSTRANSIT_INSERT = (
    'INSERT INTO public."InboxState" ("Id", "MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount",'
    ' "Consumed", "Delivered") VALUES (%(id)s, %(uuid)s, %(uuid)s, %(uuid)s, %(Received)s, 1, %(Consumed)s,'
    " %(Delivered)s)"
)
MASSTRANSIT = st.fixed_dictionaries({"Received": offsets, "Consumed": maybe, "Delivered": maybe})


def _snake(text: str) -> str:  # as tests/test_detect.py renders EF Core's snake_case convention
    return re.sub(r'"([A-Za-z_]+)"', lambda m: snake_case(m.group(1)), text)


def _masstransit_purgeable(r):
    # MassTransit EntityFrameworkCoreIntegration/InboxCleanupService.cs: Delivered != null && Delivered < now - window
    # (a row never Delivered, consumed or not, is never deleted)
    return older(r["Delivered"])


PG_OUTBOX_INSERT = (
    "INSERT INTO public.{t} (id, aggregate_type, aggregate_id, message_type, payload, locked_until, created_at,"
    " processed_at, abandoned_at, started_attempts, finished_attempts) VALUES (%(uuid)s, 'a', 'b', 'm', '{{}}',"
    " %(locked_until)s, %(created_at)s, %(processed_at)s, %(abandoned_at)s, %(started)s, %(finished)s)"
)
PG_OUTBOX = st.fixed_dictionaries(
    {
        "locked_until": offsets,
        "created_at": offsets,
        "processed_at": maybe,
        "abandoned_at": maybe,
        "started": st.integers(0, 3),
        "finished": st.integers(0, 3),
    }
)


def _pg_outbox_purgeable(r):
    # Zehelein/pg-transactional-outbox lib/src/message/message-cleanup.ts: processed_at < NOW() - x OR
    # abandoned_at < NOW() - y (its third rule, created_at alone, deletes unfinished messages: idemdash never does)
    return older(r["processed_at"]) or older(r["abandoned_at"])


def _database_time_zone(conn, url):
    # NServiceBus writes DispatchedAt as DateTime.UtcNow into a `timestamp`: the database's zone must not matter
    conn.execute(f"ALTER DATABASE \"{conninfo_to_dict(url)['dbname']}\" SET timezone = 'Asia/Kathmandu'")


# DotNetCore.CAP writes Added and ExpiresAt from DateTime.Now (IDataStorage.PostgreSql.cs, IMessageSender.Default.cs):
# the CAP host's wall clock, here 5 h 30 ahead of UTC while the database's zone is Asia/Kathmandu (5 h 45)
CAP_HOST_ZONE = "Asia/Kolkata"
CAP_INSERT = (
    'INSERT INTO cap."{t}" ("Id", "Version", "Name", {g}"Content", "Retries", "Added", "ExpiresAt",'
    " \"StatusName\") VALUES (%(id)s, 'v1', 'orders.created', {v}'{{}}', %(Retries)s, %(Added)s,"
    " %(ExpiresAt)s, %(StatusName)s)"
)
# StatusName.cs: Failed, Scheduled, Succeeded, Delayed, Queued; Retries about CapOptions.FailedRetryCount (50)
CAP = st.fixed_dictionaries(
    {
        "StatusName": st.sampled_from(["Scheduled", "Succeeded", "Failed", "Delayed", "Queued"]),
        "Retries": st.sampled_from([0, 3, 49, 50, 51]),
        "Added": offsets,
        "ExpiresAt": maybe,
    }
)


def _cap_purgeable(r):
    # IDataStorage.PostgreSql.cs DeleteExpiresAsync: "ExpiresAt" < DateTime.Now AND "StatusName" IN ('Succeeded',
    # 'Failed'); but GetMessagesOfNeedRetryAsync still retries a Failed row while "Retries" < FailedRetryCount (50):
    # that one CAP may still send, so idemdash keeps it (CAP's collector alone deletes it)
    return older(r["ExpiresAt"]) and (
        r["StatusName"] == "Succeeded" or (r["StatusName"] == "Failed" and r["Retries"] >= 50)
    )


CASES = [
    Case(
        "spring-v1",
        "spring-modulith",
        "v1",
        "public",
        [ddl.SPRING_MODULITH_V1],
        "outbox",
        "public.event_publication",
        "id",
        SPRING_INSERT.format(t="event_publication", s="", v=""),
        SPRING_V1,
        # JdbcEventPublicationRepository.java SQL_STATEMENT_DELETE_COMPLETED_BEFORE: COMPLETION_DATE < ?
        lambda r: older(r["completion_date"]),
        ("publication_date", "completion_date"),
        uuid_key=True,
    ),
    Case(
        "spring-v2",
        "spring-modulith",
        "v2",
        "public",
        [ddl.SPRING_MODULITH_V2],
        "outbox",
        "public.event_publication",
        "id",
        SPRING_INSERT.format(t="event_publication", s=", status", v=", %(status)s"),
        SPRING_V2,
        spring_v2_purgeable,
        ("publication_date", "completion_date"),
        uuid_key=True,
    ),
    Case(
        "spring-v2-archive",
        "spring-modulith",
        "v2",
        "public",
        [ddl.SPRING_MODULITH_V2],
        "archive",
        "public.event_publication_archive",
        "id",
        SPRING_INSERT.format(t="event_publication_archive", s=", status", v=", %(status)s"),
        SPRING_V2,
        spring_v2_purgeable,
        ("publication_date", "completion_date"),
        uuid_key=True,
    ),
    Case(
        "masstransit",
        "masstransit",
        None,
        "public",
        [ddl.MASSTRANSIT],
        "inbox",
        'public."InboxState"',
        '"Id"',
        MASSTRANSIT_INSERT,
        MASSTRANSIT,
        _masstransit_purgeable,
        ("Received", "Consumed", "Delivered"),
    ),
    Case(
        "masstransit-snake",
        "masstransit",
        None,
        "public",
        [_masstransit_snake()],
        "inbox",
        "public.inbox_state",
        "id",
        _snake(MASSTRANSIT_INSERT),
        MASSTRANSIT,
        _masstransit_purgeable,
        ("Received", "Consumed", "Delivered"),
    ),
    # Npgsql's legacy timestamp switch: DateTime.UtcNow in `timestamp` columns, under a database zone not UTC
    Case(
        "masstransit-legacy",
        "masstransit",
        None,
        "public",
        [ddl.MASSTRANSIT.replace("timestamp with time zone", "timestamp without time zone")],
        "inbox",
        'public."InboxState"',
        '"Id"',
        MASSTRANSIT_INSERT,
        MASSTRANSIT,
        _masstransit_purgeable,
        ("Received", "Consumed", "Delivered"),
        unit="naive_utc",
        setup=_database_time_zone,
    ),
    Case(
        "wolverine",
        "wolverine",
        None,
        "wolverine",
        [ddl.WOLVERINE],
        "inbox",
        "wolverine.wolverine_incoming_envelopes",
        "id",
        "INSERT INTO wolverine.wolverine_incoming_envelopes (id, status, owner_id, execution_time, body, message_type,"
        " keep_until) VALUES (%(uuid)s, %(status)s, %(owner)s, %(execution_time)s, '\\x00', 'm', %(keep_until)s)",
        # EnvelopeStatus: Incoming, Scheduled, Handled; owner 0 (any node), 1, or a node that is gone
        st.fixed_dictionaries(
            {
                "status": st.sampled_from(["Incoming", "Scheduled", "Handled"]),
                "owner": st.sampled_from([0, 1, 7]),
                "execution_time": maybe,
                "keep_until": maybe,
            }
        ),
        # PostgresqlMessageStore.cs: delete ... where status = 'Handled' and keep_until <= :now (now, no retention)
        lambda r: r["status"] == "Handled" and older(r["keep_until"]),
        ("execution_time", "keep_until"),
        from_now=True,
        uuid_key=True,
    ),
    Case(
        "brandur",
        "brandur",
        None,
        "public",
        [ddl.BRANDUR],
        "keys",
        "public.idempotency_keys",
        "id",
        "INSERT INTO public.idempotency_keys (id, created_at, idempotency_key, locked_at, request_method,"
        " request_params, request_path, recovery_point, user_id) VALUES (%(id)s, %(created_at)s, %(id)s::text,"
        " %(locked_at)s, 'POST', '{}', '/rides', %(recovery_point)s, 1)",
        # api.rb's RECOVERY_POINT_* constants
        st.fixed_dictionaries(
            {
                "created_at": offsets,
                "locked_at": maybe,
                "recovery_point": st.sampled_from(["started", "ride_created", "charge_created", "finished"]),
            }
        ),
        # api.rb: a key not `finished` is retried by the client or completer.rb (recovery_point <> 'finished'), so
        # only finished keys older than the retention go (reaper.rb's 72 h takes every key: idemdash never does)
        lambda r: r["recovery_point"] == "finished" and older(r["created_at"]),
        ("created_at", "locked_at"),
    ),
    Case(
        "nservicebus",
        "nservicebus",
        None,
        "public",
        [_nservicebus("Sales_")],
        "outbox",
        'public."Sales_OutboxData"',
        '"MessageId"',
        'INSERT INTO public."Sales_OutboxData" ("MessageId", "Dispatched", "DispatchedAt", "PersistenceVersion",'
        " \"Operations\") VALUES (%(id)s::text, %(Dispatched)s, %(DispatchedAt)s, '8.0', '[]')",
        st.fixed_dictionaries({"Dispatched": st.booleans(), "DispatchedAt": maybe}),
        # SqlDialect_PostgreSql.cs GetOutboxCleanupCommand: "Dispatched" = true and "DispatchedAt" < @DispatchedBefore
        # (DateTime.UtcNow - the retention); undispatched rows stay forever
        lambda r: r["Dispatched"] and older(r["DispatchedAt"]),
        ("DispatchedAt",),
        unit="naive_utc",
        setup=_database_time_zone,
    ),
    Case(
        "eventuate",
        "eventuate",
        "message-id",
        "eventuate",
        [ddl.EVENTUATE],
        "outbox",
        "eventuate.message",
        "id",
        "INSERT INTO eventuate.message (id, destination, headers, payload, published, creation_time) VALUES"
        " (%(id)s::text, 'd', '{}', '{}', %(published)s, %(creation_time)s)",
        st.fixed_dictionaries({"published": st.sampled_from([0, 1, None]), "creation_time": maybe}),
        # eventuate-common EventuateJdbcOperationsUtils.java writes creation_time as epoch ms and published = 0; the
        # CDC sets published = 1 once relayed: only relayed messages older than the retention may go
        lambda r: r["published"] == 1 and older(r["creation_time"]),
        ("creation_time",),
        unit="epoch_ms",
    ),
    Case(
        "eventuate-db-id",
        "eventuate",
        "db-id",
        "eventuate",
        [ddl.EVENTUATE_DB_ID],
        "outbox",
        "eventuate.message",
        "dbid",
        "INSERT INTO eventuate.message (dbid, id, destination, headers, payload, published, creation_time)"
        " VALUES (%(id)s, '', 'd', '{}', '{}', %(published)s, %(creation_time)s)",
        st.fixed_dictionaries({"published": st.sampled_from([0, 1, None]), "creation_time": maybe}),
        lambda r: r["published"] == 1 and older(r["creation_time"]),
        ("creation_time",),
        unit="epoch_ms",
    ),
    Case(
        "eventuate-inbox",
        "eventuate",
        "message-id",
        "eventuate",
        [ddl.EVENTUATE],
        "inbox",
        "eventuate.received_messages",
        "message_id",
        "INSERT INTO eventuate.received_messages (consumer_id, message_id, creation_time, published) VALUES"
        " ('c', %(id)s::text, %(creation_time)s, %(published)s)",
        st.fixed_dictionaries({"published": st.sampled_from([0, 1, None]), "creation_time": maybe}),
        # postgres/2.initialize-database.sql: a received_messages row only records a message consumed once, at
        # creation_time (epoch ms): past the retention it goes, whatever its unused published column says
        lambda r: older(r["creation_time"]),
        ("creation_time",),
        unit="epoch_ms",
    ),
    Case(
        "pg-transactional-outbox",
        "pg-transactional-outbox",
        None,
        "public",
        [ddl.PG_TRANSACTIONAL_OUTBOX.replace("{table}", t) for t in ("outbox", "inbox")],
        "outbox",
        "public.outbox",
        "id",
        PG_OUTBOX_INSERT.format(t="outbox"),
        PG_OUTBOX,
        _pg_outbox_purgeable,
        ("locked_until", "created_at", "processed_at", "abandoned_at"),
        uuid_key=True,
    ),
    Case(
        "pg-transactional-inbox",
        "pg-transactional-outbox",
        None,
        "public",
        [ddl.PG_TRANSACTIONAL_OUTBOX.replace("{table}", t) for t in ("outbox", "inbox")],
        "inbox",
        "public.inbox",
        "id",
        PG_OUTBOX_INSERT.format(t="inbox"),
        PG_OUTBOX,
        _pg_outbox_purgeable,
        ("locked_until", "created_at", "processed_at", "abandoned_at"),
        uuid_key=True,
    ),
    Case(
        "cap-published",
        "cap",
        None,
        "cap",
        [ddl.CAP],
        "outbox",
        'cap."published"',
        '"Id"',
        CAP_INSERT.format(t="published", g="", v=""),
        CAP,
        _cap_purgeable,
        ("Added", "ExpiresAt"),
        unit="naive_local",
        from_now=True,
        setup=_database_time_zone,
        config={"LIBRARY_TIMEZONE": CAP_HOST_ZONE},
    ),
    Case(
        "cap-received",
        "cap",
        None,
        "cap",
        [ddl.CAP],
        "inbox",
        'cap."received"',
        '"Id"',
        CAP_INSERT.format(t="received", g='"Group", ', v="'billing', "),
        CAP,
        _cap_purgeable,
        ("Added", "ExpiresAt"),
        unit="naive_local",
        from_now=True,
        setup=_database_time_zone,
        config={"LIBRARY_TIMEZONE": CAP_HOST_ZONE},
    ),
]


def _value(case: Case, base: datetime, minutes: int | None) -> Any:
    if minutes is None:
        return None
    at = base + timedelta(minutes=minutes)
    if case.unit == "naive_utc":
        return at.astimezone(UTC).replace(tzinfo=None)
    if case.unit == "epoch_ms":
        return int(at.timestamp() * 1000)
    if case.unit == "naive_local":
        return at.astimezone(ZoneInfo(CAP_HOST_ZONE)).replace(tzinfo=None)
    return at


def _write(conn: psycopg.Connection, case: Case, rows: list[dict], retention_days: int) -> set[str]:
    """The rows, with times from this instant's cutoff; the keys of those the oracle lets go."""
    conn.execute(f"TRUNCATE {case.table} CASCADE")
    now = conn.execute("SELECT now()").fetchone()[0]
    base = now if case.from_now else now - timedelta(days=retention_days)
    with conn.cursor() as cur:
        cur.executemany(
            case.insert,
            [
                {**row, **{t: _value(case, base, row[t]) for t in case.times}, "id": i, "uuid": uuid.UUID(int=i + 1)}
                for i, row in enumerate(rows)
            ],
        )
    by_key = {str(uuid.UUID(int=i + 1)) if case.uuid_key else str(i): row for i, row in enumerate(rows)}
    assert set(by_key) == set(_snapshot(conn, case))
    return {k for k, row in by_key.items() if case.purgeable(row)}


def _snapshot(conn: psycopg.Connection, case: Case) -> dict[str, str]:
    return dict(conn.execute(f"SELECT ({case.key})::text, to_jsonb(t)::text FROM {case.table} t").fetchall())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_library_purge_deletes_exactly_what_the_library_lets_go(empty_database_url, case):
    url = empty_database_url
    _create_case(url, case.schema, case.statements)
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        case.setup(conn, url)
    seen = {"deleted": 0, "kept": 0}

    @settings(
        max_examples=15,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        rows=st.lists(case.row, min_size=8, max_size=30),
        batch_size=st.integers(1, 3),
        inbox_days=st.sampled_from([1, 3]),
        outbox_days=st.sampled_from([2, 7]),
    )
    def check(rows, batch_size, inbox_days, outbox_days):
        retention = inbox_days if case.role in INBOX_LIKE else outbox_days
        with psycopg.connect(url, autocommit=True) as conn:
            purgeable = _write(conn, case, rows, retention)
            before = _snapshot(conn, case)
        config = idemdash_settings.load(
            {},
            DATABASE_URL=url,
            PROFILE=case.profile,
            PURGE_BATCH_SIZE=batch_size,
            PURGE_PAUSE_MS=0,
            INBOX_RETENTION_DAYS=inbox_days,
            OUTBOX_RETENTION_DAYS=outbox_days,
            **case.config,
        )
        target = Target.from_settings(config)

        [dry] = run_library_purges(target, dry_run=True, started_by="property", roles=(case.role,))
        assert (dry.outcome, dry.rows, dry.dry_run) == ("succeeded", len(purgeable), True)
        with psycopg.connect(url) as conn:
            assert _snapshot(conn, case) == before

        [real] = run_library_purges(target, dry_run=False, started_by="property", roles=(case.role,))
        assert (real.outcome, real.rows) == ("succeeded", len(purgeable)), real.error
        # batches of the configured size, or smaller after a slow one (jobs.pacing.Pacer); each deleted a row
        assert -(-len(purgeable) // batch_size) <= real.batches <= len(purgeable)
        with psycopg.connect(url) as conn:
            after = _snapshot(conn, case)
            recorded = conn.execute(
                "SELECT table_name, outcome, rows_deleted FROM idemdash.purge_run WHERE run_id = %s", (real.run_id,)
            ).fetchone()
        # what is left: every row the library still needs, and the finished rows younger than the cutoff
        assert after == {k: row for k, row in before.items() if k not in purgeable}
        assert recorded == (real.table, "succeeded", len(purgeable))
        seen["deleted"] += len(purgeable)
        seen["kept"] += len(after)

    check()
    assert seen["deleted"] > 0 and seen["kept"] > 0, seen  # the examples held rows of both kinds
