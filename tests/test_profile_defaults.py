"""A library's own retention and lock timeout (``Profile.defaults``) are a database's defaults: a Brandur database
with no retention set is purged by the reaper's 72 h and read with its 90 s lock timeout; a value the configuration
sets wins; docs/profiles.md lists each default with its source."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

from idemdash.core import settings as idemdash_settings
from idemdash.core.database_table import table_settings
from idemdash.core.profiles import PROFILES
from idemdash.jobs.library_purge import run_library_purges
from idemdash.queries.migrate import migrate
from idemdash.queries.target import Target
from tests import library_ddl as ddl
from tests.test_detect import _create_case

DOCS = (Path(__file__).resolve().parent.parent / "docs" / "profiles.md").read_text(encoding="utf-8")

# ten finished keys created 4 days ago (past the reaper's 72 h), one finished 2 days ago, and one unfinished
# 10 days ago that no retention may touch
KEYS = """
INSERT INTO public.idempotency_keys (id, created_at, idempotency_key, locked_at, request_method, request_params,
                                     request_path, recovery_point, user_id)
SELECT i, now() - interval '4 days', 'old' || i, NULL, 'POST', '{}', '/rides', 'finished', 1
FROM generate_series(1, 10) i;
INSERT INTO public.idempotency_keys (id, created_at, idempotency_key, locked_at, request_method, request_params,
                                     request_path, recovery_point, user_id) VALUES
  (11, now() - interval '2 days', 'recent', NULL, 'POST', '{}', '/rides', 'finished', 1),
  (12, now() - interval '10 days', 'unfinished', now() - interval '10 days', 'POST', '{}', '/rides', 'started', 1)
"""


def test_a_brandur_database_with_no_retention_set_is_purged_by_the_reapers_72_hours(empty_database_url):
    _create_case(empty_database_url, "public", [ddl.BRANDUR])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(KEYS)
    values = idemdash_settings.load({}, DATABASE_URL=empty_database_url, PROFILE="brandur", PURGE_PAUSE_MS=0)
    assert (values.inbox_retention_days, values.default_lease_seconds) == (3, 90)
    [run] = run_library_purges(Target.from_settings(values), dry_run=False, started_by="test")
    assert (run.outcome, run.rows) == ("succeeded", 10)
    with psycopg.connect(empty_database_url) as conn:
        left = {k for (k,) in conn.execute("SELECT idempotency_key FROM public.idempotency_keys")}
    assert left == {"recent", "unfinished"}


def test_what_the_configuration_sets_wins_over_the_librarys_own():
    env = idemdash_settings.load({"IDEMDASH_PROFILE": "brandur", "IDEMDASH_INBOX_RETENTION_DAYS": "10"})
    assert (env.inbox_retention_days, env.default_lease_seconds) == (10, 90)
    # a database of the config file: its own keys win; the environment's (the reference tables') do not
    table, problems = table_settings(
        "[databases.events]",
        "events",
        {"url": "postgresql:///x", "profile": "brandur", "default_lease_seconds": 30},
        idemdash_settings.load({"IDEMDASH_INBOX_RETENTION_DAYS": "40"}),
    )
    assert not problems and (table.inbox_retention_days, table.default_lease_seconds) == (3, 30)
    reference = idemdash_settings.load({})
    assert (reference.inbox_retention_days, reference.default_lease_seconds) == (30, 300)


def test_docs_list_every_librarys_default_with_its_source():
    rows = {
        (name, setting, value): source.replace("`", "")
        for name, setting, value, source in re.findall(
            r"^\| ([a-z-]+) \| `IDEMDASH_([A-Z_]+)` \| (\d+) \| (.+?) \|", DOCS, re.M
        )
    }
    declared = {(p.name, d.setting, str(d.value)): d.source for p in PROFILES.values() for d in p.defaults}
    assert rows == declared and len(declared) >= 6
