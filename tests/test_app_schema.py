"""The reference application schema: every claim outcome, fencing, the inbox, races.

Every behavioural test runs against both flavours of the reference schema
(``status`` as a PostgreSQL enum and as plain text), because the column contract (docs/getting-started.md)
says both must work.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from idemdash.queries import Tables
from idemdash.queries.app_schema import (
    CLAIM_KINDS,
    MESSAGE_MISMATCH,
    NOT_PROCESSING,
    OWNING_KINDS,
    PAYLOAD_MISMATCH,
    Claim,
    claim_key,
    complete_key,
    consume_message,
    create_app_schema,
    fail_key,
)
from tests.waiting import wait_until

TABLES = Tables()
SCOPE = "payments"
HASH = "sha256:aaaa"
OTHER_HASH = "sha256:bbbb"
THREADS = 16


# ---------------------------------------------------------------------------
# fixtures and helpers


@pytest.fixture(params=["enum", "text"])
def status_type(request):
    return request.param


@pytest.fixture
def app_db(status_type, request):
    """A fresh database with the reference schema, status as enum or text."""
    fixture = "database_url" if status_type == "enum" else "text_status_database_url"
    return request.getfixturevalue(fixture)


@pytest.fixture
def db(app_db):
    with psycopg.connect(app_db, autocommit=True) as connection:
        yield connection


def key_row(conn: psycopg.Connection, key: str, scope: str = SCOPE, tables: Tables = TABLES) -> dict[str, Any] | None:
    query = sql.SQL("SELECT *, status::text AS status FROM {} WHERE idempotency_scope = %s AND idempotency_key = %s")
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query.format(sql.Identifier(tables.schema, tables.keys)), (scope, key))
        return cur.fetchone()


def count_keys(conn: psycopg.Connection, tables: Tables = TABLES) -> int:
    query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(tables.schema, tables.keys))
    return conn.execute(query).fetchone()[0]


def db_now(conn: psycopg.Connection):
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def expire_lease(conn: psycopg.Connection, key: str, scope: str = SCOPE) -> None:
    """Make a processing key stuck: its lease ran out a minute ago."""
    cur = conn.execute(
        "UPDATE app.idempotency_request SET locked_until = clock_timestamp() - interval '1 minute' "
        "WHERE idempotency_scope = %s AND idempotency_key = %s AND status::text = 'processing'",
        (scope, key),
    )
    assert cur.rowcount == 1


def claim(conn, key, claimed_by="w1", request_hash=HASH, scope=SCOPE, **kwargs) -> Claim:
    return claim_key(conn, TABLES, scope, key, request_hash, claimed_by, **kwargs)


def race(conns: list[psycopg.Connection], work: Callable[[int, psycopg.Connection], Any]) -> list[Any]:
    """Run ``work(i, conn)`` in one real thread per connection, released together by a barrier.

    Returns each thread's result, or the exception it raised.
    """
    barrier = threading.Barrier(len(conns))
    results: list[Any] = [None] * len(conns)

    def run(i: int, conn: psycopg.Connection) -> None:
        try:
            barrier.wait(timeout=20)
            results[i] = work(i, conn)
        except BaseException as exc:  # reported by the caller
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c), name=f"race-{i}") for i, c in enumerate(conns)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a racing thread hung"
    return results


def no_errors(results: list[Any]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, f"racing threads failed: {errors!r}"


@pytest.fixture
def worker_conns(app_db):
    conns = [psycopg.connect(app_db, autocommit=True) for _ in range(THREADS)]
    yield conns
    for connection in conns:
        connection.close()


# ---------------------------------------------------------------------------
# the six claim outcomes


def test_claim_kind_constants_are_consistent():
    assert set(OWNING_KINDS) <= set(CLAIM_KINDS)
    assert set(CLAIM_KINDS) - set(OWNING_KINDS) == {"replay_success", "in_progress", "final_failure"}
    assert len(set(CLAIM_KINDS)) == 6


def test_new_claim_creates_a_processing_row_with_lease_and_retention(db):
    before = db_now(db)
    result = claim(db, "k-new", claimed_by="worker-a", lock_seconds=120, retention=timedelta(hours=2))
    after = db_now(db)

    assert result == Claim("new_claim", 1, None, None, None, None, None)
    assert result.owns
    row = key_row(db, "k-new")
    assert row is not None
    assert row["status"] == "processing"
    assert row["attempt_count"] == 1
    assert row["claimed_by"] == "worker-a"
    assert row["request_hash"] == HASH
    assert before <= row["claimed_at"] <= after
    assert row["locked_until"] - row["claimed_at"] == timedelta(seconds=120)
    assert before + timedelta(seconds=120) <= row["locked_until"] <= after + timedelta(seconds=120)
    assert row["created_at"] == row["claimed_at"] == row["updated_at"]
    assert row["expires_at"] - row["created_at"] == timedelta(hours=2)
    for column in ("response_body", "result_ref_type", "result_ref_id", "failure_code", "failure_message"):
        assert row[column] is None, column
    assert count_keys(db) == 1

    # The same key in another scope is a separate claim, whatever its payload.
    assert claim(db, "k-new", scope="refunds", request_hash=OTHER_HASH).claim_kind == "new_claim"
    assert count_keys(db) == 2


def test_replay_success_returns_the_stored_result_and_changes_nothing(db):
    ref = uuid.uuid4()
    body = {"order_id": 42, "items": ["a", "b"], "note": "ünïcode"}
    first = claim(db, "k-done", claimed_by="worker-a")
    complete_key(db, TABLES, SCOPE, "k-done", "order", ref, body, attempt=first.attempt_count)

    done = key_row(db, "k-done")
    assert done["status"] == "succeeded"
    assert done["locked_until"] is None
    assert (done["result_ref_type"], done["result_ref_id"], done["response_body"]) == ("order", ref, body)

    replay = claim(db, "k-done", claimed_by="worker-b")
    assert replay == Claim("replay_success", 1, body, "order", ref, None, None)
    assert not replay.owns
    assert key_row(db, "k-done") == done


def test_in_progress_while_the_lease_is_live_changes_nothing(db):
    claim(db, "k-busy", claimed_by="worker-a", lock_seconds=300)
    before = key_row(db, "k-busy")

    second = claim(db, "k-busy", claimed_by="worker-b", lock_seconds=300)
    assert second == Claim("in_progress", 1, None, None, None, None, None)
    assert not second.owns
    assert key_row(db, "k-busy") == before


def test_stale_reclaim_after_the_lease_ran_out(db):
    claim(db, "k-stale", claimed_by="worker-a", lock_seconds=300)
    expire_lease(db, "k-stale")
    stale = key_row(db, "k-stale")

    before = db_now(db)
    result = claim(db, "k-stale", claimed_by="worker-b", lock_seconds=60)
    after = db_now(db)

    assert result.claim_kind == "stale_reclaim"
    assert result.owns
    assert result.attempt_count == 2
    row = key_row(db, "k-stale")
    assert row["status"] == "processing"
    assert row["attempt_count"] == 2
    assert row["claimed_by"] == "worker-b"
    assert before <= row["claimed_at"] <= after
    assert row["claimed_at"] > stale["claimed_at"]
    assert row["locked_until"] - row["claimed_at"] == timedelta(seconds=60)
    assert row["locked_until"] > after
    assert row["created_at"] == stale["created_at"]
    assert count_keys(db) == 1


def test_null_locked_until_falls_back_to_claimed_at_plus_lease(db):
    cases = [("10 minutes", 300, "stale_reclaim"), ("1 minute", 300, "in_progress"), ("2 minutes", 60, "stale_reclaim")]
    for n, (claimed_ago, lease, expected) in enumerate(cases):
        key = f"k-null-{n}"
        claim(db, key, claimed_by="worker-a")
        db.execute(
            "UPDATE app.idempotency_request SET locked_until = NULL, "
            "claimed_at = clock_timestamp() - %s::interval WHERE idempotency_key = %s",
            (claimed_ago, key),
        )
        before = key_row(db, key)

        result = claim(db, key, claimed_by="worker-b", lock_seconds=lease)

        assert result.claim_kind == expected, (claimed_ago, lease)
        row = key_row(db, key)
        if expected == "stale_reclaim":
            assert result.attempt_count == row["attempt_count"] == 2
            assert row["claimed_by"] == "worker-b"
            assert row["locked_until"] is not None
            assert row["locked_until"] - row["claimed_at"] == timedelta(seconds=lease)
        else:
            assert result.attempt_count == 1
            assert row == before


def test_retry_reclaim_from_failed_retryable(db):
    first = claim(db, "k-retry", claimed_by="worker-a")
    fail_key(db, TABLES, SCOPE, "k-retry", True, "timeout", "upstream timed out", attempt=first.attempt_count)
    failed = key_row(db, "k-retry")
    assert failed["status"] == "failed_retryable"
    assert failed["locked_until"] is None
    assert (failed["failure_code"], failed["failure_message"]) == ("timeout", "upstream timed out")

    result = claim(db, "k-retry", claimed_by="worker-b", lock_seconds=90)
    assert result.claim_kind == "retry_reclaim"
    assert result.owns
    assert result.attempt_count == 2
    assert (result.failure_code, result.failure_message) == (None, None)
    row = key_row(db, "k-retry")
    assert row["status"] == "processing"
    assert row["attempt_count"] == 2
    assert row["claimed_by"] == "worker-b"
    assert row["locked_until"] - row["claimed_at"] == timedelta(seconds=90)

    # The retry finishes: success clears the earlier failure.
    complete_key(db, TABLES, SCOPE, "k-retry", None, None, {"ok": True}, attempt=2)
    done = key_row(db, "k-retry")
    assert done["status"] == "succeeded"
    assert (done["failure_code"], done["failure_message"]) == (None, None)
    assert claim(db, "k-retry", claimed_by="worker-c").claim_kind == "replay_success"


def test_reclaim_extends_the_replay_horizon_but_never_shortens_it(db):
    claim(db, "k-short", retention=timedelta(hours=1))
    claim(db, "k-long", retention=timedelta(days=30))
    for key in ("k-short", "k-long"):
        expire_lease(db, key)
    long_before = key_row(db, "k-long")["expires_at"]

    claim(db, "k-short", claimed_by="worker-b", retention=timedelta(days=2))
    claim(db, "k-long", claimed_by="worker-b", retention=timedelta(days=2))

    short = key_row(db, "k-short")
    assert short["expires_at"] - short["claimed_at"] == timedelta(days=2)
    assert key_row(db, "k-long")["expires_at"] == long_before


def test_final_failure_returns_the_failure_and_changes_nothing(db):
    first = claim(db, "k-final", claimed_by="worker-a")
    fail_key(db, TABLES, SCOPE, "k-final", False, "card_declined", "the card was declined", attempt=first.attempt_count)
    failed = key_row(db, "k-final")
    assert failed["status"] == "failed_final"
    assert failed["locked_until"] is None

    result = claim(db, "k-final", claimed_by="worker-b")
    assert result == Claim("final_failure", 1, None, None, None, "card_declined", "the card was declined")
    assert not result.owns
    assert key_row(db, "k-final") == failed


# ---------------------------------------------------------------------------
# rejected calls


def _put_key_in_state(conn: psycopg.Connection, key: str, state: str) -> None:
    first = claim(conn, key, claimed_by="worker-a")
    if state == "processing_stale":
        expire_lease(conn, key)
    elif state == "succeeded":
        complete_key(conn, TABLES, SCOPE, key, "order", uuid.uuid4(), {"v": 1}, attempt=first.attempt_count)
    elif state in ("failed_retryable", "failed_final"):
        fail_key(conn, TABLES, SCOPE, key, state == "failed_retryable", "x", "y", attempt=first.attempt_count)
    else:
        assert state == "processing"


def test_payload_mismatch_is_rejected_and_changes_nothing(db):
    states = ["processing", "processing_stale", "succeeded", "failed_retryable", "failed_final"]
    for state in states:
        _put_key_in_state(db, state, state)
    before = {state: key_row(db, state) for state in states}

    for state in states:
        with pytest.raises(psycopg.Error) as caught:
            claim(db, state, claimed_by="worker-b", request_hash=OTHER_HASH)
        assert caught.value.sqlstate == PAYLOAD_MISMATCH == "P4002", state
        assert "different request payload" in caught.value.diag.message_primary

    assert {state: key_row(db, state) for state in states} == before
    assert count_keys(db) == len(states)


def test_claim_argument_validation(db):
    cases = [
        ("", "k", HASH, "P4000"),
        ("   ", "k", HASH, "P4000"),
        (None, "k", HASH, "P4000"),
        (SCOPE, "", HASH, "P4001"),
        (SCOPE, None, HASH, "P4001"),
        (SCOPE, "k", "", "P4003"),
        (SCOPE, "k", "  ", "P4003"),
        (SCOPE, "k", None, "P4003"),
    ]
    for scope, key, request_hash, sqlstate in cases:
        with pytest.raises(psycopg.Error) as caught:
            claim_key(db, TABLES, scope, key, request_hash, "worker-a")  # type: ignore[arg-type]
        assert caught.value.sqlstate == sqlstate, (scope, key, request_hash)
    assert count_keys(db) == 0


# ---------------------------------------------------------------------------
# fencing: a worker whose lease was taken over cannot overwrite the new owner


@pytest.fixture
def taken_over(db):
    """k-fenced: worker-a claimed it (attempt 1), its lease ran out, worker-b re-claimed it (attempt 2)."""
    old = claim(db, "k-fenced", claimed_by="worker-a")
    expire_lease(db, "k-fenced")
    new = claim(db, "k-fenced", claimed_by="worker-b")
    assert (old.attempt_count, new.claim_kind, new.attempt_count) == (1, "stale_reclaim", 2)
    return key_row(db, "k-fenced")


def test_stale_worker_cannot_complete(db, taken_over):
    with pytest.raises(psycopg.Error) as caught:
        complete_key(db, TABLES, SCOPE, "k-fenced", "order", uuid.uuid4(), {"from": "worker-a"}, attempt=1)
    assert caught.value.sqlstate == NOT_PROCESSING[0] == "P4010"
    assert key_row(db, "k-fenced") == taken_over

    # The new owner still completes, and a replay sees its result, not the stale worker's.
    complete_key(db, TABLES, SCOPE, "k-fenced", None, None, {"from": "worker-b"}, attempt=2)
    assert claim(db, "k-fenced", claimed_by="client").response_body == {"from": "worker-b"}


def test_stale_worker_cannot_fail(db, taken_over):
    for retryable in (True, False):
        with pytest.raises(psycopg.Error) as caught:
            fail_key(db, TABLES, SCOPE, "k-fenced", retryable, "boom", "stale worker", attempt=1)
        assert caught.value.sqlstate == NOT_PROCESSING[1] == "P4011"
    assert key_row(db, "k-fenced") == taken_over
    # A fencing token from the future is refused too.
    with pytest.raises(psycopg.Error) as caught:
        complete_key(db, TABLES, SCOPE, "k-fenced", None, None, {}, attempt=3)
    assert caught.value.sqlstate == "P4010"
    assert key_row(db, "k-fenced") == taken_over


def test_complete_and_fail_refuse_a_key_that_is_not_processing(db):
    first = claim(db, "k-twice")
    complete_key(db, TABLES, SCOPE, "k-twice", None, None, {"n": 1}, attempt=first.attempt_count)
    done = key_row(db, "k-twice")

    for attempt in (1, None):
        with pytest.raises(psycopg.Error) as caught:
            complete_key(db, TABLES, SCOPE, "k-twice", None, None, {"n": 2}, attempt=attempt)
        assert caught.value.sqlstate == "P4010"
        with pytest.raises(psycopg.Error) as caught:
            fail_key(db, TABLES, SCOPE, "k-twice", True, "late", "late failure", attempt=attempt)
        assert caught.value.sqlstate == "P4011"
    assert key_row(db, "k-twice") == done

    # A key nobody claimed.
    with pytest.raises(psycopg.Error) as caught:
        complete_key(db, TABLES, SCOPE, "nobody", None, None, {}, attempt=None)
    assert caught.value.sqlstate == "P4010"
    with pytest.raises(psycopg.Error) as caught:
        fail_key(db, TABLES, SCOPE, "nobody", False, "x", "y")
    assert caught.value.sqlstate == "P4011"
    assert count_keys(db) == 1

    # Without a fencing token the current owner still completes.
    claim(db, "k-unfenced")
    complete_key(db, TABLES, SCOPE, "k-unfenced", "thing", None, [1, 2, 3], attempt=None)
    row = key_row(db, "k-unfenced")
    assert row["status"] == "succeeded"
    assert row["response_body"] == [1, 2, 3]


# ---------------------------------------------------------------------------
# the inbox


def inbox_rows(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT consumer_name, message_id, message_hash, result_ref_type, result_ref_id "
        "FROM app.processed_message ORDER BY consumer_name, message_id"
    ).fetchall()


def test_consume_message_once(conn):
    ref = uuid.uuid4()
    assert consume_message(conn, TABLES, "billing", "m-1", "h1", "invoice", ref) == "processed"
    assert consume_message(conn, TABLES, "billing", "m-1", "h1") == "duplicate_ignored"
    assert consume_message(conn, TABLES, "billing", "m-1", "h1", "other", uuid.uuid4()) == "duplicate_ignored"
    # Another consumer handles the same message independently.
    assert consume_message(conn, TABLES, "shipping", "m-1", "h1") == "processed"
    expected = [("billing", "m-1", "h1", "invoice", ref), ("shipping", "m-1", "h1", None, None)]
    assert inbox_rows(conn) == expected

    # The same id with another payload is rejected and stores nothing.
    with pytest.raises(psycopg.Error) as caught:
        consume_message(conn, TABLES, "billing", "m-1", "h2")
    assert caught.value.sqlstate == MESSAGE_MISMATCH == "P4050"
    assert "different payload" in caught.value.diag.message_primary
    assert inbox_rows(conn) == expected


def test_concurrent_consumers_process_a_message_once(conn, database_url):
    conns = [psycopg.connect(database_url, autocommit=True) for _ in range(THREADS)]
    try:
        for n in range(3):
            message = f"race-{n}"
            results = race(conns, lambda i, c, message=message: consume_message(c, TABLES, "billing", message, "h"))
            no_errors(results)
            assert results.count("processed") == 1, results
            assert results.count("duplicate_ignored") == THREADS - 1
    finally:
        for c in conns:
            c.close()
    assert [row[1] for row in inbox_rows(conn)] == ["race-0", "race-1", "race-2"]


# ---------------------------------------------------------------------------
# races with real threads and real commits


def test_concurrent_claims_of_one_key_elect_exactly_one_owner(db, worker_conns):
    for n in range(5):
        key = f"race-{n}"
        results = race(worker_conns, lambda i, c, key=key: claim(c, key, claimed_by=f"worker-{i}"))
        no_errors(results)
        kinds = [r.claim_kind for r in results]
        assert kinds.count("new_claim") == 1, kinds
        assert kinds.count("in_progress") == THREADS - 1, kinds
        assert all(r.attempt_count == 1 for r in results)
        winner = kinds.index("new_claim")
        row = key_row(db, key)
        assert row["claimed_by"] == f"worker-{winner}"
        assert row["attempt_count"] == 1
        assert row["status"] == "processing"
    assert count_keys(db) == 5


def test_concurrent_reclaims_take_over_exactly_once(db, worker_conns):
    for n, how in enumerate(["lease_expired", "failed_retryable"] * 2):
        expected_kind = "stale_reclaim" if how == "lease_expired" else "retry_reclaim"
        key = f"again-{n}"
        first = claim(db, key, claimed_by="worker-dead")
        if how == "lease_expired":
            expire_lease(db, key)
        else:
            fail_key(db, TABLES, SCOPE, key, True, "timeout", "retry me", attempt=first.attempt_count)

        results = race(worker_conns, lambda i, c, key=key: claim(c, key, claimed_by=f"worker-{i}"))
        no_errors(results)
        kinds = [r.claim_kind for r in results]
        assert kinds.count(expected_kind) == 1, kinds
        assert kinds.count("in_progress") == THREADS - 1, kinds
        assert all(r.attempt_count == 2 for r in results), [r.attempt_count for r in results]
        row = key_row(db, key)
        assert row["attempt_count"] == 2
        assert row["claimed_by"] == f"worker-{kinds.index(expected_kind)}"
        assert row["status"] == "processing"


def test_late_complete_racing_a_stale_reclaim_has_one_consistent_winner(db, app_db):
    outcomes = set()
    with psycopg.connect(app_db, autocommit=True) as a, psycopg.connect(app_db, autocommit=True) as b:
        for n in range(8):
            key = f"late-{n}"
            claim(db, key, claimed_by="worker-slow")
            expire_lease(db, key)

            def work(i, c, key=key):
                if i == 0:
                    complete_key(c, TABLES, SCOPE, key, None, None, {"by": "worker-slow"}, attempt=1)
                    return "completed"
                return claim(c, key, claimed_by="worker-new").claim_kind

            completed, claimed = race([a, b], work)
            row = key_row(db, key)
            if completed == "completed":
                # The slow worker got there first: the retry replays its result.
                assert claimed == "replay_success"
                assert row["status"] == "succeeded"
                assert row["response_body"] == {"by": "worker-slow"}
                assert row["attempt_count"] == 1
            else:
                # The re-claim got there first: the slow worker is fenced off.
                assert isinstance(completed, psycopg.Error) and completed.sqlstate == "P4010", completed
                assert claimed == "stale_reclaim"
                assert row["status"] == "processing"
                assert row["claimed_by"] == "worker-new"
                assert row["attempt_count"] == 2
            outcomes.add(claimed)
    assert outcomes <= {"replay_success", "stale_reclaim"}


def _pause_after_insert(conn: psycopg.Connection, table: str, lock_key: int) -> None:
    """Test instrumentation: every INSERT statement on ``table`` (also one that inserts nothing, ON CONFLICT DO
    NOTHING) then waits for advisory lock ``lock_key``, which the test holds: the gap between a reference
    function's INSERT and its re-read, held open for as long as the test needs."""
    conn.execute(
        sql.SQL("""
        CREATE FUNCTION app.test_pause_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock({lock});
            RETURN NULL;
        END $$""").format(lock=sql.Literal(lock_key))
    )
    conn.execute(
        sql.SQL(
            "CREATE TRIGGER test_pause_after_insert AFTER INSERT ON {} FOR EACH STATEMENT "
            "EXECUTE FUNCTION app.test_pause_after_insert()"
        ).format(sql.Identifier("app", table))
    )


