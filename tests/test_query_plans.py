"""Every statement a page or API request runs can be served from an index: the CI-sized guard behind the
size-L benchmark (docs/benchmarks.md), which is too big for CI.

The test serves every GET request the page benchmark times (benchmarks/page_bench.py) on data set S with the
recommended indexes, records each statement that touches an application table, and asks PostgreSQL for its
plan with sequential scans priced out (``enable_seqscan = off``): a statement that still scans a whole table
has no index it could use, and would read every row at size L. A full walk of an index is flagged too,
unless a LIMIT stops it early (keyset pagination) or the statement is one of the whole-table aggregates that
the rollup job precomputes (dashboard/rollups.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest
from psycopg import sql

from benchmarks.datagen import SIZES, generate
from benchmarks.page_bench import build_requests, find_samples
from idemdash.core.profiles import PROFILES
from idemdash.core.profiles.detect import Found
from idemdash.core.profiles.shape import AS_IS
from idemdash.queries import QUERIES, Tables, statement
from idemdash.queries.indexes import ADVICE
from idemdash.queries.key_breakdown import status_breakdown_statement
from idemdash.queries.keys import DIRECTIONS, list_statement
from idemdash.queries.profile_states import state_statement

TABLES = Tables()
APP_TABLES = {TABLES.keys, TABLES.inbox, TABLES.outbox}

# Aggregates over a whole window or table: precomputed by the rollup job at size L (dashboard/rollups.py), so
# a page reads them from idemdash.rollup, not from these statements. They walk an index by design.
WHOLE_TABLE_AGGREGATES = {
    "count_keys_by_window",
    "get_inbox_volume",
    "list_hotspot_groups",
    "count_keys_by_attempts",
    "list_suppression_by_scope",
    "list_inbox_consumers",
    "get_inbox_totals",
    "list_outbox_event_types",
    "list_workers",
}


# Counts of exactly the rows a partial index holds (every processing key, every pending outbox row): the partial
# index, read whole and index-only, is the answer (the overview's processing count, the outbox backlog, its lag and
# its likely poison rows apart). Bounded by
# what the predicate selects (1 % and 2.5 % of the tables at size L), not by the table.
PARTIAL_INDEX_COUNTS = {"count_processing_keys", "get_outbox_backlog"}


# The counts of /tables (queries/profile_states.sql): each state of each table counted whole, as the library
# defines it; precomputed by the rollup job (the library_states rollup, for every profile) where slow, and
# estimated there past its budget for one state (docs/profiles.md, At scale).
def _profile_state_count(name: str) -> bool:
    return name.startswith("state_") and QUERIES[name].source == "profile_states.sql"


# Partial indexes that hold only a handful of rows by what they are (keys an operator holds for review): reading
# the whole index is reading exactly those rows.
SMALL_BY_PREDICATE = {ADVICE["index_keys_held"].index_name(TABLES)}


def _statement_names() -> dict[str, str]:
    """Rendered text of every named statement over the default tables → its name."""
    names = {}
    for name in QUERIES:
        try:
            names[statement(name, TABLES).as_string(None)] = name
        except (KeyError, IndexError, ValueError):
            continue  # needs identifiers other than the tables (index names, columns): not a page read
    # the reference tables' states (/tables), with the column names the profile gives them
    found = Found(
        "reference",
        None,
        TABLES.schema,
        AS_IS,
        (("keys", TABLES.keys), ("inbox", TABLES.inbox), ("outbox", TABLES.outbox)),
    )
    for state in PROFILES["reference"].states:
        names[state_statement(found, state).as_string(None)] = state.query  # type: ignore[union-attr]
    for name in ("list_processing_keys", "list_keys_by_status"):  # key lists, read either way
        for order in DIRECTIONS:
            names[list_statement(name, TABLES, order).as_string(None)] = name
    for oldest_first in (False, True):  # a terminal tab's breakdown, with a scope or without
        names[status_breakdown_statement(TABLES, oldest_first=oldest_first).as_string(None)] = "breakdown_status_keys"
    return names


def _nodes(plan: dict[str, Any], parents: tuple[str, ...] = ()) -> Iterator[tuple[dict[str, Any], tuple[str, ...]]]:
    yield plan, parents
    for child in plan.get("Plans", []):
        yield from _nodes(child, parents + (plan["Node Type"],))


@pytest.fixture
def indexed_s(database_url):
    generate(database_url, SIZES["S"], seed=1, jobs=2)
    with psycopg.connect(database_url, autocommit=True) as conn:
        for advice in ADVICE.values():
            conn.execute(advice.create_statement(TABLES))
        # as after a bulk load at size L (datagen): the visibility map set, so index-only scans cost what they will
        conn.execute("VACUUM (ANALYZE)")
    return database_url


@pytest.mark.system  # over a second: kept out of the fast loop
def test_every_page_statement_has_an_index_to_use(indexed_s, make_app, monkeypatch):
    app = make_app(indexed_s)
    client = app.test_client()
    samples = find_samples(client, indexed_s, TABLES)
    requests, _ = build_requests(app, samples)
    # the search of every database needs its q, which the benchmark's list does not give it
    requests = [
        replace(r, path=f"{r.path}?{urlencode({'q': samples.stuck_key.key})}")
        if r.endpoint == "fleet_search.api" and "?" not in r.path
        else r
        for r in requests
    ]
    assert len(requests) > 50

    recorded: dict[str, tuple[sql.Composable, Any, str]] = {}
    real_execute = psycopg.Cursor.execute

    def spy(self, query, params=None, **kwargs):
        if isinstance(query, sql.Composable):
            text = query.as_string(None)
            if any(table in text for table in APP_TABLES):
                recorded.setdefault(text, (query, params, current))
        return real_execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    for request in requests:
        current = request.label
        response = client.get(request.path, headers=dict(request.headers))
        # 302: the search for a key only one scope has goes to its page
        assert response.status_code == (302 if "redirect" in request.label else 200), (
            request.label,
            response.status_code,
        )
    monkeypatch.undo()

    names = _statement_names()
    seen = {names.get(text, "?") for text in recorded}
    # the page reads the benchmark cares most about were among them
    assert {
        "count_processing_keys",
        "list_processing_keys",
        "list_keys_by_status",
        "get_outbox_backlog",
        "list_outbox_pending",
        "get_key",
        "list_outbox_for_key",
    } <= seen, seen

    problems = []
    with psycopg.connect(indexed_s) as conn:
        conn.execute("SET enable_seqscan = off")
        for text, (query, params, label) in recorded.items():
            name = names.get(text, "?")
            if text.startswith("EXPLAIN"):
                continue  # /health asks for a purge batch's plan (explain_purge_batch): planning reads no rows
            (plan,) = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params, prepare=False).fetchone()[0]
            for node, parents in _nodes(plan["Plan"]):
                if node.get("Relation Name") not in APP_TABLES:
                    continue
                kind = node["Node Type"]
                if kind == "Seq Scan" and not _profile_state_count(name):
                    problems.append(f"{name} ({label}): Seq Scan on {node['Relation Name']}")
                elif (
                    kind in ("Index Scan", "Index Only Scan")
                    and "Index Cond" not in node
                    and "Limit" not in parents
                    and name not in WHOLE_TABLE_AGGREGATES | PARTIAL_INDEX_COUNTS
                    and node["Index Name"] not in SMALL_BY_PREDICATE
                    and not _profile_state_count(name)
                ):
                    problems.append(f"{name} ({label}): unbounded {kind} of {node['Index Name']}")
    assert not problems, "\n".join(problems)


@pytest.mark.system  # data set S: over a second
def test_failed_keys_by_worker_read_the_failures_index_not_every_failed_row(indexed_s, make_app, monkeypatch):
    # at 100M keys (3M failed) the list and its count read every failed key's row to test its worker: 3 s
    recorded: list[tuple[sql.Composable, Any]] = []
    real_execute = psycopg.Cursor.execute

    def spy(self, query, params=None, **kwargs):
        if (
            isinstance(query, sql.Composable)
            and TABLES.keys in query.as_string(None)
            and isinstance(params, dict)
            and "worker-07" in params.values()
        ):
            recorded.append((query, params))
        return real_execute(self, query, params, **kwargs)

    client = make_app(indexed_s).test_client()
    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    answer = client.get("/api/v1/keys?status=failed_final&claimed_by=worker-07")
    monkeypatch.undo()
    assert answer.status_code == 200 and answer.get_json()["items"]
    assert all(k["claimed_by"] == "worker-07" for k in answer.get_json()["items"])
    assert len(recorded) >= 2  # the list and its count
    failures = ADVICE["index_keys_failures"].index_name(TABLES)
    with psycopg.connect(indexed_s) as conn:
        for query, params in recorded:
            (plan,) = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params, prepare=False).fetchone()[0]
            nodes = [n for n, _ in _nodes(plan["Plan"])]
            assert not any(n["Node Type"] == "Seq Scan" for n in nodes)
            indexes = [n for n in nodes if "Index Name" in n]  # an index scan, or a bitmap's (at size S)
            assert [n["Index Name"] for n in indexes] == [failures], (query.as_string(None), nodes)
            assert "claimed_by" in indexes[0]["Index Cond"]


@pytest.mark.system  # data set S: over a second
def test_workers_and_the_owner_search_read_the_leases_updated_and_failures_indexes(indexed_s):
    # /workers: every processing key from the leases index (index-only: it carries claimed_by and claimed_at),
    # the window's finished keys as a range of the status/updated_at index; never the table whole
    leases, updated, failures = (
        ADVICE[name].index_name(TABLES) for name in ("index_keys_leases", "index_keys_updated", "index_keys_failures")
    )
    checks = [
        (
            statement("list_workers", TABLES),
            {"lease_seconds": 300, "window": timedelta(hours=window), "limit": 201},
            {leases, updated},
            {leases, updated},
        )
        for window in (1, 24, 168)
    ]
    # the search's owners: a loose scan of the failures index (one descent per owner), the newest succeeded keys
    # and the processing keys at each end of the lease order, each up to a LIMIT
    checks += [
        (
            statement("list_recent_owners", TABLES),
            {"sample": 2000, "max_failing": 2000, "limit": 10000},
            {leases, updated, failures},
            {leases, updated, failures},
        ),
        (statement("find_failing_owner", TABLES), {"name": "worker-07"}, {failures}, {failures}),
    ]
    with psycopg.connect(indexed_s) as conn:
        conn.execute("SET enable_seqscan = off")
        for query, params, must, may in checks:
            (plan,) = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params, prepare=False).fetchone()[0]
            nodes = [(n, parents) for n, parents in _nodes(plan["Plan"])]
            assert not any(n["Node Type"] == "Seq Scan" for n, _ in nodes), query.as_string(None)
            used = {n["Index Name"] for n, _ in nodes if "Index Name" in n}
            assert must <= used <= may, (query.as_string(None), used)
            for node, parents in nodes:
                if node.get("Index Name") == updated:
                    # a range of updated_at (the window), or the newest entries up to a LIMIT (the sample)
                    assert "updated_at" in node.get("Index Cond", "") or "Limit" in parents, node
                if node.get("Index Name") == failures:
                    assert "claimed_by" in node["Index Cond"] or "Limit" in parents, node


@pytest.mark.system  # over a second: kept out of the fast loop
def test_the_snapshots_rates_read_the_keys_that_changed_through_the_updated_index(indexed_s):
    # the snapshot job counts the keys claimed, completed and failed since the previous snapshot each minute: a
    # range of the status/updated_at index per status, never the table whole, whatever its size
    updated = ADVICE["index_keys_updated"].index_name(TABLES)
    with psycopg.connect(indexed_s) as conn:
        conn.execute("SET enable_seqscan = off")
        until = conn.execute("SELECT now()").fetchone()[0]
        query = statement("count_key_changes_between", TABLES)
        (plan,) = conn.execute(
            sql.SQL("EXPLAIN (FORMAT JSON) ") + query,
            {"since": until - timedelta(minutes=1), "until": until},
            prepare=False,
        ).fetchone()[0]
    nodes = [n for n, _ in _nodes(plan["Plan"])]
    assert not any(n["Node Type"] == "Seq Scan" for n in nodes), plan
    keys = [n for n in nodes if n.get("Relation Name") == TABLES.keys or n.get("Index Name") == updated]
    assert keys and all(n.get("Index Name") == updated and "updated_at" in n.get("Index Cond", "") for n in keys), keys


@pytest.mark.system  # data set S: over a second
def test_a_scopes_terminal_breakdown_reads_the_oldest_changed_keys_index_only(indexed_s):
    """With a scope given, a terminal tab's breakdown examines its keys oldest changed first, reading the
    terminal-scope index backward with no sort: at 100M keys the newest first cost a heap page each (8,488 pages for
    one scope's succeeded keys, against 121)."""
    terminal_scope = ADVICE["index_keys_terminal_scope"].index_name(TABLES)
    query = status_breakdown_statement(TABLES, oldest_first=True)
    params = {"status": "succeeded", "scope": "checkout", "claimed_by": None, "min_attempts": None}
    with psycopg.connect(indexed_s) as conn:
        (scope,) = conn.execute(
            "SELECT idempotency_scope FROM app.idempotency_request WHERE status = 'succeeded' "
            "GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
        params |= {"scope": scope, "updated_within": None, "cap": 10_000}
        (plan,) = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params, prepare=False).fetchone()[0]
        nodes = [n for n, _ in _nodes(plan["Plan"])]
        scans = [n for n in nodes if n.get("Index Name") == terminal_scope]
        assert scans and all(n["Node Type"] == "Index Only Scan" for n in scans), nodes
        assert all(n["Scan Direction"] == "Backward" for n in scans)
        assert not any(n["Node Type"] in ("Sort", "Seq Scan", "Incremental Sort") for n in nodes)
        # the same groups as the unordered statement: under the cap every matching key is examined either way
        unordered = status_breakdown_statement(TABLES, oldest_first=False)
        small = params | {"cap": 10_000_000}
        assert set(conn.execute(query, small).fetchall()) == set(conn.execute(unordered, small).fetchall())
