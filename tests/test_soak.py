"""The product's promises under load, all at once: nothing runs twice, nothing is lost, nothing live is purged.

Real threads and real commits for about ten seconds against one database (IDEMDASH_SOAK_SECONDS, default 10;
the run goes on, up to three times as long, until every kind of event below has happened):

- clients send intents through the reference functions and retry them until they get an answer; a worker that
  owns a claim records the business effect in the test's own table, in the same transaction as completing the
  key (scopes ``orders`` and ``emails``), or (scope ``payments``, a legacy application) commits the effect and
  an outbox row first and completes afterwards; workers crash between the two, crash before the effect, finish
  late after their lease ran out, or fail retryably or for good; clients also re-send finished intents while
  the key's retention still covers them;
- an operator follows the dashboard's suggestions key by key through the JSON API (already_succeeded when the
  outbox shows the effect committed, needs_review for hotspots, safe_to_retry or abandoned otherwise), and
  later decides the keys held for review;
- another operator runs filtered bulk actions (preview, then confirm what the preview showed);
- a purge loop deletes expired keys in small batches with a short retention, and inbox rows while consumers
  receive redeliveries of them.

Afterwards, over the whole history: no intent's effect recorded twice; no worker's completed result overwritten;
every purged row was terminal and expired, and none was decided on by an operator within the replay horizon;
every bulk action changed only keys matching its filter; the reference functions raised nothing but their
fencing errors. The seed is printed with every failure (IDEMDASH_SOAK_SEED reruns it). IDEMDASH_SOAK_SECONDS=60
runs it longer (before a release, say): the number of times each kind of event must happen grows with the time.
"""

from __future__ import annotations

import os
import random
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from idemdash.dashboard.targets import app_settings
from idemdash.jobs.purge_run import run_purge
from idemdash.queries import Tables
from idemdash.queries.app_schema import NOT_PROCESSING, OWNING_KINDS, claim_key, complete_key, consume_message, fail_key
from idemdash.queries.target import Target

pytestmark = pytest.mark.system  # see docs/development.md, Tests

T = Tables()
SEED = int(os.environ.get("IDEMDASH_SOAK_SEED", "20261123"))
SECONDS = float(os.environ.get("IDEMDASH_SOAK_SECONDS", "10"))
PER_30_SECONDS = SECONDS / 30  # the counts below are what 30 s of this workload at least produce
CLIENTS = 6
# expires_at = claim + 4 s: purges have work all the time, yet a key outlives its slowest worker (lease + 0.4 s)
# and the client's next attempt: a retention shorter than the work would let a purge run an intent twice
RETENTION = timedelta(seconds=4)
HORIZON_SECONDS = 8  # IDEMDASH_REPLAY_HORIZON of the app under test
LEASE = {"orders": 1, "emails": 1, "payments": 2}
LEGACY = "payments"  # effect committed first, completion afterwards
RESEND_MARGIN = 0.7  # a client re-sends a finished intent only this long before its key expires

SCHEMA = """
CREATE SCHEMA soak;
CREATE TABLE soak.effect (scope text, key text, attempt int, worker text, at timestamptz DEFAULT clock_timestamp());
CREATE TABLE soak.completion (scope text, key text, attempt int, body jsonb);
CREATE TABLE soak.deleted (scope text, key text, status text, expires_at timestamptz, response_body jsonb,
                           deleted_at timestamptz);
CREATE FUNCTION soak.log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO soak.deleted VALUES (OLD.idempotency_scope, OLD.idempotency_key, OLD.status::text, OLD.expires_at,
                                     OLD.response_body, now());
    RETURN OLD;
END $$;
CREATE TRIGGER soak_log_delete AFTER DELETE ON app.idempotency_request
    FOR EACH ROW EXECUTE FUNCTION soak.log_delete();
-- inbox rows are born past the retention, so the inbox purge races every redelivery
CREATE FUNCTION soak.backdate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.processed_at := now() - interval '40 days';
    RETURN NEW;
END $$;
CREATE TRIGGER soak_backdate BEFORE INSERT ON app.processed_message
    FOR EACH ROW EXECUTE FUNCTION soak.backdate();
"""


