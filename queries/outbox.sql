-- list_outbox_event_types --
-- Per event type: pending rows (count, oldest, max attempts) and rows published in the last 24 hours; bounded by limit.
-- Two bounded aggregates (pending rows only; a 24-hour window of published_at), joined, never a whole-table scan.
WITH pending AS (
    SELECT event_type, count(*) AS pending, min(created_at) AS oldest_pending_at, max(attempt_count) AS max_attempts
    FROM {outbox}
    WHERE status = 'pending'
    GROUP BY event_type
),
published AS (
    SELECT event_type, count(*) AS published_24h
    FROM {outbox}
    WHERE published_at >= now() - interval '24 hours'
    GROUP BY event_type
)
SELECT coalesce(p.event_type, r.event_type) AS event_type,
       coalesce(p.pending, 0) AS pending,
       p.oldest_pending_at,
       extract(epoch FROM now() - p.oldest_pending_at)::double precision AS lag_seconds,
       p.max_attempts,
       coalesce(r.published_24h, 0) AS published_24h
FROM pending p
FULL JOIN published r ON r.event_type = p.event_type
ORDER BY coalesce(p.pending, 0) DESC, p.oldest_pending_at NULLS LAST, coalesce(p.event_type, r.event_type)
LIMIT %(limit)s

-- list_outbox_many_attempts --
-- Pending rows whose delivery failed at least min_attempts times (likely poison events), most attempts first.
-- The first `limit` pending rows by attempts, then those with at least min_attempts: the same rows (the threshold is on the leading sort key), but only the attempts index serves the inner read, in its order. With the threshold inside, the planner took the smaller poison index whenever its statistics lagged the attempts (at 5M outbox rows: 6,312 rows read and sorted for 20, 14 ms).
SELECT outbox_id::text AS outbox_id, event_type, aggregate_type, aggregate_id::text AS aggregate_id,
       idempotency_scope, idempotency_key, status, attempt_count, created_at, published_at,
       extract(epoch FROM now() - created_at)::double precision AS age_seconds, payload
FROM (SELECT * FROM {outbox} o
      WHERE status = 'pending'
      ORDER BY o.attempt_count DESC, o.created_at, o.outbox_id
      LIMIT %(limit)s) o
WHERE attempt_count >= %(min_attempts)s
ORDER BY o.attempt_count DESC, o.created_at, o.outbox_id

-- list_outbox_pending --
-- Pending outbox rows, oldest first (the order a publisher works through them); keyset on (created_at, outbox_id).
-- The sort names o.outbox_id: a bare outbox_id would be the text output column, which no index serves.
SELECT outbox_id::text AS outbox_id, event_type, aggregate_type, aggregate_id::text AS aggregate_id,
       idempotency_scope, idempotency_key, status, attempt_count, created_at, published_at,
       extract(epoch FROM now() - created_at)::double precision AS age_seconds, payload
FROM {outbox} o
WHERE status = 'pending'
  AND (%(event_type)s::text IS NULL OR event_type = %(event_type)s::text)
  AND (NOT %(has_cursor)s OR (o.created_at, o.outbox_id) > (%(c_ts)s::timestamptz, %(c_id)s::uuid))
ORDER BY o.created_at, o.outbox_id
LIMIT %(limit)s

-- list_outbox_by_status --
-- Outbox rows in one status other than pending, newest first; keyset on (created_at, outbox_id) descending.
SELECT outbox_id::text AS outbox_id, event_type, aggregate_type, aggregate_id::text AS aggregate_id,
       idempotency_scope, idempotency_key, status, attempt_count, created_at, published_at,
       extract(epoch FROM now() - created_at)::double precision AS age_seconds, payload
FROM {outbox} o
WHERE status::text = %(status)s::text
  AND (%(event_type)s::text IS NULL OR event_type = %(event_type)s::text)
  AND (NOT %(has_cursor)s OR (o.created_at, o.outbox_id) < (%(c_ts)s::timestamptz, %(c_id)s::uuid))
ORDER BY o.created_at DESC, o.outbox_id DESC
LIMIT %(limit)s

-- list_outbox_statuses --
-- Distinct outbox statuses (the status filter's choices), via a loose index scan on the status index.
WITH RECURSIVE statuses AS (
    (SELECT status::text AS status FROM {outbox} ORDER BY status::text LIMIT 1)
    UNION ALL
    SELECT (SELECT o.status::text FROM {outbox} o WHERE o.status::text > s.status ORDER BY o.status::text LIMIT 1)
    FROM statuses s
    WHERE s.status IS NOT NULL
)
SELECT status FROM statuses WHERE status IS NOT NULL LIMIT %(limit)s

-- get_outbox_row --
-- One outbox row with every column the page shows, and whether the key it was written under still exists.
SELECT o.outbox_id::text AS outbox_id, o.event_type, o.aggregate_type, o.aggregate_id::text AS aggregate_id,
       o.idempotency_scope, o.idempotency_key, o.status::text AS status, o.attempt_count, o.created_at,
       o.published_at, extract(epoch FROM now() - o.created_at)::double precision AS age_seconds, o.payload,
       EXISTS (SELECT 1 FROM {keys} k
               WHERE k.idempotency_scope = o.idempotency_scope AND k.idempotency_key = o.idempotency_key) AS key_exists
FROM {outbox} o
WHERE o.outbox_id = %(outbox_id)s::uuid

-- list_outbox_poison --
-- Likely poison rows (pending, at least 3 and at least min_attempts delivery attempts), oldest first; keyset on (created_at, outbox_id).
-- The literal 3 (POISON_MIN_ATTEMPTS) lets every plan use the partial index of these rows, whatever min_attempts is.
SELECT outbox_id::text AS outbox_id, event_type, aggregate_type, aggregate_id::text AS aggregate_id,
       idempotency_scope, idempotency_key, status, attempt_count, created_at, published_at,
       extract(epoch FROM now() - created_at)::double precision AS age_seconds, payload
FROM {outbox} o
WHERE status = 'pending' AND attempt_count >= 3 AND attempt_count >= %(min_attempts)s
  AND (NOT %(has_cursor)s OR (o.created_at, o.outbox_id) > (%(c_ts)s::timestamptz, %(c_id)s::uuid))
ORDER BY o.created_at, o.outbox_id
LIMIT %(limit)s
