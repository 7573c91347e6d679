"""Every index a profile advises builds on the library's own tables (tests/library_ddl.py), under the name idemdash
gives it, beside the library's indexes (left as they are); a second build is a no-op."""

from __future__ import annotations

import psycopg
import pytest

from idemdash.core.profiles import PROFILES
from idemdash.queries.catalog import find_shapes
from idemdash.queries.indexes import MISSING, OK
from idemdash.queries.profile_indexes import create_profile_index, list_profile_index_status
from tests.test_detect import CASES, IDS, _create_case

# the cases with a table an advised index is on (Eventuate's database-id mode has no received_messages)
ADVISING = [
    (case, ident)
    for case, ident in zip(CASES, IDS, strict=True)
    if any(index.table in case[4] for index in PROFILES[case[0]].indexes)
]


@pytest.mark.parametrize(
    ("name", "version", "schema", "statements", "tables"), [c for c, _ in ADVISING], ids=[i for _, i in ADVISING]
)
def test_each_advised_index_builds_beside_the_librarys_own(
    empty_database_url, name, version, schema, statements, tables
):
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        [found] = find_shapes(conn)
        own = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s ORDER BY 1", (schema,)).fetchall()
        before = list_profile_index_status(conn, found)
        assert before and {s.state for s in before} == {MISSING}
        for status in before:
            assert status.index_name.endswith("_idemdash_idx") and "CONCURRENTLY" in status.create_sql
            create_profile_index(conn, found, status)
        after = list_profile_index_status(conn, found)
        assert {s.state for s in after} == {OK}
        names = {n for (n,) in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,))}
        assert names == {n for (n,) in own} | {s.index_name for s in after}
        for status in after:  # again: IF NOT EXISTS, nothing changes
            create_profile_index(conn, found, status)
        assert {s.state for s in list_profile_index_status(conn, found)} == {OK}