@dataclass
class Intent:
    scope: str
    key: str
    request_hash: str
    done: bool = False
    parked: bool = False  # legacy effect committed, completion lost: the client waits for an operator
    due: float = 0.0  # monotonic time of the next attempt
    covered_until: float = 0.0  # the key's retention covers a re-send until about then (monotonic)


@dataclass
class Run:
    database_url: str
    app: object
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)
    fenced: int = 0
    claims: dict[str, int] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=dict)
    consumed: dict[str, int] = field(default_factory=dict)
    bulk_runs: int = 0
    purged: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, table: dict[str, int], name: str) -> None:
        with self.lock:
            table[name] = table.get(name, 0) + 1


def _guard(run: Run, name: str, body) -> threading.Thread:
    def target():
        try:
            body()
        except BaseException:  # reported by the test, with the seed
            run.errors.append(f"{name}: {traceback.format_exc()}")
            run.stop.set()

    return threading.Thread(target=target, name=name, daemon=True)


# -- clients and their workers ---------------------------------------------------------------------------------


def _client(run: Run, index: int) -> None:
    rng = random.Random(SEED * 100 + index)
    worker = f"api-{index}"
    intents: list[Intent] = []
    with psycopg.connect(run.database_url, autocommit=True) as conn:
        while not run.stop.is_set():
            now = time.monotonic()
            open_ = [i for i in intents if not i.done]
            resendable = [i for i in intents if i.done and now < i.covered_until - RESEND_MARGIN]
            # an intent whose retry is due goes first: a client retries within the replay horizon (the product's
            # contract); one that let a parked intent wait behind new ones would ask again after an operator's
            # decision had been purged, and rightly run its intent a second time
            due = [i for i in open_ if i.due <= now]
            if resendable and rng.random() < 0.15:
                _resend(run, conn, rng.choice(resendable), worker)
            elif due:
                _attempt(run, conn, rng, rng.choice(due), worker)
            elif len(open_) < 3:
                scope = rng.choice(("orders", "emails", LEGACY))
                intent = Intent(scope, f"{scope}-{index}-{len(intents)}", f"h-{rng.random():.6f}")
                intents.append(intent)
                _attempt(run, conn, rng, intent, worker)
            time.sleep(rng.uniform(0.005, 0.03))


def _claim(run: Run, conn, intent: Intent, worker: str):
    started = time.monotonic()
    claim = claim_key(
        conn,
        T,
        intent.scope,
        intent.key,
        intent.request_hash,
        worker,
        lock_seconds=LEASE[intent.scope],
        retention=RETENTION,
    )
    run.count(run.claims, claim.claim_kind)
    if claim.owns:  # a claim that takes the key sets expires_at to at least now + retention
        intent.covered_until = max(intent.covered_until, started + RETENTION.total_seconds())
    return claim


def _attempt(run: Run, conn, rng: random.Random, intent: Intent, worker: str) -> None:
    if intent.parked and (_status(conn, intent) or ("",))[0] == "processing":
        intent.due = time.monotonic() + 0.3  # still waiting for an operator's decision (or held for review)
        return
    claim = _claim(run, conn, intent, worker)
    kind = claim.claim_kind
    if kind in ("replay_success", "final_failure"):
        intent.done, intent.parked = True, False
    elif kind == "in_progress":
        intent.due = time.monotonic() + rng.uniform(0.2, 1.0)
    else:
        assert kind in OWNING_KINDS, kind
        intent.parked = False
        _work(run, conn, rng, intent, worker, claim.attempt_count)


def _resend(run: Run, conn, intent: Intent, worker: str) -> None:
    """The same request again (a lost response, a user clicking twice): the key must still answer it."""
    claim = _claim(run, conn, intent, worker)
    if claim.claim_kind not in ("replay_success", "final_failure", "in_progress"):
        run.errors.append(
            f"a re-sent finished intent {intent.scope}/{intent.key} got {claim.claim_kind}: "
            "its key was gone while its retention still covered the re-send"
        )


