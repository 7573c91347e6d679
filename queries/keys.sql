-- list_processing_keys --
-- Processing keys (all, only stuck ones, or only those held for review) by lease end, each hold with who and why; keyset on (locked_until NULLS FIRST, scope, key) read either way: most overdue first (ASC, after: >) or latest lease end first (DESC, after: <), the index read forwards or backwards.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key, k.status::text AS status, k.request_hash, k.claimed_by,
       k.claimed_at, k.locked_until,
       extract(epoch FROM now() - coalesce(k.locked_until, k.claimed_at + make_interval(secs => %(lease_seconds)s)))::double precision
           AS overdue_seconds,
       k.attempt_count, k.created_at, k.updated_at, k.expires_at,
       hold.held_by, hold.hold_reason, hold.held_at
FROM {keys} k
LEFT JOIN LATERAL (
    -- the operator decision that holds the key (only looked up for held keys)
    SELECT a.actor AS held_by, a.reason AS hold_reason, a.at AS held_at
    FROM idemdash.audit_log a
    WHERE k.claimed_by = {review_holder}
      AND a.scope = k.idempotency_scope AND a.key = k.idempotency_key AND a.action IN ('reclassify:needs_review', 'reclassify-bulk:needs_review')
    ORDER BY a.at DESC
    LIMIT 1
) hold ON true
WHERE {processing_key_filter}
  -- past the cursor in the order read, where a key without a lease end comes before every other
  AND (NOT %(has_cursor)s
       OR (%(c_null)s AND k.locked_until IS NULL
                      AND (k.idempotency_scope, k.idempotency_key) {after} (%(c_scope)s::text, %(c_key)s::text))
       OR (%(c_null)s AND NOT %(descending)s AND k.locked_until IS NOT NULL)
       OR (NOT %(c_null)s AND %(descending)s AND k.locked_until IS NULL)
       OR (NOT %(c_null)s AND (k.locked_until, k.idempotency_scope, k.idempotency_key)
                              {after} (%(c_ts)s::timestamptz, %(c_scope)s::text, %(c_key)s::text)))
ORDER BY k.locked_until {direction} NULLS {nulls}, k.idempotency_scope {direction}, k.idempotency_key {direction}
LIMIT %(limit)s

-- list_keys_by_status --
-- Keys in one terminal or failed status by last change; keyset on (updated_at, scope, key) read either way: most recently changed first (DESC, after: <) or least recently (ASC, after: >), the index read backwards or forwards.
SELECT idempotency_scope AS scope, idempotency_key AS key, status::text AS status, request_hash, claimed_by,
       claimed_at, locked_until, NULL::double precision AS overdue_seconds,
       attempt_count, created_at, updated_at, expires_at
FROM {keys} k
WHERE {status_key_filter}
  AND (NOT %(has_cursor)s
       OR (updated_at, idempotency_scope, idempotency_key) {after} (%(c_ts)s::timestamptz, %(c_scope)s::text, %(c_key)s::text))
ORDER BY updated_at {direction}, idempotency_scope {direction}, idempotency_key {direction}
LIMIT %(limit)s

-- get_key --
-- One key with every column, whether it is stuck now, how overdue, and who holds it for review and why.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key, k.status::text AS status, k.request_hash, k.claimed_by,
       k.claimed_at, k.locked_until,
       CASE WHEN k.status = 'processing' THEN
           extract(epoch FROM now() - coalesce(k.locked_until, k.claimed_at + make_interval(secs => %(lease_seconds)s)))::double precision
       END AS overdue_seconds,
       k.attempt_count, k.created_at, k.updated_at, k.expires_at,
       k.response_body, k.result_ref_type, k.result_ref_id::text AS result_ref_id, k.failure_code, k.failure_message,
       (k.status = 'processing'
        AND (k.locked_until < now()
             OR (k.locked_until IS NULL AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)))) AS stuck,
       now() AS as_of,
       hold.held_by, hold.hold_reason, hold.held_at
FROM {keys} k
LEFT JOIN LATERAL (
    SELECT a.actor AS held_by, a.reason AS hold_reason, a.at AS held_at
    FROM idemdash.audit_log a
    WHERE k.status = 'processing' AND k.claimed_by = {review_holder}
      AND a.scope = k.idempotency_scope AND a.key = k.idempotency_key AND a.action IN ('reclassify:needs_review', 'reclassify-bulk:needs_review')
    ORDER BY a.at DESC
    LIMIT 1
) hold ON true
WHERE k.idempotency_scope = %(scope)s AND k.idempotency_key = %(key)s