def _waiting_on_advisory_lock(conn: psycopg.Connection, lock_key: int) -> bool:
    return (
        conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s", (lock_key,)
        ).fetchone()[0]
        > 0
    )


def _in_the_gap(
    app_db: str, lock_key: int, call: Callable[[psycopg.Connection], Any], purge: Callable[[psycopg.Connection], None]
) -> Any:
    """Run ``call`` in a thread; once its INSERT has collided and it waits in the gap, ``purge`` deletes the row
    it collided with and commits; then let the call go on. Returns what the call returned or raised."""

    result: list[Any] = []
    with psycopg.connect(app_db, autocommit=True) as holder, psycopg.connect(app_db, autocommit=True) as worker:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_key,))
        thread = threading.Thread(target=lambda: result.append(_call(call, worker)))
        thread.start()
        wait_until(
            lambda: _waiting_on_advisory_lock(holder, lock_key),
            timeout=10,
            what="the call to wait in the gap after its INSERT",
        )
        purge(holder)  # autocommit: deleted and committed while the call waits
        holder.execute("SELECT pg_advisory_unlock(%s)", (lock_key,))
        thread.join(10)
        assert not thread.is_alive(), "the call hung after the purge"
    return result[0]


def _call(call: Callable[[psycopg.Connection], Any], conn: psycopg.Connection) -> Any:
    try:
        return call(conn)
    except BaseException as exc:  # returned to the test, which asserts on it
        return exc


