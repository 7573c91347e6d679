"""/health of a database of another library's profile: its tables found (or where detect finds them), the advised
indexes with the statement that builds each, idemdash's schema for the purge history, and where the library's own
cleaner deletes unfinished rows (idemdash never does)."""

from __future__ import annotations

import psycopg
from bs4 import BeautifulSoup

from idemdash.queries.migrate import migrate
from tests import library_ddl as ddl
from tests.test_detect import _create_case


def test_a_spring_modulith_database_health_says_what_to_build_and_to_migrate(make_app, empty_database_url):
    _create_case(empty_database_url, "public", [ddl.SPRING_MODULITH_V2])
    client = make_app(empty_database_url, PROFILE="spring-modulith").test_client()
    answer = client.get("/api/v1/health/schema").get_json()
    found = {item["id"]: item for item in answer["items"]}
    assert found["profile.tables"]["status"] == "ok"
    index = found["profile.index.incomplete"]
    assert index["status"] == "warn" and "CREATE INDEX CONCURRENTLY" in index["fix_sql"]
    assert found["profile.purges"]["fix"] == "idemdash migrate"
    assert answer["status"] == "warn" and "profile.cleanup" not in found  # Spring Modulith deletes no unfinished row
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrate(conn)
    again = {i["id"] for i in client.get("/api/v1/health/schema").get_json()["items"]}
    assert "profile.purges" not in again
    page = BeautifulSoup(client.get("/health").data, "html.parser")
    assert "event_publication_incomplete_idemdash_idx" in page.get_text()
    # every script shown ends with one ';', however its check wrote it (the advice's CREATE INDEX ended in ';;')
    scripts = [pre.get_text() for pre in page.select("pre[data-fix-sql]")]
    assert scripts and all(s.endswith(";") and not s.endswith(";;") for s in scripts), scripts
    assert [a.get_text() for a in page.select("nav a")] == [
        "Overview",
        "Hotspots",
        "Workers",
        "Suppression",
        "Outbox",
        "Audit",
        "Purges",
        "Health",
        "Runbooks",
        "Tables",
    ]


def test_a_brandur_database_health_says_its_reaper_deletes_unfinished_keys_and_a_wrong_schema_fails(
    make_app, empty_database_url
):
    _create_case(empty_database_url, "public", [ddl.BRANDUR])
    items = {
        i["id"]: i
        for i in make_app(empty_database_url, PROFILE="brandur")
        .test_client()
        .get("/api/v1/health/schema")
        .get_json()["items"]
    }
    assert "whatever its recovery point" in items["profile.cleanup"]["detail"]
    wrong = make_app(empty_database_url, PROFILE="brandur", APP_SCHEMA="rides").test_client()
    answer = wrong.get("/api/v1/health/schema").get_json()
    assert answer["status"] == "fail"
    assert "finds them in schema public" in answer["items"][0]["detail"]