def _work(run: Run, conn, rng: random.Random, intent: Intent, worker: str, attempt: int) -> None:
    roll = rng.random()
    retry_soon = time.monotonic() + rng.uniform(0.3, 1.5)
    if roll < 0.08:  # crashed before doing anything: the key is stuck until its lease runs out
        intent.due = retry_soon + LEASE[intent.scope]
        return
    if roll < 0.15:
        _fenced(run, lambda: fail_key(conn, T, intent.scope, intent.key, True, "timeout", "upstream", attempt))
        intent.due = retry_soon
        return
    if roll < 0.18:
        if _fenced(run, lambda: fail_key(conn, T, intent.scope, intent.key, False, "declined", "no", attempt)):
            intent.due = retry_soon
        else:
            intent.done = True  # the client got the final failure
        return
    if roll < 0.26:  # a slow worker: finishes after its lease ran out (a retry or an operator may win)
        time.sleep(LEASE[intent.scope] + rng.uniform(0.05, 0.4))
    body = {"worker": worker, "attempt": attempt, "n": rng.randrange(10**6)}
    if intent.scope == LEGACY:
        _legacy_work(run, conn, rng, intent, worker, attempt, body)
        return
    try:
        with conn.transaction():  # the business effect and the completion commit together
            _effect(conn, intent, attempt, worker)
            complete_key(conn, T, intent.scope, intent.key, "order", None, body, attempt)
            conn.execute(
                "INSERT INTO soak.completion VALUES (%s, %s, %s, %s)", (intent.scope, intent.key, attempt, Jsonb(body))
            )
        intent.done = True  # the worker answered the client
    except psycopg.Error as exc:
        if exc.sqlstate not in NOT_PROCESSING:
            raise
        with run.lock:
            run.fenced += 1
        intent.due = time.monotonic()  # the key moved on under this worker: the client asks again


def _legacy_work(run: Run, conn, rng, intent: Intent, worker: str, attempt: int, body: dict) -> None:
    """A legacy application: the effect and its outbox row commit first, the completion afterwards."""
    with conn.transaction():
        # the application guards itself: still processing under this attempt (locked), or nothing is done
        row = conn.execute(
            "SELECT 1 FROM app.idempotency_request WHERE idempotency_scope = %s AND "
            "idempotency_key = %s AND status = 'processing' AND attempt_count = %s FOR UPDATE",
            (intent.scope, intent.key, attempt),
        ).fetchone()
        if row is None:
            intent.due = time.monotonic()
            return
        _effect(conn, intent, attempt, worker)
        conn.execute(
            "INSERT INTO app.outbox_event (event_type, aggregate_type, aggregate_id, idempotency_scope, "
            "idempotency_key, payload) VALUES ('payment_taken', 'payment', %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",  # a second effect shows in soak.effect, checked at the end
            (uuid.uuid4(), intent.scope, intent.key, Jsonb(body)),
        )
    if rng.random() < 0.25:  # crashed between the effect and the completion: an operator must decide
        intent.parked = True
        intent.due = time.monotonic() + 0.3
        return
    try:
        with conn.transaction():
            complete_key(conn, T, intent.scope, intent.key, "payment", None, body, attempt)
            conn.execute(
                "INSERT INTO soak.completion VALUES (%s, %s, %s, %s)", (intent.scope, intent.key, attempt, Jsonb(body))
            )
        intent.done = True
    except psycopg.Error as exc:
        if exc.sqlstate not in NOT_PROCESSING:
            raise
        # an operator decided while this worker was finishing: the effect stands, the client asks again later
        with run.lock:
            run.fenced += 1
        intent.parked = True
        intent.due = time.monotonic() + 0.3


def _effect(conn, intent: Intent, attempt: int, worker: str) -> None:
    conn.execute(
        "INSERT INTO soak.effect (scope, key, attempt, worker) VALUES (%s, %s, %s, %s)",
        (intent.scope, intent.key, attempt, worker),
    )


def _fenced(run: Run, call) -> bool:
    """Call a fenced completion; True when the fence refused it (the key moved on under this worker)."""
    try:
        call()
        return False
    except psycopg.Error as exc:
        if exc.sqlstate not in NOT_PROCESSING:
            raise
        with run.lock:
            run.fenced += 1
        return True


def _status(conn, intent: Intent) -> tuple[str, bool] | None:
    row = conn.execute(
        "SELECT status::text, claimed_by = 'idemdash:needs_review' FROM app.idempotency_request "
        "WHERE idempotency_scope = %s AND idempotency_key = %s",
        (intent.scope, intent.key),
    ).fetchone()
    return None if row is None else (row[0], bool(row[1]))