-- list_outbox_for_key --
-- Outbox rows written under one idempotency key: evidence that its business effect committed.
SELECT outbox_id::text AS outbox_id, event_type, aggregate_type, aggregate_id::text AS aggregate_id, status,
       attempt_count, created_at, published_at, payload
FROM {outbox} o
WHERE o.idempotency_scope = %(scope)s AND o.idempotency_key = %(key)s
ORDER BY o.created_at, o.outbox_id
LIMIT %(limit)s

-- list_scopes --
-- Distinct scopes of the idempotency keys (filter suggestions), via a loose index scan on the primary key.
WITH RECURSIVE scopes AS (
    (SELECT idempotency_scope FROM {keys} ORDER BY idempotency_scope LIMIT 1)
    UNION ALL
    SELECT (SELECT k.idempotency_scope FROM {keys} k
            WHERE k.idempotency_scope > s.idempotency_scope ORDER BY k.idempotency_scope LIMIT 1)
    FROM scopes s
    WHERE s.idempotency_scope IS NOT NULL
)
SELECT idempotency_scope AS scope FROM scopes WHERE idempotency_scope IS NOT NULL LIMIT %(limit)s

-- count_keys_by_state --
-- Keys per state tab of the key list (the terminal and failed ones within updated_within, when given), each counted exactly up to its cap (0: not counted) rows of its index in the index's order, so the tabs stay cheap at any table size.
SELECT
    (SELECT count(*) FROM (SELECT 1 FROM {keys} WHERE status = 'processing' AND locked_until < now()
                           ORDER BY locked_until NULLS FIRST LIMIT %(cap_stuck)s) s)
    + (SELECT count(*) FROM (SELECT 1 FROM {keys}
                             WHERE status = 'processing' AND locked_until IS NULL
                               AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)
                             ORDER BY claimed_at LIMIT %(cap_stuck)s) s) AS stuck,
    (SELECT count(*) FROM (SELECT 1 FROM {keys}
                           WHERE status = 'processing' AND claimed_by = {review_holder}
                           LIMIT %(cap_needs_review)s) s) AS needs_review,
    (SELECT count(*) FROM (SELECT 1 FROM {keys} WHERE status = 'processing'
                           ORDER BY locked_until NULLS FIRST LIMIT %(cap_processing)s) s) AS processing,
    (SELECT count(*) FROM (SELECT 1 FROM {keys} WHERE status = 'failed_retryable' AND {changed_within}
                           ORDER BY updated_at DESC LIMIT %(cap_failed_retryable)s) s) AS failed_retryable,
    (SELECT count(*) FROM (SELECT 1 FROM {keys} WHERE status = 'failed_final' AND {changed_within}
                           ORDER BY updated_at DESC LIMIT %(cap_failed_final)s) s) AS failed_final,
    (SELECT count(*) FROM (SELECT 1 FROM {keys} WHERE status = 'succeeded' AND {changed_within}
                           ORDER BY updated_at DESC LIMIT %(cap_succeeded)s) s) AS succeeded

-- changed_within --
-- Whether a key's last change is within the window updated_within (seconds; NULL: any time), as the terminal and failed tabs count it.
(%(updated_within)s::double precision IS NULL
 OR updated_at >= now() - make_interval(secs => %(updated_within)s::double precision))

-- processing_key_filter --
-- WHERE conditions of a processing key list and its matching count: every processing key, only stuck ones or only held ones; the operator's filters; and for stuck keys the outcome suggested for them.
{processing_range}
  AND {key_operator_filter}
  AND {suggested_is}

-- processing_range --
-- The keys of a processing tab (every processing key, only stuck ones or only held ones) and overdue, before the operator's filters.
k.status = 'processing'
  AND (NOT %(stuck_only)s
       OR k.locked_until < now()
       OR (k.locked_until IS NULL AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)))
  AND (NOT %(held_only)s OR k.claimed_by = {review_holder})
  AND (%(min_overdue)s::double precision IS NULL
       OR coalesce(k.locked_until, k.claimed_at + make_interval(secs => %(lease_seconds)s))
          <= now() - make_interval(secs => %(min_overdue)s::double precision))

