"""Every state of every profile runs as its block of queries/profile_states.sql against the library's own tables
(tests/library_ddl.py, found by `idemdash detect`'s matching), and counts the right rows where rows are seeded."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest

from idemdash.core.profiles import PROFILES
from idemdash.queries import QUERIES
from idemdash.queries.catalog import find_shapes
from idemdash.queries.profile_states import count_states
from tests import library_ddl as ddl
from tests.test_detect import CASES, IDS, _create_case

PARAMS = {
    "retention": timedelta(hours=1),
    "stale_after": timedelta(minutes=5),
    "lock_timeout": timedelta(seconds=90),
    "before_epoch_ms": int(time.time() * 1000) - 3_600_000,
    "library_zone": "UTC",
    "stale_before_epoch_ms": int(time.time() * 1000) - 300_000,
    "horizon_before_epoch_ms": int(time.time() * 1000) - 86_400_000,
}

BRANDUR_ROWS = """
INSERT INTO public.idempotency_keys (created_at, idempotency_key, locked_at, request_method, request_params,
                                     request_path, recovery_point, user_id) VALUES
  (now() - interval '4 days', 'a', NULL, 'POST', '{}', '/rides', 'finished', 1),
  (now(), 'b', NULL, 'POST', '{}', '/rides', 'finished', 1),
  (now(), 'c', NULL, 'POST', '{}', '/rides', 'started', 1),
  (now(), 'd', now(), 'POST', '{}', '/rides', 'started', 1),
  (now(), 'e', now() - interval '10 minutes', 'POST', '{}', '/rides', 'ride_created', 1)
"""
SPRING_V1_ROWS = """
INSERT INTO public.event_publication (id, listener_id, event_type, serialized_event, publication_date,
                                      completion_date) VALUES
  (gen_random_uuid(), 'l', 't', 'e1', now() - interval '3 hours', now() - interval '2 hours'),
  (gen_random_uuid(), 'l', 't', 'e2', now(), now()),
  (gen_random_uuid(), 'l', 't', 'e3', now() - interval '1 hour', NULL),
  (gen_random_uuid(), 'l', 't', 'e4', now(), NULL)
"""
SPRING_V2_ROWS = """
INSERT INTO public.event_publication (id, listener_id, event_type, serialized_event, publication_date,
                                      completion_date, status) VALUES
  (gen_random_uuid(), 'l', 't', 'e1', now() - interval '3 hours', now() - interval '2 hours', 'COMPLETED'),
  (gen_random_uuid(), 'l', 't', 'e2', now() - interval '1 hour', NULL, 'PROCESSING'),
  (gen_random_uuid(), 'l', 't', 'e3', now(), NULL, 'PUBLISHED'),
  (gen_random_uuid(), 'l', 't', 'e4', now() - interval '1 hour', NULL, 'FAILED'),
  (gen_random_uuid(), 'l', 't', 'e5', now() - interval '1 hour', NULL, NULL),
  -- left from v1: completed, with a NULL status (complete for the registry, never pending)
  (gen_random_uuid(), 'l', 't', 'e6', now() - interval '3 hours', now() - interval '2 hours', NULL);
INSERT INTO public.event_publication_archive (id, listener_id, event_type, serialized_event, publication_date,
                                              completion_date, status) VALUES
  (gen_random_uuid(), 'l', 't', 'a1', now() - interval '3 hours', now() - interval '2 hours', 'COMPLETED'),
  (gen_random_uuid(), 'l', 't', 'a2', now() - interval '3 hours', now() - interval '2 hours', 'FAILED')
"""
WOLVERINE_ROWS = """
INSERT INTO wolverine.wolverine_nodes (id, node_number, description, uri) VALUES (gen_random_uuid(), 1, 'n', 'u');
INSERT INTO wolverine.wolverine_incoming_envelopes (id, status, owner_id, body, message_type, keep_until) VALUES
  (gen_random_uuid(), 'Incoming', 0, '\\x00', 'm', NULL),
  (gen_random_uuid(), 'Incoming', 1, '\\x00', 'm', NULL),
  (gen_random_uuid(), 'Incoming', 7, '\\x00', 'm', NULL),
  (gen_random_uuid(), 'Handled', 0, '\\x00', 'm', now() - interval '1 minute'),
  (gen_random_uuid(), 'Handled', 0, '\\x00', 'm', now() + interval '5 minutes'),
  (gen_random_uuid(), 'Scheduled', 0, '\\x00', 'm', NULL);
-- Scheduled: one due an hour ago (overdue past the lease: stuck), one due in an hour
INSERT INTO wolverine.wolverine_incoming_envelopes (id, status, owner_id, body, message_type, execution_time) VALUES
  (gen_random_uuid(), 'Scheduled', 0, '\\x00', 'm', now() - interval '1 hour'),
  (gen_random_uuid(), 'Scheduled', 0, '\\x00', 'm', now() + interval '1 hour');