def _consumer(run: Run, index: int) -> None:
    """Redeliveries of a few messages while the inbox purge deletes their rows: never an error."""
    rng = random.Random(SEED * 100 + 50 + index)
    with psycopg.connect(run.database_url, autocommit=True) as conn:
        while not run.stop.is_set():
            message = f"m-{rng.randrange(20)}"
            outcome = consume_message(conn, T, f"consumer-{index}", message, f"hash-{message}")
            run.count(run.consumed, outcome)
            time.sleep(rng.uniform(0.01, 0.04))


# -- operators -------------------------------------------------------------------------------------------------


def _operator(run: Run) -> None:
    rng = random.Random(SEED * 100 + 99)
    client = run.app.test_client()
    while not run.stop.is_set():
        time.sleep(rng.uniform(0.05, 0.25))
        status = "needs_review" if rng.random() < 0.2 else "stuck"
        overdue = rng.choice(["", "", "1s", "3s"])
        # an empty value is a 400 in the API: a script leaves a filter out instead
        query = f"status={status}&limit=30" + (f"&overdue={overdue}" if overdue else "")
        items = _ok(client.get(f"/api/v1/keys?{query}"), run)["items"]
        if not items:
            continue
        item = rng.choice(items)
        detail = _ok(client.get(f"/api/v1/key?scope={item['scope']}&key={item['key']}"), run, also=(404,))
        if detail is None:
            continue
        evidence = detail["outbox_events"]
        to = detail["suggestion"]["to"] or "abandoned"
        if status == "needs_review" or (to == "needs_review" and rng.random() < 0.5):
            to = "already_succeeded" if evidence else "abandoned"
        if to == "safe_to_retry" and rng.random() < 0.3:
            to = "abandoned"
        body = {
            "scope": item["scope"],
            "key": item["key"],
            "to": to,
            "reason": f"soak {to}",
            "expected_attempt_count": item["attempt_count"],
            "expected_locked_until": item["locked_until"],
        }
        if to == "already_succeeded":
            body |= {
                "result_ref_type": "payment",
                "result_ref_id": evidence[0]["aggregate_id"],
                "response_body": {"by": "operator", "outbox_id": evidence[0]["outbox_id"]},
            }
        if to == "needs_review":
            body["hold_for"] = "60s"
        response = client.post("/api/v1/keys/reclassify", json=body)
        if response.status_code == 200:
            run.count(run.decisions, to)
        elif response.status_code != 409:  # 409: a worker, a retry or the other operator got there first
            run.errors.append(f"reclassify {body} answered {response.status_code}: {response.get_json()}")


def _bulk_operator(run: Run) -> None:
    rng = random.Random(SEED * 100 + 98)
    client = run.app.test_client()
    while not run.stop.is_set():
        time.sleep(rng.uniform(0.3, 0.9))
        scope = rng.choice(("orders", "emails", LEGACY))
        # retrying a legacy payment whose effect may have committed would charge twice: abandon those
        to = "abandoned" if scope == LEGACY else rng.choice(("safe_to_retry", "abandoned"))
        flt = {"scope": scope}
        if rng.random() < 0.4:
            flt["claimed_by"] = f"api-{rng.randrange(CLIENTS)}"
        if rng.random() < 0.3:
            flt["min_attempts"] = 2
        if rng.random() < 0.3:
            flt["overdue"] = "1s"
        preview = _ok(client.post("/api/v1/keys/reclassify-bulk", json={"filter": flt, "to": to, "preview": True}), run)
        if preview["count"] == 0:
            continue
        _ok(
            client.post(
                "/api/v1/keys/reclassify-bulk",
                json={"filter": flt, "to": to, "reason": f"soak bulk {flt}", "as_of": preview["as_of"]},
            ),
            run,
        )
        with run.lock:
            run.bulk_runs += 1


def _purger(run: Run) -> None:
    config = replace(app_settings(run.app), purge_batch_size=25, purge_pause_ms=2)
    while not run.stop.is_set():
        for table in ("keys", "inbox"):
            result = run_purge(Target.from_settings(config), table, dry_run=False, started_by="scheduler")
            if result.outcome not in ("succeeded", "skipped"):
                run.errors.append(f"purge run {result.run_id}: {result.outcome}: {result.error}")
            if table == "keys":
                with run.lock:
                    run.purged += result.rows
        time.sleep(0.02)