def test_a_claim_racing_a_purge_claims_the_key_afresh(db, app_db):
    """The expired row the INSERT collided with is purged before the locked re-read: a new claim, not P0002."""
    old = claim(db, "purged-meanwhile", claimed_by="worker-old")
    complete_key(db, TABLES, SCOPE, "purged-meanwhile", "order", None, {"old": True}, old.attempt_count)
    db.execute(
        "UPDATE app.idempotency_request SET expires_at = created_at + interval '1 microsecond' "
        "WHERE idempotency_key = 'purged-meanwhile'"
    )
    _pause_after_insert(db, "idempotency_request", 7001)

    result = _in_the_gap(
        app_db,
        7001,
        lambda c: claim(c, "purged-meanwhile", claimed_by="worker-new"),
        lambda c: c.execute(
            "DELETE FROM app.idempotency_request WHERE idempotency_key = 'purged-meanwhile' AND expires_at < now()"
        ),
    )

    assert isinstance(result, Claim), f"the claim raised instead of claiming afresh: {result!r}"
    assert result.claim_kind == "new_claim" and result.attempt_count == 1
    row = key_row(db, "purged-meanwhile")
    assert row["status"] == "processing" and row["claimed_by"] == "worker-new" and row["response_body"] is None


def test_a_redelivery_racing_an_inbox_purge_is_processed_not_an_error(db, app_db):
    assert consume_message(db, TABLES, "billing", "m-old", "h1") == "processed"
    _pause_after_insert(db, "processed_message", 7002)

    result = _in_the_gap(
        app_db,
        7002,
        lambda c: consume_message(c, TABLES, "billing", "m-old", "h1"),
        lambda c: c.execute("DELETE FROM app.processed_message WHERE message_id = 'm-old'"),
    )

    assert result == "processed", f"expected the message to be recorded afresh, got {result!r}"
    assert [r[1] for r in inbox_rows(db)] == ["m-old"]