INSERT INTO wolverine.wolverine_outgoing_envelopes (id, owner_id, destination, body, message_type) VALUES
  (gen_random_uuid(), 0, 'd', '\\x00', 'm'), (gen_random_uuid(), 1, 'd', '\\x00', 'm'),
  (gen_random_uuid(), 9, 'd', '\\x00', 'm');
INSERT INTO wolverine.wolverine_dead_letters (id, body, message_type, replayable) VALUES
  (gen_random_uuid(), '\\x00', 'm', false), (gen_random_uuid(), '\\x00', 'm', true)
"""

# pg-transactional-outbox's locked_until is a lease (next_messages sets it, with started_attempts + 1), a retry delay
# (a handler that threw adds finished_attempts + 1 and leaves the lease's end ahead) and a schedule (a message stored
# with lockedUntil): only the first is in progress, a worker holding it
PGTO_ROWS = """
INSERT INTO public.outbox (id, aggregate_type, aggregate_id, message_type, payload, locked_until, processed_at,
                           abandoned_at, started_attempts, finished_attempts) VALUES
  (gen_random_uuid(), 'a', '1', 'new', '{}', to_timestamp(0), NULL, NULL, 0, 0),
  (gen_random_uuid(), 'a', '2', 'scheduled', '{}', now() + interval '1 hour', NULL, NULL, 0, 0),
  (gen_random_uuid(), 'a', '3', 'threw, waiting', '{}', now() + interval '10 seconds', NULL, NULL, 1, 1),
  (gen_random_uuid(), 'a', '4', 'taken', '{}', now() + interval '10 seconds', NULL, NULL, 2, 1),
  (gen_random_uuid(), 'a', '5', 'taken, lease over', '{}', now() - interval '1 minute', NULL, NULL, 1, 0),
  (gen_random_uuid(), 'a', '6', 'processed', '{}', now() - interval '1 day', now() - interval '2 hours', NULL, 1, 1),
  (gen_random_uuid(), 'a', '7', 'abandoned', '{}', now() - interval '1 day', NULL, now() - interval '1 minute', 5, 5)
"""

# (profile, version): the seed, and every state's count by (table role, meaning)
SEEDED = {
    ("brandur", None): (
        BRANDUR_ROWS,
        {
            ("keys", "pending"): 1,
            ("keys", "in progress"): 2,
            ("keys", "stuck"): 1,
            ("keys", "done"): 2,
            ("keys", "purgeable"): 1,
        },
    ),
    ("spring-modulith", "v1"): (
        SPRING_V1_ROWS,
        {("outbox", "pending"): 2, ("outbox", "stuck"): 1, ("outbox", "done"): 2, ("outbox", "purgeable"): 1},
    ),
    ("spring-modulith", "v2"): (
        SPRING_V2_ROWS,
        {
            ("outbox", "pending"): 2,
            ("outbox", "in progress"): 1,
            ("outbox", "stuck"): 1,
            ("outbox", "done"): 2,
            ("outbox", "failed"): 2,
            ("outbox", "purgeable"): 2,
            ("archive", "purgeable"): 1,
        },
    ),
    ("pg-transactional-outbox", None): (
        PGTO_ROWS,
        {
            ("outbox", "pending"): 5,
            ("outbox", "in progress"): 1,
            ("outbox", "stuck"): 1,
            ("outbox", "done"): 1,
            ("outbox", "failed"): 1,
            ("outbox", "purgeable"): 1,
            ("inbox", "pending"): 0,
            ("inbox", "in progress"): 0,
            ("inbox", "stuck"): 0,
            ("inbox", "done"): 0,
            ("inbox", "failed"): 0,
            ("inbox", "purgeable"): 0,
        },
    ),
    ("wolverine", None): (
        WOLVERINE_ROWS,
        {
            ("inbox", "pending"): 4,
            ("inbox", "in progress"): 2,
            ("inbox", "stuck"): 2,
            ("inbox", "done"): 2,
            ("inbox", "purgeable"): 1,
            ("outbox", "pending"): 3,
            ("outbox", "stuck"): 1,
            ("dead_letters", "failed"): 2,
        },
    ),
}


def _counts(url: str) -> dict[tuple[str, str], int | None]:
    with psycopg.connect(url) as conn:
        [found] = find_shapes(conn)
        return {(state.table, state.meaning): count for state, count in count_states(conn, found, PARAMS)}


@pytest.mark.parametrize(("name", "version", "default_schema", "statements", "tables"), CASES, ids=IDS)
def test_every_state_counts_over_the_librarys_own_tables(
    empty_database_url, name, version, default_schema, statements, tables
):
    _create_case(empty_database_url, default_schema, statements)
    seed, expected = SEEDED.get((name, version), (None, None))
    if seed is not None:
        with psycopg.connect(empty_database_url, autocommit=True) as conn:
            conn.execute(seed)
    counts = _counts(empty_database_url)
    states = PROFILES[name].states_of(version)
    assert len(counts) == len(states)
    # a state over a table this case does not create (an optional one) has no count; every other one ran
    assert {key for key, n in counts.items() if n is None} == {key for key in counts if key[0] not in tables}
    ran = {key: n for key, n in counts.items() if n is not None}
    assert ran == (expected if expected is not None else {key: 0 for key in ran})


REFERENCE_ROWS = """
INSERT INTO app.idempotency_request (idempotency_scope, idempotency_key, request_hash, status, claimed_at,
                                     locked_until, expires_at, created_at)