def _ok(response, run: Run, also: tuple[int, ...] = ()):
    if response.status_code in also:
        return None
    if response.status_code != 200:
        run.errors.append(
            f"{response.request.method} {response.request.path} answered {response.status_code}: "
            f"{response.get_data(as_text=True)[:300]}"
        )
        run.stop.set()
        raise AssertionError("an operator's request failed")
    return response.get_json()


def _history(conn, scope: str, key: str) -> str:
    """Everything the run recorded about one key, for a failure message."""
    parts = []
    for title, query in (
        ("effects", "SELECT attempt, worker, at FROM soak.effect WHERE scope = %(s)s AND key = %(k)s ORDER BY at"),
        ("completions", "SELECT attempt, body FROM soak.completion WHERE scope = %(s)s AND key = %(k)s"),
        (
            "decisions",
            "SELECT at, action, from_status, to_status, detail FROM idemdash.audit_log "
            "WHERE scope = %(s)s AND key = %(k)s ORDER BY at",
        ),
        ("purged", "SELECT status, expires_at, deleted_at FROM soak.deleted WHERE scope = %(s)s AND key = %(k)s"),
        (
            "now",
            "SELECT status::text, attempt_count, claimed_by, claimed_at, locked_until, expires_at, updated_at "
            "FROM app.idempotency_request WHERE idempotency_scope = %(s)s AND idempotency_key = %(k)s",
        ),
    ):
        parts.append(f"{title}: {conn.execute(query, {'s': scope, 'k': key}).fetchall()}")
    return "\n".join(parts)


# -- the test --------------------------------------------------------------------------------------------------


def _missing_events(run: Run) -> list[str]:
    """The kinds of event that have not yet happened as often as the run's length asks, with their counts."""
    kinds, consumed = dict(run.claims), dict(run.consumed)
    wanted = [
        ("new_claim", kinds.get("new_claim", 0), 300),
        ("replay_success", kinds.get("replay_success", 0), 50),
        ("stale_reclaim", kinds.get("stale_reclaim", 0), 5),
        ("retry_reclaim", kinds.get("retry_reclaim", 0), 5),
        ("purged", run.purged, 100),
        ("bulk_runs", run.bulk_runs, 2),
        # redeliveries raced the inbox purge: some found their row, some were recorded afresh, none raised
        ("duplicate_ignored", consumed.get("duplicate_ignored", 0), 10),
        ("processed", consumed.get("processed", 0), 100),
    ]
    missing = [
        f"{name}: {count} (wanted > {floor * PER_30_SECONDS:g})"
        for name, count, floor in wanted
        if not count > floor * PER_30_SECONDS
    ]
    if not run.fenced > 0:
        missing.append("fenced: 0 (a slow worker's completion refused)")
    decided = set(run.decisions)
    if not {"safe_to_retry", "abandoned", "already_succeeded"} <= decided:
        missing.append(f"decisions: {sorted(decided)}")
    return missing


@pytest.fixture
def soak_db(conn, database_url):
    conn.execute(SCHEMA)
    return database_url


