"""/metrics: Prometheus text with the headline numbers, cached so scrapes do not load the database."""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from idemdash.queries import Tables
from idemdash.queries.app_schema import claim_key

T = Tables()


def scrape(client, database: str = "default") -> dict:
    """``database``'s samples, keyed by name and their other labels (every idemdash sample names its database, but
    the worker's own connections: ``idemdash_worker_*``, kept under their own name)."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            labels = dict(sample.labels)
            if sample.name.startswith("idemdash_worker_"):
                assert "database" not in labels
            elif sample.name.startswith("idemdash_") and labels.pop("database") != database:
                continue
            samples[(sample.name, tuple(sorted(labels.items())))] = sample.value
    return samples


def test_metrics_match_the_database(client, conn):
    for i in range(3):
        claim_key(conn, T, "create_order", f"c{i}", "h", "w", lock_seconds=0)
    claim_key(conn, T, "refund", "r0", "h", "w", lock_seconds=0)
    claim_key(conn, T, "refund", "live", "h", "w", lock_seconds=600)
    conn.execute("""INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope,
                        idempotency_key, payload, created_at)
                    VALUES ('e', 'a', gen_random_uuid(), 's', 'k', '{}', now() - interval '90 seconds')""")
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, rows_deleted, dry_run,
                        outcome, started_by)
                    VALUES ('keys', now() - interval '1 hour', now() - interval '1 hour', 1234, false,
                            'succeeded', 's'),
                           ('keys', now() - interval '5 minutes', now() - interval '5 minutes', 99, true,
                            'succeeded', 's')""")
    m = scrape(client)
    assert m[("idemdash_database_up", ())] == 1
    assert m[("idemdash_stuck_keys", (("scope", "create_order"),))] == 3
    assert m[("idemdash_stuck_keys", (("scope", "refund"),))] == 1
    assert m[("idemdash_stuck_keys_total", ())] == 4
    assert m[("idemdash_processing_keys", ())] == 5
    # the names every profile shares, labelled by the profile: the same numbers
    ref = (("profile", "reference"),)
    assert (
        m[("idemdash_stuck", ref)],
        m[("idemdash_in_progress", ref)],
        m[("idemdash_needs_review", ref)],
        m[("idemdash_failed", ref)],
    ) == (4, 5, 0, 0)
    assert m[("idemdash_outbox_pending", ref)] == 1
    assert 85 <= m[("idemdash_outbox_lag_seconds", ref)] < 200
    assert not [name for name, _ in m if name == "idemdash_profile_rows"]  # the reference's detail is its own
    assert m[("idemdash_purge_last_rows_deleted", (("table", "keys"),))] == 1234  # the dry run does not count
    assert abs(m[("idemdash_purge_last_success_timestamp_seconds", (("table", "keys"),))] - (time.time() - 3600)) < 120


@pytest.mark.system  # over a second: waits out the cache window
def test_scrapes_within_the_cache_window_do_not_read_again(make_app, conn):
    client = make_app(METRICS_CACHE_SECONDS=1).test_client()
    claim_key(conn, T, "s", "a", "h", "w", lock_seconds=0)
    assert scrape(client)[("idemdash_stuck_keys_total", ())] == 1
    claim_key(conn, T, "s", "b", "h", "w", lock_seconds=0)
    assert scrape(client)[("idemdash_stuck_keys_total", ())] == 1  # cached
    time.sleep(1.2)
    assert scrape(client)[("idemdash_stuck_keys_total", ())] == 2


def test_request_latency_is_recorded_per_endpoint(client):
    client.get("/api/v1/overview")
    client.get("/keys?status=bogus")
    m = scrape(client)
    ok = (
        "idemdash_http_request_duration_seconds_count",
        (("endpoint", "overview.api"), ("method", "GET"), ("status", "200")),
    )
    bad = (
        "idemdash_http_request_duration_seconds_count",
        (("endpoint", "keys.list_page"), ("method", "GET"), ("status", "400")),
    )
    assert m[ok] == 1 and m[bad] == 1


@pytest.mark.system  # about a second or more: the fast loop keeps within its minute
def test_an_unreachable_database_reports_down_instead_of_failing(make_app):
    client = make_app("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1", POOL_TIMEOUT_SECONDS=1).test_client()
    m = scrape(client)
    assert m[("idemdash_database_up", ())] == 0
    assert ("idemdash_stuck_keys_total", ()) not in m