# ---------------------------------------------------------------------------
# create_app_schema


def column_types(conn: psycopg.Connection, schema: str, table: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT column_name, data_type, udt_name FROM information_schema.columns "
        "WHERE table_schema = %s AND table_name = %s",
        (schema, table),
    ).fetchall()
    return {name: (udt if data_type == "USER-DEFINED" else data_type) for name, data_type, udt in rows}


def test_create_app_schema_is_safe_to_rerun_and_keeps_data(db, status_type):
    ref = uuid.uuid4()
    claim(db, "k-kept")
    complete_key(db, TABLES, SCOPE, "k-kept", "order", ref, {"kept": True}, attempt=1)
    claim(db, "k-busy")
    consume_message(db, TABLES, "billing", "m-kept", "h")
    db.execute(
        "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope, "
        "idempotency_key, payload) VALUES ('order.created', 'order', %s, %s, 'k-kept', '{}')",
        (ref, SCOPE),
    )
    keys_before = [key_row(db, "k-kept"), key_row(db, "k-busy")]
    types_before = column_types(db, "app", "idempotency_request")
    assert types_before["status"] == ("idempotency_status" if status_type == "enum" else "text")
    assert types_before["response_body"] == "jsonb"
    assert types_before["result_ref_id"] == "uuid"

    create_app_schema(db, TABLES, status_type)
    create_app_schema(db, TABLES, status_type)

    assert [key_row(db, "k-kept"), key_row(db, "k-busy")] == keys_before
    assert column_types(db, "app", "idempotency_request") == types_before
    assert inbox_rows(db) == [("billing", "m-kept", "h", None, None)]
    assert db.execute("SELECT count(*) FROM app.outbox_event").fetchone()[0] == 1
    # The replaced functions still see the same rows.
    assert claim(db, "k-kept", claimed_by="w2") == Claim("replay_success", 1, {"kept": True}, "order", ref, None, None)
    assert claim(db, "k-busy", claimed_by="w2").claim_kind == "in_progress"
    assert consume_message(db, TABLES, "billing", "m-kept", "h") == "duplicate_ignored"


