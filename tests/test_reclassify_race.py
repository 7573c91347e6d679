"""Workers finishing keys while operators reclassify the same keys, with real threads and commits.

For every key exactly one side wins: either the worker's completion (and the
operator gets 409) or the operator's reclassification (and the worker's
fenced completion is refused). A completed key is never overwritten.
"""

from __future__ import annotations

import random
import threading
import time

import psycopg
import pytest

from idemdash.queries import Tables
from idemdash.queries.app_schema import NOT_PROCESSING, claim_key, complete_key

T = Tables()
KEYS_PER_ROUND = 24


def _worker(database_url: str, key: str, delay: float, barrier: threading.Barrier, results: dict) -> None:
    with psycopg.connect(database_url) as conn:
        barrier.wait()
        time.sleep(delay)
        try:
            with conn.transaction():
                # the late worker finally finishes: business effect and completion in one transaction
                complete_key(conn, T, "race", key, "order", None, {"by": "worker", "key": key}, attempt=1)
            results[key] = "completed"
        except psycopg.Error as exc:
            assert exc.sqlstate in NOT_PROCESSING, exc
            results[key] = "refused"


def _operator(client, key: str, to: str, delay: float, barrier: threading.Barrier, results: dict) -> None:
    body = {"scope": "race", "key": key, "to": to, "reason": "race test", "expected_attempt_count": 1}
    if to == "already_succeeded":
        body["response_body"] = {"by": "operator"}
    barrier.wait()
    time.sleep(delay)
    response = client.post("/api/v1/keys/reclassify", json=body)
    results[key] = (response.status_code, response.get_json())


@pytest.mark.system  # about a second or more: the fast loop keeps within its minute
@pytest.mark.parametrize("round_", range(6))
def test_a_worker_result_is_never_overwritten(make_app, conn, database_url, round_):
    rng = random.Random(round_)
    keys = [f"r{round_}-{i}" for i in range(KEYS_PER_ROUND)]
    for key in keys:
        claim_key(conn, T, "race", key, "h", "api-1", lock_seconds=0)  # stuck: the worker is presumed dead
    app = make_app(POOL_MAX_SIZE=KEYS_PER_ROUND)
    workers: dict = {}
    operators: dict = {}
    targets = {key: rng.choice(["safe_to_retry", "abandoned", "already_succeeded"]) for key in keys}
    threads = []
    for i, key in enumerate(keys):
        # a third where the worker comes first, a third where the operator does, a third a coin toss
        worker_delay, operator_delay = [(0.0, 0.4), (0.4, 0.0), (rng.uniform(0, 0.08), 0.0)][i % 3]
        barrier = threading.Barrier(2)
        threads.append(threading.Thread(target=_worker, args=(database_url, key, worker_delay, barrier, workers)))
        threads.append(
            threading.Thread(
                target=_operator, args=(app.test_client(), key, targets[key], operator_delay, barrier, operators)
            )
        )
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)

    expected_status = {
        "safe_to_retry": "failed_retryable",
        "abandoned": "failed_final",
        "already_succeeded": "succeeded",
    }
    audited = {r[0] for r in conn.execute("SELECT key FROM idemdash.audit_log WHERE scope = 'race'")}
    outcomes = {"worker": 0, "operator": 0}
    for key in keys:
        status, body = operators[key]
        final = conn.execute(
            "SELECT status::text, response_body FROM app.idempotency_request "
            "WHERE idempotency_scope = 'race' AND idempotency_key = %s",
            (key,),
        ).fetchone()
        assert status in (200, 409), body  # never a 5xx, never a wait past the timeout
        if workers[key] == "completed":
            # the worker won: its result stands and the operator was told no
            assert status == 409, (key, body)
            assert final == ("succeeded", {"by": "worker", "key": key})
            assert key not in audited
            outcomes["worker"] += 1
        else:
            # the operator won while the key was still stuck; the worker's fenced completion was refused
            assert status == 200, (key, body)
            assert final[0] == expected_status[targets[key]]
            assert key in audited
            outcomes["operator"] += 1
    assert sum(outcomes.values()) == KEYS_PER_ROUND
    # the staggered thirds make sure both sides win somewhere in every round
    assert outcomes["worker"] > 0 and outcomes["operator"] > 0, outcomes
