-- lock_key_for_action --
-- Lock one key for an operator action without waiting: an application transaction holding it makes this fail at once (55P03).
SELECT idempotency_scope AS scope, idempotency_key AS key, status::text AS status, attempt_count, locked_until,
       claimed_by, claimed_at
FROM {keys}
WHERE idempotency_scope = %(scope)s AND idempotency_key = %(key)s
FOR UPDATE NOWAIT

-- reclassify_key --
-- Reclassify one key only if it is stuck now (or held for review) and unchanged since the operator looked; the audit row commits with it.
WITH changed AS (
    UPDATE {keys} k
    SET {set_clause}
    WHERE k.idempotency_scope = %(scope)s
      AND k.idempotency_key = %(key)s
      AND k.status = 'processing'
      AND (k.locked_until < now()
           OR (k.locked_until IS NULL AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s))
           OR k.claimed_by = {review_holder})
      AND (%(expected_attempt_count)s::integer IS NULL OR k.attempt_count = %(expected_attempt_count)s::integer)
      AND (NOT %(check_locked_until)s OR k.locked_until IS NOT DISTINCT FROM %(expected_locked_until)s::timestamptz)
      AND {effect_guard}
    RETURNING k.idempotency_scope, k.idempotency_key, k.status::text AS status
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail)
    SELECT %(actor)s, %(action)s, c.idempotency_scope, c.idempotency_key, %(from_status)s, c.status, %(reason)s,
           %(evidence)s, %(detail)s
    FROM changed c
    RETURNING audit_id
)
SELECT (SELECT audit_id FROM audit) AS audit_id, (SELECT count(*) FROM changed) AS changed

-- fragment_no_committed_effect --
-- WHERE condition for safe_to_retry and abandoned: no outbox row for the key, i.e. its business effect did not commit (checked when the row is changed, not when the operator looked: a retry would run a committed effect twice, a final failure would deny one that exists).
NOT EXISTS (SELECT 1 FROM {outbox} o
            WHERE o.idempotency_scope = k.idempotency_scope AND o.idempotency_key = k.idempotency_key)

-- fragment_true --
-- WHERE condition that holds: the outcomes an outbox row does not contradict (already_succeeded, needs_review), and an explicit override.
true

-- fragment_set_safe_to_retry --
-- SET list: the client's next retry re-claims the key (failed_retryable, lock cleared).
status = 'failed_retryable', locked_until = NULL, failure_code = 'idemdash_safe_to_retry',
failure_message = %(reason)s, updated_at = clock_timestamp()

-- fragment_set_abandoned --
-- SET list: the key fails for good; retries get the final failure, for at least the replay horizon (no purge before).
status = 'failed_final', locked_until = NULL, failure_code = 'abandoned', failure_message = %(reason)s,
updated_at = clock_timestamp(),
expires_at = greatest(k.expires_at, clock_timestamp() + make_interval(secs => %(replay_horizon_seconds)s))

-- fragment_set_already_succeeded --
-- SET list: the key succeeded with the result the operator gives; retries get it replayed for at least the replay horizon.
status = 'succeeded', locked_until = NULL, result_ref_type = %(result_ref_type)s,
result_ref_id = %(result_ref_id)s::uuid, response_body = %(response_body)s, failure_code = NULL,
failure_message = NULL, updated_at = clock_timestamp(),
expires_at = greatest(k.expires_at, clock_timestamp() + make_interval(secs => %(replay_horizon_seconds)s))

-- fragment_set_needs_review --
-- SET list: the key stays processing with a long lease held by idemdash, so no retry re-runs it meanwhile.
locked_until = clock_timestamp() + make_interval(secs => %(hold_seconds)s), claimed_by = {review_holder},
updated_at = clock_timestamp()

-- fragment_bulk_filter --
-- WHERE conditions shared by bulk preview and change: stuck already at as_of and still now, not held for review, the operator's filters (the suggested outcome among them, judged at as_of: suggested_at), and for safe_to_retry and abandoned no committed effect.
k.status = 'processing'
AND (k.locked_until < %(as_of)s::timestamptz
     OR (k.locked_until IS NULL AND k.claimed_at < %(as_of)s::timestamptz - make_interval(secs => %(lease_seconds)s)))
AND (k.locked_until < now()
     OR (k.locked_until IS NULL AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)))