def test_create_app_schema_rejects_an_unknown_status_type(empty_database_url):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        with pytest.raises(ValueError, match="status_type"):
            create_app_schema(conn, TABLES, "varchar")  # type: ignore[arg-type]
        assert (
            conn.execute("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'app'").fetchone()[0]
            == 0
        )


ODD = Tables(schema="Ops Schema", keys='Idem"Keys', inbox="inbox tbl", outbox="out box")


def test_reference_schema_with_odd_names(empty_database_url, status_type):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        create_app_schema(conn, ODD, status_type)
        create_app_schema(conn, ODD, status_type)  # and again: still fine

        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
            "ORDER BY table_name"
        ).fetchall()
        assert tables == [("Ops Schema", 'Idem"Keys'), ("Ops Schema", "inbox tbl"), ("Ops Schema", "out box")]
        assert column_types(conn, "Ops Schema", 'Idem"Keys')["status"] == (
            "idempotency_status" if status_type == "enum" else "text"
        )

        ref = uuid.uuid4()
        first = claim_key(conn, ODD, "Scope", "Key 'with' \"quotes\"", HASH, "w1")
        assert first.claim_kind == "new_claim"
        assert claim_key(conn, ODD, "Scope", "Key 'with' \"quotes\"", HASH, "w2").claim_kind == "in_progress"
        complete_key(conn, ODD, "Scope", "Key 'with' \"quotes\"", "order", ref, {"ok": 1}, attempt=1)
        assert claim_key(conn, ODD, "Scope", "Key 'with' \"quotes\"", HASH, "w3") == Claim(
            "replay_success", 1, {"ok": 1}, "order", ref, None, None
        )

        claim_key(conn, ODD, "Scope", "k2", HASH, "w1")
        fail_key(conn, ODD, "Scope", "k2", True, "t", "m", attempt=1)
        assert claim_key(conn, ODD, "Scope", "k2", HASH, "w2").claim_kind == "retry_reclaim"
        with pytest.raises(psycopg.Error) as caught:
            complete_key(conn, ODD, "Scope", "k2", None, None, {}, attempt=1)
        assert caught.value.sqlstate == "P4010"

        assert consume_message(conn, ODD, "c", "m", "h") == "processed"
        assert consume_message(conn, ODD, "c", "m", "h") == "duplicate_ignored"
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (event_type, aggregate_type, aggregate_id, idempotency_scope, "
                "idempotency_key, payload) VALUES ('e', 'a', %s, 'Scope', 'k2', '{{}}')"
            ).format(sql.Identifier(ODD.schema, ODD.outbox)),
            (ref,),
        )
        assert key_row(conn, "k2", scope="Scope", tables=ODD)["attempt_count"] == 2
        assert count_keys(conn, ODD) == 2


def test_a_percent_sign_in_a_configured_name_is_refused_up_front():
    # psycopg would read it as a placeholder in every statement with parameters
    for fields in ({"schema": "ops%data"}, {"keys": "k%(key)s"}, {"outbox": ""}):
        with pytest.raises(ValueError, match="contain no '%'"):
            Tables(**fields)