-- key_operator_filter --
-- The operator's filters that every processing list shares (scope, worker, attempts), apart from the tab's own condition, overdue and the suggested outcome.
(%(scope)s::text IS NULL OR k.idempotency_scope = %(scope)s::text)
  AND (%(claimed_by)s::text IS NULL OR k.claimed_by = %(claimed_by)s::text)
  -- "+ 0" keeps the planner on the lease-ordered index (stop at the limit) instead of AND-ing it with the
  -- attempts index, which reads every processing hotspot at millions of keys
  AND (%(min_attempts)s::integer IS NULL OR k.attempt_count + 0 >= %(min_attempts)s::integer)

-- suggested_is --
-- Whether a stuck key's suggested outcome is the one asked for (always true when none is): suggested_outcome said as one condition per outcome, the key's own columns tested before the outbox is probed, so only the keys those leave cost an outbox lookup.
(%(suggested)s::text IS NULL
 OR CASE %(suggested)s::text
        WHEN 'already_succeeded' THEN {has_outbox_row}
        WHEN 'needs_review' THEN k.attempt_count >= %(hotspot_min_attempts)s AND NOT {has_outbox_row}
        WHEN 'abandoned' THEN (k.attempt_count >= %(hotspot_min_attempts)s) IS NOT TRUE AND k.expires_at < now()
                              AND NOT {has_outbox_row}
        WHEN 'safe_to_retry' THEN (k.attempt_count >= %(hotspot_min_attempts)s) IS NOT TRUE
                                  AND (k.expires_at < now()) IS NOT TRUE AND NOT {has_outbox_row}
        ELSE false
    END)

-- status_key_filter --
-- WHERE conditions of a key list in one terminal or failed status and its matching count: the status, the window of its last change and the operator's filters.
k.status = %(status)s
  -- the last change within a window ("failed, final, 24 h" on the overview links here with updated_within)
  AND (%(updated_within)s::double precision IS NULL
       OR k.updated_at >= now() - make_interval(secs => %(updated_within)s::double precision))
  AND (%(scope)s::text IS NULL OR k.idempotency_scope = %(scope)s::text)
  AND (%(claimed_by)s::text IS NULL OR k.claimed_by = %(claimed_by)s::text)
  AND (%(min_attempts)s::integer IS NULL OR k.attempt_count >= %(min_attempts)s::integer)

-- suggested_outcome --
-- The reclassification suggested for a stuck key, as core/triage.py's suggest() decides it (tests/test_key_matching.py holds the two together): an outbox row means the effect committed; else many attempts want a look; else a key past its replay window is abandoned; else it is safe to retry.
CASE WHEN {has_outbox_row} THEN 'already_succeeded'
     WHEN k.attempt_count >= %(hotspot_min_attempts)s THEN 'needs_review'
     WHEN k.expires_at < {suggested_at} THEN 'abandoned'
     ELSE 'safe_to_retry'
END

-- suggested_at --
-- The time suggested_outcome judges a key's replay window at: now, unless its caller names another (a bulk confirmation: its preview's as_of, so that it acts on the outcomes the preview showed).
now()

-- has_outbox_row --
-- Whether an outbox row was written under the key k (its effect committed): one probe of the outbox's (scope, key) index.
EXISTS (SELECT 1 FROM {outbox} o WHERE o.idempotency_scope = k.idempotency_scope AND o.idempotency_key = k.idempotency_key)

-- list_response_fields --
-- The shape of a response stored near one key: the field names and JSON types of the first object response_body among the succeeded keys beside it in its scope, never a value (another key's response is another client's); at most 2 x span entries of the primary key, read outwards from the key.
WITH near AS (
    (SELECT k.status, k.response_body
     FROM {keys} k
     WHERE k.idempotency_scope = %(scope)s AND k.idempotency_key > %(key)s
     ORDER BY k.idempotency_key
     LIMIT %(span)s)
    UNION ALL
    (SELECT k.status, k.response_body
     FROM {keys} k
     WHERE k.idempotency_scope = %(scope)s AND k.idempotency_key < %(key)s
     ORDER BY k.idempotency_key DESC
     LIMIT %(span)s)
), sample AS (
    SELECT n.response_body
    FROM near n
    WHERE n.status = 'succeeded' AND jsonb_typeof(n.response_body) = 'object'
    LIMIT 1
)
SELECT f.key AS name, jsonb_typeof(f.value) AS type
FROM sample s
CROSS JOIN LATERAL jsonb_each(s.response_body) WITH ORDINALITY AS f(key, value, n)
ORDER BY f.n
LIMIT %(limit)s