SELECT *, now() - interval '2 days' FROM (VALUES
  ('pay', 'live', 'h', 'processing'::app.idempotency_status, now(), now() + interval '1 minute',
   now() + interval '1 day'),
  ('pay', 'lease-over', 'h', 'processing', now() - interval '1 hour', now() - interval '1 minute',
   now() + interval '1 day'),
  -- no lease end: stuck once claimed longer ago than the lease (5 minutes here), not before
  ('pay', 'no-lease-old', 'h', 'processing', now() - interval '10 minutes', NULL, now() + interval '1 day'),
  ('pay', 'no-lease-new', 'h', 'processing', now() - interval '1 minute', NULL, now() + interval '1 day'),
  ('pay', 'ok', 'h', 'succeeded', now(), NULL, now() + interval '1 day'),
  ('pay', 'ok-expired', 'h', 'succeeded', now(), NULL, now() - interval '1 day'),
  ('pay', 'decided', 'h', 'failed_final', now(), NULL, now() - interval '1 day'),
  ('pay', 'final-expired', 'h', 'failed_final', now(), NULL, now() - interval '1 day'),
  ('pay', 'retry', 'h', 'failed_retryable', now(), NULL::timestamptz, now() - interval '1 day')) AS k;
-- an operator's decision on 'decided' within the replay horizon: the purge keeps it, the count (terminal and
-- expired, as its note says) does not tell it apart
INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason)
VALUES ('alice', 'reclassify', 'pay', 'decided', 'processing', 'failed_final', 'abandoned by hand');
INSERT INTO app.processed_message (consumer_name, message_id, message_hash, processed_at) VALUES
  ('billing', 'm1', 'h', now()), ('billing', 'm2', 'h', now() - interval '2 hours');
INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, payload, status, published_at,
                            idempotency_scope, idempotency_key) SELECT *, 'pay', aggregate_id::text FROM (VALUES
  ('paid', 'order', gen_random_uuid(), '{}'::jsonb, 'pending', NULL::timestamptz),
  ('paid', 'order', gen_random_uuid(), '{}', 'published', now()),
  ('paid', 'order', gen_random_uuid(), '{}', 'published', now() - interval '2 hours'),
  ('paid', 'order', gen_random_uuid(), '{}'::jsonb, 'parked', NULL::timestamptz))
  AS o(event_type, aggregate_type, aggregate_id, payload, status, published_at);
"""
REFERENCE_COUNTS = {
    ("keys", "in progress"): 4,
    ("keys", "stuck"): 2,
    ("keys", "done"): 2,
    ("keys", "failed"): 3,
    ("keys", "purgeable"): 3,
    ("inbox", "done"): 2,
    ("inbox", "purgeable"): 1,
    ("outbox", "pending"): 1,
    ("outbox", "done"): 2,
    ("outbox", "failed"): 1,
    ("outbox", "purgeable"): 1,
}


def test_the_reference_states_count_over_the_reference_tables(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(REFERENCE_ROWS)
    counts = _counts(database_url)
    assert len(counts) == len(PROFILES["reference"].states)
    assert counts == REFERENCE_COUNTS


def test_every_state_names_one_block_and_every_block_is_a_state():
    named = [state.query for p in PROFILES.values() for state in p.states]
    # a block is one profile's (two tables of one shape may share it: pg-transactional-outbox's outbox and inbox)
    owners = {(p.name, state.query) for p in PROFILES.values() for state in p.states}
    assert len({query for _, query in owners}) == len(owners)
    blocks = {name for name, query in QUERIES.items() if query.source == "profile_states.sql"}
    assert set(named) == blocks
    # a block is a condition over its table: no statement of its own (queries/profile_rows.sql composes them)
    assert not any(QUERIES[n].text.lstrip().upper().startswith(("SELECT", "WITH", "DELETE")) for n in named)


def test_wolverine_calls_no_envelope_stuck_while_its_node_table_is_empty(empty_database_url):
    """Wolverine's orphan sweep releases an owner's envelopes only when wolverine_nodes lists nodes and not that one:
    an empty node table is no evidence that every owner is dead."""
    _create_case(empty_database_url, "wolverine", [ddl.WOLVERINE])
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(WOLVERINE_ROWS)
        conn.execute("DELETE FROM wolverine.wolverine_nodes")
    counts = _counts(empty_database_url)
    assert counts[("inbox", "stuck")] == 1  # only the overdue Scheduled row; the envelope owned by 7 is not
    assert counts[("outbox", "stuck")] == 0
