-- list_processing_keys --
-- Processing keys (all, or only stuck ones), most overdue first; keyset on (locked_until NULLS FIRST, scope, key).
SELECT idempotency_scope AS scope, idempotency_key AS key, status::text AS status, request_hash, claimed_by,
       claimed_at, locked_until,
       extract(epoch FROM now() - coalesce(locked_until, claimed_at + make_interval(secs => %(lease_seconds)s)))::double precision
           AS overdue_seconds,
       attempt_count, created_at, updated_at, expires_at
FROM {keys}
WHERE status = 'processing'
  AND (NOT %(stuck_only)s
       OR locked_until < now()
       OR (locked_until IS NULL AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)))
  AND (%(min_overdue)s::double precision IS NULL
       OR coalesce(locked_until, claimed_at + make_interval(secs => %(lease_seconds)s))
          <= now() - make_interval(secs => %(min_overdue)s::double precision))
  AND (%(scope)s::text IS NULL OR idempotency_scope = %(scope)s::text)
  AND (%(claimed_by)s::text IS NULL OR claimed_by = %(claimed_by)s::text)
  -- "+ 0" keeps the planner on the lease-ordered index (stop at the limit) instead of AND-ing it with the
  -- attempts index, which reads every processing hotspot at millions of keys
  AND (%(min_attempts)s::integer IS NULL OR attempt_count + 0 >= %(min_attempts)s::integer)
  AND (NOT %(has_cursor)s
       OR (%(c_null)s AND (locked_until IS NOT NULL
                            OR (idempotency_scope, idempotency_key) > (%(c_scope)s::text, %(c_key)s::text)))
       OR (NOT %(c_null)s AND (locked_until, idempotency_scope, idempotency_key)
                              > (%(c_ts)s::timestamptz, %(c_scope)s::text, %(c_key)s::text)))
ORDER BY locked_until NULLS FIRST, idempotency_scope, idempotency_key
LIMIT %(limit)s

-- list_keys_by_status --
-- Keys in one terminal or failed status, most recently changed first; keyset on (updated_at, scope, key) descending.
SELECT idempotency_scope AS scope, idempotency_key AS key, status::text AS status, request_hash, claimed_by,
       claimed_at, locked_until, NULL::double precision AS overdue_seconds,
       attempt_count, created_at, updated_at, expires_at
FROM {keys}
WHERE status = %(status)s
  AND (%(scope)s::text IS NULL OR idempotency_scope = %(scope)s::text)
  AND (%(claimed_by)s::text IS NULL OR claimed_by = %(claimed_by)s::text)
  AND (%(min_attempts)s::integer IS NULL OR attempt_count >= %(min_attempts)s::integer)
  AND (NOT %(has_cursor)s
       OR (updated_at, idempotency_scope, idempotency_key) < (%(c_ts)s::timestamptz, %(c_scope)s::text, %(c_key)s::text))
ORDER BY updated_at DESC, idempotency_scope DESC, idempotency_key DESC
LIMIT %(limit)s

-- get_key --
-- One key with every column, whether it is stuck now, and how overdue.
SELECT idempotency_scope AS scope, idempotency_key AS key, status::text AS status, request_hash, claimed_by,
       claimed_at, locked_until,
       CASE WHEN status = 'processing' THEN
           extract(epoch FROM now() - coalesce(locked_until, claimed_at + make_interval(secs => %(lease_seconds)s)))::double precision
       END AS overdue_seconds,
       attempt_count, created_at, updated_at, expires_at,
       response_body, result_ref_type, result_ref_id::text AS result_ref_id, failure_code, failure_message,
       (status = 'processing'
        AND (locked_until < now()
             OR (locked_until IS NULL AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)))) AS stuck,
       now() AS as_of
FROM {keys}
WHERE idempotency_scope = %(scope)s AND idempotency_key = %(key)s

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