def test_the_promises_hold_under_concurrent_clients_operators_and_purges(soak_db, make_app, conn):
    seed = f"(seed {SEED}: rerun with IDEMDASH_SOAK_SEED={SEED})"
    app = make_app(REPLAY_HORIZON=HORIZON_SECONDS, DEFAULT_LEASE_SECONDS=1, POOL_MAX_SIZE=4)
    run = Run(soak_db, app)
    threads = [_guard(run, f"client-{i}", lambda i=i: _client(run, i)) for i in range(CLIENTS)]
    threads += [_guard(run, f"consumer-{i}", lambda i=i: _consumer(run, i)) for i in range(2)]
    threads += [
        _guard(run, "operator", lambda: _operator(run)),
        _guard(run, "bulk", lambda: _bulk_operator(run)),
        _guard(run, "purger", lambda: _purger(run)),
    ]
    for thread in threads:
        thread.start()
    run.stop.wait(SECONDS)
    deadline = time.monotonic() + 2 * SECONDS  # rare events (a fenced slow worker) may need a little longer
    while _missing_events(run) and time.monotonic() < deadline and not run.errors:
        time.sleep(0.1)
    run.stop.set()
    for thread in threads:
        thread.join(30)
    assert not [t.name for t in threads if t.is_alive()], f"threads hung {seed}"
    assert not run.errors, f"{seed}\n" + "\n".join(run.errors[:10])

    # it did what it says: every kind of event happened, many times
    assert not _missing_events(run), (_missing_events(run), seed)

    # no intent's business effect happened twice
    twice = conn.execute("SELECT scope, key, count(*) FROM soak.effect GROUP BY 1, 2 HAVING count(*) > 1").fetchall()
    assert not twice, f"effects recorded twice: {twice[:10]} {seed}\n{_history(conn, *twice[0][:2])}"

    # no worker's completed result was overwritten: the key (or what the purge deleted) still holds it
    overwritten = conn.execute("""
        SELECT c.scope, c.key, c.body, coalesce(k.response_body, d.response_body)
        FROM soak.completion c
        LEFT JOIN app.idempotency_request k ON (k.idempotency_scope, k.idempotency_key) = (c.scope, c.key)
        LEFT JOIN soak.deleted d ON (d.scope, d.key) = (c.scope, c.key)
        WHERE coalesce(k.response_body, d.response_body) IS DISTINCT FROM c.body
           OR (k.idempotency_key IS NOT NULL AND k.status::text <> 'succeeded')""").fetchall()
    assert not overwritten, f"completed results overwritten: {overwritten[:5]} {seed}"

    # every purged row was terminal and expired when it went, and no operator had decided on it within the horizon
    wrongly_purged = conn.execute("""
        SELECT d.scope, d.key, d.status, d.expires_at, d.deleted_at FROM soak.deleted d
        WHERE d.status NOT IN ('succeeded', 'failed_final') OR d.expires_at >= d.deleted_at""").fetchall()
    assert not wrongly_purged, f"live or unexpired keys purged: {wrongly_purged[:5]} {seed}"
    decided_then_purged = conn.execute(
        """
        SELECT d.scope, d.key, a.action, a.at, d.deleted_at FROM soak.deleted d
        JOIN idemdash.audit_log a ON a.scope = d.scope AND a.key = d.key AND a.action LIKE 'reclassify%%'
        WHERE a.at <= d.deleted_at AND a.at > d.deleted_at - make_interval(secs => %s)""",
        (HORIZON_SECONDS,),
    ).fetchall()
    assert not decided_then_purged, (
        f"keys purged within the replay horizon of a decision: {decided_then_purged[:5]} {seed}"
    )
    assert conn.execute("SELECT count(*) FROM soak.deleted").fetchone()[0] == run.purged

    # every bulk action changed only keys that matched its filter and were stuck at its preview
    outside = conn.execute("""
        SELECT p.audit_id, p.detail->'filter', c.scope, c.key, c.detail FROM idemdash.audit_log p
        JOIN idemdash.audit_log c ON c.parent_id = p.audit_id
        WHERE p.action LIKE 'reclassify-bulk:%%'
          AND (c.scope IS DISTINCT FROM p.detail->'filter'->>'scope'
               OR (p.detail->'filter'->>'claimed_by' IS NOT NULL
                   AND c.detail->>'claimed_by' IS DISTINCT FROM p.detail->'filter'->>'claimed_by')
               OR (c.detail->>'attempt_count')::int < coalesce((p.detail->'filter'->>'min_attempts')::int, 1)
               OR (c.detail->>'locked_until')::timestamptz >= (p.detail->>'as_of')::timestamptz
               OR (c.detail->>'locked_until')::timestamptz > (p.detail->>'as_of')::timestamptz
                    - make_interval(secs => coalesce((p.detail->'filter'->>'overdue_seconds')::float, 0)))
    """).fetchall()
    assert not outside, f"bulk actions changed keys outside their filter: {outside[:5]} {seed}"
    assert (
        conn.execute(
            "SELECT count(*) FROM idemdash.audit_log WHERE action LIKE 'reclassify-bulk:%%' AND parent_id IS NULL"
        ).fetchone()[0]
        == run.bulk_runs
    )
