"""/metrics for a database of another library's profile: the same series names as the reference tables' (so the
shipped alert rules and the Grafana dashboard watch it unchanged), each number by the library's own states, and no
sample for a number the library does not record."""

from __future__ import annotations

import threading

import psycopg
from prometheus_client.parser import text_string_to_metric_families

from idemdash.dashboard.all_databases import THREAD_PREFIX
from idemdash.queries import Tables, fleet_numbers
from idemdash.queries.app_schema import claim_key
from tests import library_ddl as ddl
from tests.test_detect import _create_case
from tests.test_profile_pages import SPRING_COUNTS, SPRING_ROWS

# the numbers every profile has, under one name each
SHARED = {
    "idemdash_stuck",
    "idemdash_in_progress",
    "idemdash_failed",
    "idemdash_outbox_pending",
    "idemdash_outbox_lag_seconds",
}


def samples(client) -> dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """Each database's samples, by name and their other labels."""
    body = client.get("/metrics").get_data(as_text=True)
    found: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            labels = dict(sample.labels)
            database = labels.pop("database", None)
            if database is not None and sample.name.startswith("idemdash_"):
                found.setdefault(database, {})[(sample.name, tuple(sorted(labels.items())))] = sample.value
    return found


def _two_databases(database_url: str, tmp_path, make_app, **overrides):
    _create_case(database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
        for key in ("a", "b"):  # two reference keys whose lease ran out, and one held now
            claim_key(conn, Tables(), "orders", key, "h", "w", lock_seconds=0)
        claim_key(conn, Tables(), "orders", "live", "h", "w", lock_seconds=600)
    path = tmp_path / "idemdash.toml"
    path.write_text(
        f'[databases.orders]\nurl = "{database_url}"\n[databases.events]\nurl = "{database_url}"\n'
        'profile = "spring-modulith"\napp_schema = "modulith"\noutbox_retention_days = 1\n'
    )
    return make_app(None, CONFIG=str(path), DATABASE_URL="", DEFAULT_LEASE_SECONDS=300, **overrides).test_client()


def test_a_library_database_serves_the_reference_series_names_with_its_own_numbers(make_app, database_url, tmp_path):
    scraped = samples(_two_databases(database_url, tmp_path, make_app))
    orders, events = scraped["orders"], scraped["events"]
    ref, spring = (("profile", "reference"),), (("profile", "spring-modulith"),)
    assert {name for name, _ in orders} >= SHARED and {name for name, _ in events} >= SHARED
    # the reference tables: the same numbers as their own series
    assert (orders[("idemdash_stuck", ref)], orders[("idemdash_in_progress", ref)]) == (2, 3)
    assert orders[("idemdash_stuck", ref)] == orders[("idemdash_stuck_keys_total", ())]
    assert (orders[("idemdash_outbox_pending", ref)], orders[("idemdash_outbox_lag_seconds", ref)]) == (0, 0)
    # Spring Modulith's, each by the library's own definition (SPRING_COUNTS); its oldest pending row is an hour old
    assert (
        events[("idemdash_stuck", spring)],
        events[("idemdash_in_progress", spring)],
        events[("idemdash_outbox_pending", spring)],
        events[("idemdash_failed", spring)],
    ) == (SPRING_COUNTS["stuck"], SPRING_COUNTS["in progress"], SPRING_COUNTS["pending"], SPRING_COUNTS["failed"])
    assert 3500 < events[("idemdash_outbox_lag_seconds", spring)] < 3700
    assert events[("idemdash_database_up", ())] == 1
    # it records no hold for review: no sample, never 0; nor the reference tables' own detail
    assert ("idemdash_needs_review", ref) in orders and not [n for n, _ in events if n == "idemdash_needs_review"]
    assert not {n for n, _ in events} & {"idemdash_stuck_keys_total", "idemdash_processing_keys", "idemdash_stuck_keys"}
    # its rows by state, per role, as /tables counts them; the archive records no progress: no sample
    rows = {
        (dict(labels)["role"], dict(labels)["state"]): (dict(labels)["table"], value)
        for (name, labels), value in events.items()
        if name == "idemdash_profile_rows"
    }
    assert {meaning: rows[("outbox", meaning)] for meaning in SPRING_COUNTS} == {
        meaning: ("event_publication", n) for meaning, n in SPRING_COUNTS.items()
    }
    assert ("archive", "purgeable") in rows and ("archive", "in progress") not in rows
    assert len(rows) == 7  # every state of Spring Modulith v2's two tables (docs/alerts.md counts them)


def test_in_a_fleet_a_library_database_keeps_the_series_its_alerts_use(make_app, database_url, tmp_path):
    scraped = samples(_two_databases(database_url, tmp_path, make_app, METRICS_PER_DATABASE="alerts"))
    spring = (("profile", "spring-modulith"),)
    events = scraped["events"]
    assert events[("idemdash_stuck", spring)] == SPRING_COUNTS["stuck"]
    assert 3500 < events[("idemdash_outbox_lag_seconds", spring)] < 3700
    assert {name for name, _ in events} <= {
        "idemdash_database_up",
        "idemdash_stuck",
        "idemdash_outbox_lag_seconds",
        "idemdash_purge_last_run_failed",
        "idemdash_purge_last_success_timestamp_seconds",
        "idemdash_snapshot_last_timestamp_seconds",
    }
    assert {name for name, _ in scraped["orders"]} >= {"idemdash_stuck", "idemdash_outbox_lag_seconds"}


def test_a_scrape_reads_each_database_once_and_scrapes_in_the_cache_window_none(
    make_app, database_url, tmp_path, monkeypatch
):
    client = _two_databases(database_url, tmp_path, make_app, METRICS_CACHE_SECONDS=60)
    asked: list[str] = []
    numbers = fleet_numbers.get_database_numbers

    def counted(conn, tables, settings, meanings=()):
        if not threading.current_thread().name.startswith(THREAD_PREFIX):  # not the all-databases refresh's
            asked.append(settings.profile)
        return numbers(conn, tables, settings, meanings)

    monkeypatch.setattr(fleet_numbers, "get_database_numbers", counted)
    first = samples(client)
    assert sorted(asked) == ["reference", "spring-modulith"]  # one summary per database, rows by state included
    assert samples(client) == first and len(asked) == 2  # cached: not read again


def test_a_library_database_without_idemdashs_schema_is_up_and_serves_no_purges(make_app, empty_database_url):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SPRING_ROWS)
    client = make_app(
        empty_database_url, PROFILE="spring-modulith", APP_SCHEMA="modulith", DEFAULT_LEASE_SECONDS=300
    ).test_client()
    served = samples(client)["default"]
    spring = (("profile", "spring-modulith"),)
    assert served[("idemdash_database_up", ())] == 1 and served[("idemdash_stuck", spring)] == SPRING_COUNTS["stuck"]
    assert not [name for name, _ in served if name.startswith(("idemdash_purge_", "idemdash_snapshot_"))]