AND k.claimed_by IS DISTINCT FROM {review_holder}
AND (%(scope)s::text IS NULL OR k.idempotency_scope = %(scope)s::text)
AND (%(claimed_by)s::text IS NULL OR k.claimed_by = %(claimed_by)s::text)
AND (%(min_attempts)s::integer IS NULL OR k.attempt_count >= %(min_attempts)s::integer)
AND (%(min_overdue)s::double precision IS NULL
     OR coalesce(k.locked_until, k.claimed_at + make_interval(secs => %(lease_seconds)s))
        <= %(as_of)s::timestamptz - make_interval(secs => %(min_overdue)s::double precision))
AND (%(suggested)s::text IS NULL OR ({suggested_outcome}) = %(suggested)s::text)
AND {effect_guard}

-- count_bulk_candidates --
-- How many keys a bulk reclassification would change right now.
SELECT count(*) AS candidates FROM {keys} k WHERE {bulk_filter}

-- list_bulk_sample --
-- A sample of the keys a bulk reclassification would change (the preview), most overdue first.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key, k.claimed_by, k.attempt_count, k.locked_until
FROM {keys} k
WHERE {bulk_filter}
ORDER BY k.locked_until NULLS FIRST, k.idempotency_scope, k.idempotency_key
LIMIT %(limit)s

-- count_bulk_candidates_by_scope --
-- A bulk preview's count per scope, largest first (the preview states what the action would touch, scope by scope).
SELECT k.idempotency_scope AS scope, count(*)::int AS keys
FROM {keys} k
WHERE {bulk_filter}
GROUP BY k.idempotency_scope
ORDER BY count(*) DESC, k.idempotency_scope
LIMIT %(limit)s

-- insert_bulk_preview --
-- Record a bulk preview (its filter, outcome and counts at as_of) so the confirmation can be checked against it; forget previews older than a day.
WITH forget AS (
    DELETE FROM idemdash.bulk_preview WHERE created_at < now() - interval '1 day'
)
INSERT INTO idemdash.bulk_preview (as_of, filter, to_status, candidates, by_scope, actor)
VALUES (%(as_of)s, %(filter)s, %(to)s, %(candidates)s, %(by_scope)s, %(actor)s)
RETURNING preview_id

-- get_bulk_preview --
-- The preview a confirmation names by its as_of: the one with the same filter and outcome if there is one, else any (to say what differs).
SELECT preview_id, filter, to_status, candidates, by_scope, (filter = %(filter)s AND to_status = %(to)s) AS matches
FROM idemdash.bulk_preview
WHERE as_of = %(as_of)s
ORDER BY (filter = %(filter)s AND to_status = %(to)s) DESC, preview_id DESC
LIMIT 1

-- insert_bulk_audit --
-- The one audit entry of a bulk reclassification (filter, as_of, the preview's counts); each key's row points to it.
INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail)
VALUES (%(actor)s, %(action)s, %(scope)s, NULL, 'processing', %(to_status)s, %(reason)s, %(evidence)s, %(detail)s)
RETURNING audit_id

-- reclassify_bulk_batch --
-- One batch of a bulk reclassification: lock candidates with SKIP LOCKED, change them, audit each under the bulk entry, in one statement.
WITH candidates AS (
    SELECT k.idempotency_scope, k.idempotency_key, k.claimed_by, k.attempt_count, k.locked_until
    FROM {keys} k
    WHERE {bulk_filter}
    ORDER BY k.locked_until NULLS FIRST, k.idempotency_scope, k.idempotency_key
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE {keys} k
    SET {set_clause}
    FROM candidates c
    WHERE k.idempotency_scope = c.idempotency_scope AND k.idempotency_key = c.idempotency_key
    RETURNING k.idempotency_scope, k.idempotency_key, k.status::text AS status, c.claimed_by, c.attempt_count,
              c.locked_until
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail,
                                    parent_id)
    SELECT %(actor)s, %(action)s, c.idempotency_scope, c.idempotency_key, 'processing', c.status, %(reason)s,
           '[]'::jsonb,
           jsonb_build_object('claimed_by', c.claimed_by, 'attempt_count', c.attempt_count,
                              'locked_until', c.locked_until),
           %(parent_id)s
    FROM changed c
    RETURNING audit_id
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM audit) AS audited
