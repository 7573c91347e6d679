"""DotNetCore.CAP's tables (its own DDL, tests/library_ddl.py) with rows in every state written as CAP writes them:
"Added" and "ExpiresAt" are `timestamp` columns CAP fills from DateTime.Now, the application host's wall clock
(IDataStorage.PostgreSql.cs, IMessageSender.Default.cs). Here that host is in Asia/Kolkata (+05:30), the database's
zone is America/Sao_Paulo (-03:00) and the reading session's Pacific/Auckland: every count, the pending list's
oldest row and the purge's set are known in advance, and a row would move if any of those zones were used instead
of LIBRARY_TIMEZONE."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest
from bs4 import BeautifulSoup

from idemdash.core import settings
from idemdash.core.databases import load_databases
from idemdash.core.profiles import profile
from idemdash.core.settings import ConfigError
from idemdash.core.time_parsers import zone_name
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.catalog import find_configured
from idemdash.queries.migrate import migrate
from idemdash.queries.profile_rows import list_state_rows
from idemdash.queries.profile_states import count_configured_states, params_for
from idemdash.queries.target import Target
from tests import library_ddl as ddl
from tests.test_detect import _create_case

CAP_HOST_ZONE = "Asia/Kolkata"
M, H, D = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)

# Id: (StatusName, Retries, Added, ExpiresAt) as offsets from the CAP host's wall clock (None: NULL), Name
PUBLISHED = {
    1: ("Scheduled", 0, -1 * M, None, "orders.created"),  # pending, fresh
    2: ("Scheduled", 0, -2 * H, None, "orders.created"),  # pending, stuck (UTC read: 3.5 h ahead, not stuck)
    3: ("Delayed", 0, -3 * H, D, "orders.remind"),  # pending until its publish time: the oldest Added
    4: ("Queued", 0, -10 * M, 30 * timedelta(seconds=1), "orders.remind"),  # in progress
    5: ("Queued", 0, -H, -20 * M, "orders.remind"),  # in progress, its publish time 20 min past: stuck
    6: ("Succeeded", 0, -2 * D, -D, "orders.created"),  # done, expired: purgeable
    7: ("Succeeded", 0, -H, 23 * H, "orders.created"),  # done, kept
    8: ("Failed", 50, -16 * D, -D, "orders.paid"),  # failed, retries spent, expired: purgeable
    9: ("Failed", 3, -16 * D, -D, "orders.paid"),  # failed, expired, still retried: kept
    10: ("Failed", 50, -D, 14 * D, "orders.paid"),  # failed, not expired
    11: ("Succeeded", 0, -D, -3 * H, "orders.created"),  # expired 3 h ago (UTC read: 2.5 h ahead)
    12: ("Succeeded", 0, -22 * H, 2 * H, "orders.created"),  # expires in 2 h (Auckland read: 5.5 h past)
    13: ("Scheduled", 0, -3 * M, None, "orders.created"),  # not stuck yet (Auckland read: 7.5 h old)
}
RECEIVED = {
    21: ("Scheduled", 0, -M, None, "orders.created"),
    22: ("Scheduled", 0, -H, None, "orders.created"),  # stuck
    23: ("Succeeded", 0, -D, -H, "orders.created"),  # purgeable
    24: ("Succeeded", 0, -22 * H, 2 * H, "orders.created"),
    25: ("Failed", 50, -16 * D, -D, "orders.paid"),  # purgeable
    26: ("Failed", 0, -16 * D, -D, "orders.paid"),  # CAP still retries it: kept
}
OUTBOX_COUNTS = {"pending": 4, "in progress": 2, "stuck": 2, "done": 4, "failed": 3, "purgeable": 3}
INBOX_COUNTS = {"pending": 2, "stuck": 1, "done": 2, "failed": 2, "purgeable": 2}
PURGED = {"published": {6, 8, 11}, "received": {23, 25}}


def _write(url: str) -> None:
    _create_case(url, "cap", [ddl.CAP])
    host_now = datetime.now(ZoneInfo(CAP_HOST_ZONE)).replace(tzinfo=None)  # DateTime.Now on that host
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE \"{conn.info.dbname}\" SET timezone = 'America/Sao_Paulo'")
        migrate(conn)
        for table, rows, group in (("published", PUBLISHED, False), ("received", RECEIVED, True)):
            for id_, (status, retries, added, expires, name) in rows.items():
                conn.execute(
                    f'INSERT INTO cap."{table}" ("Id", "Version", "Name", '
                    f'{chr(34) + "Group" + chr(34) + "," if group else ""} "Content", "Retries", "Added", '
                    f"\"ExpiresAt\", \"StatusName\") VALUES (%s, 'v1', %s, {'%s, ' if group else ''}'{{}}', %s, %s, "
                    "%s, %s)",
                    [
                        id_,
                        name,
                        *(["billing"] if group else []),
                        retries,
                        host_now + added,
                        None if expires is None else host_now + expires,
                        status,
                    ],
                )


def _config(url: str, **extra):
    return settings.load(
        {},
        **{
            "DATABASE_URL": url,
            "PROFILE": "cap",
            "LIBRARY_TIMEZONE": CAP_HOST_ZONE,
            "DEFAULT_LEASE_SECONDS": 300,
            "PURGE_PAUSE_MS": 0,
            **extra,
        },
    )


def test_every_state_counts_cap_rows_by_the_cap_hosts_clock_whatever_the_sessions_zone(empty_database_url):
    _write(empty_database_url)
    config = _config(empty_database_url)
    with psycopg.connect(empty_database_url, options="-c TimeZone=Pacific/Auckland") as conn:
        assert conn.execute("SHOW TimeZone").fetchone()[0] == "Pacific/Auckland"
        found = find_configured(conn, config)
        counts = {(s.table, s.meaning): n for s, n in count_configured_states(conn, found, config)}
        assert {m: counts[("outbox", m)] for m in OUTBOX_COUNTS} == OUTBOX_COUNTS
        assert {m: counts[("inbox", m)] for m in INBOX_COUNTS} == INBOX_COUNTS
        assert ("inbox", "in progress") not in counts  # received rows are never Queued: CAP records nothing
        # the backlog's lag: the pending list starts at its oldest Added, the Delayed row added 3 h ago
        pending = next(s for s in profile("cap").states if (s.table, s.meaning) == ("outbox", "pending"))
        rows = list_state_rows(conn, found, pending, params_for(pending, config), after=None, limit=10)
        assert [r.row_json["Id"] for r in rows] == [3, 2, 13, 1]
        stuck = next(s for s in profile("cap").states if (s.table, s.meaning) == ("outbox", "stuck"))
        assert {
            r.row_json["Id"]
            for r in list_state_rows(conn, found, stuck, params_for(stuck, config), after=None, limit=10)
        } == {2, 5}


def test_read_in_another_zone_the_same_rows_count_otherwise(empty_database_url):
    """The zone is what decides: read as UTC (NServiceBus's convention) rows 2, 5 and 11 move."""
    _write(empty_database_url)
    config = _config(empty_database_url, LIBRARY_TIMEZONE="UTC")
    with psycopg.connect(empty_database_url) as conn:
        found = find_configured(conn, config)
        counts = {(s.table, s.meaning): n for s, n in count_configured_states(conn, found, config)}
    assert (counts[("outbox", "stuck")], counts[("outbox", "purgeable")]) == (0, 2)


def test_the_api_and_metrics_show_the_cap_states(make_app, empty_database_url):
    _write(empty_database_url)
    client = make_app(
        empty_database_url, PROFILE="cap", LIBRARY_TIMEZONE=CAP_HOST_ZONE, DEFAULT_LEASE_SECONDS=300
    ).test_client()
    answer = client.get("/api/v1/tables").get_json()
    assert (answer["profile"], answer["app_schema"], answer["problem"]) == ("cap", "cap", None)
    states = {(t["role"], s["meaning"]): s["count"] for t in answer["tables"] for s in t["states"] if s["recorded"]}
    assert {m: states[("outbox", m)] for m in OUTBOX_COUNTS} == OUTBOX_COUNTS
    assert {m: states[("inbox", m)] for m in INBOX_COUNTS} == INBOX_COUNTS
    # the backlog (rows not Succeeded) by Name, and by Name and Group for received; lag: the oldest Added, by the
    # CAP host's clock (within the seconds this test takes)
    backlog = {
        t["role"]: (t["backlog_by"], [(g["group"], g["rows"], round(g["lag_seconds"] / 60)) for g in t["backlog"]])
        for t in answer["tables"]
    }
    assert backlog == {
        "outbox": (
            ["Name"],
            [(["orders.paid"], 3, 16 * 24 * 60), (["orders.remind"], 3, 180), (["orders.created"], 3, 120)],
        ),
        "inbox": (
            ["Name", "Group"],
            [(["orders.paid", "billing"], 2, 16 * 24 * 60), (["orders.created", "billing"], 2, 60)],
        ),
    }
    shown = BeautifulSoup(client.get("/tables").data, "html.parser").select_one(
        "table.profile-backlog[data-role=outbox]"
    )
    assert [[td.get_text(strip=True) for td in tr.select("td")][:2] for tr in shown.select("tbody tr")] == [
        ["orders.paid", "3"],
        ["orders.remind", "3"],
        ["orders.created", "3"],
    ]
    metrics = client.get("/metrics").get_data(as_text=True)
    assert (
        'idemdash_profile_rows{database="default",profile="cap",role="outbox",state="stuck",table="published"} 2.0'
        in metrics
    )
    assert (
        'idemdash_profile_rows{database="default",profile="cap",role="inbox",state="purgeable",table="received"} 2.0'
    ) in metrics
    items = {i["id"]: i for i in client.get("/api/v1/health/schema").get_json()["items"]}
    assert items["profile.tables"]["status"] == "ok" and "schema cap" in items["profile.tables"]["title"]
    # CAP's collector deletes Failed rows CAP would still retry; /health says so, and idemdash's purge does not
    assert "FailedRetryCount" in items["profile.cleanup"]["detail"]
    assert client.get("/health").status_code == 200


@pytest.mark.system  # about a second or more: the fast loop keeps within its minute
def test_the_purge_deletes_what_caps_collector_would_less_what_cap_still_retries(empty_database_url):
    _write(empty_database_url)
    target = Target.from_settings(_config(empty_database_url, PURGE_BATCH_SIZE=1))
    with psycopg.connect(empty_database_url) as conn:
        before = {t: {r[0] for r in conn.execute(f'SELECT "Id" FROM cap."{t}"')} for t in PURGED}
    dry = run_library_purges(target, dry_run=True, started_by="test")
    assert [(r.table, r.outcome, r.rows) for r in dry] == [
        ("cap.published", "succeeded", 3),
        ("cap.received", "succeeded", 2),
    ]
    real = run_library_purges(target, dry_run=False, started_by="test")
    assert [(r.table, r.outcome, r.rows, r.batches) for r in real] == [
        ("cap.published", "succeeded", 3, 3),
        ("cap.received", "succeeded", 2, 2),
    ]
    with psycopg.connect(empty_database_url) as conn:
        after = {t: {r[0] for r in conn.execute(f'SELECT "Id" FROM cap."{t}"')} for t in PURGED}
    assert after == {t: before[t] - PURGED[t] for t in PURGED}


def test_the_zone_defaults_to_the_local_clock_for_cap_and_utc_for_the_rest():
    assert settings.load({"IDEMDASH_PROFILE": "cap"}).library_timezone == "local"
    assert settings.load({"IDEMDASH_PROFILE": "cap"}).app_schema == "cap"
    assert (
        settings.load({"IDEMDASH_PROFILE": "cap", "IDEMDASH_LIBRARY_TIMEZONE": "Europe/Berlin"}).library_timezone
        == "Europe/Berlin"
    )
    assert settings.load({"IDEMDASH_PROFILE": "nservicebus"}).library_timezone == "UTC"
    assert zone_name("local", {"TZ": ":Asia/Kolkata"}) == "Asia/Kolkata"
    assert zone_name("Europe/Berlin", {"TZ": "Asia/Kolkata"}) == "Europe/Berlin"
    with pytest.raises(ConfigError, match="IDEMDASH_LIBRARY_TIMEZONE: expected an IANA time zone"):
        settings.load({"IDEMDASH_PROFILE": "cap", "IDEMDASH_LIBRARY_TIMEZONE": "+05:30"})


def test_each_database_of_a_config_file_has_its_own_cap_zone(tmp_path):
    path = tmp_path / "idemdash.toml"
    path.write_text(
        '[databases.eu]\nurl = "postgresql://h/eu"\nprofile = "cap"\nlibrary_timezone = "Europe/Berlin"\n'
        '[databases.in]\nurl = "postgresql://h/in"\nprofile = "cap"\n'
        '[databases.ref]\nurl = "postgresql://h/ref"\n'
    )
    zones = {d.name: d.settings.library_timezone for d in load_databases(settings.load({}, CONFIG=str(path)))}
    assert zones == {"eu": "Europe/Berlin", "in": "local", "ref": "UTC"}
