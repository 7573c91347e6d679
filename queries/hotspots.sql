-- list_hotspot_groups --
-- Retry hotspots (attempt_count >= N, updated_at within the window) per scope and per claimed_by (NULL is its own group), in one pass over them.
-- Per group: how many, stuck / in each status, the most attempts; the `limit` with the most hotspots of each kind.
-- GROUPING SETS reads each hotspot row once for both groupings (the rows are spread over the table: the heap
-- fetches are the cost).
WITH grouped AS (
    SELECT GROUPING(idempotency_scope) = 0 AS by_scope,
           idempotency_scope AS scope,
           claimed_by,
           count(*) AS hotspot_keys,
           count(*) FILTER (
               WHERE status = 'processing'
                 AND (locked_until < now()
                      OR (locked_until IS NULL AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)))
           ) AS stuck,
           count(*) FILTER (WHERE status = 'processing') AS processing,
           count(*) FILTER (WHERE status = 'failed_retryable') AS failed_retryable,
           count(*) FILTER (WHERE status = 'failed_final') AS failed_final,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
           max(attempt_count) AS max_attempts
    FROM {keys}
    WHERE attempt_count >= %(min_attempts)s
      -- a NULL window is all time; the claim function sets updated_at on every attempt
      AND updated_at >= coalesce(now() - %(window)s::interval, '-infinity'::timestamptz)
    GROUP BY GROUPING SETS ((idempotency_scope), (claimed_by))
),
ranked AS (
    SELECT g.*, row_number() OVER (PARTITION BY by_scope
                                   ORDER BY hotspot_keys DESC, max_attempts DESC, scope, claimed_by NULLS LAST) AS rank
    FROM grouped g
)
SELECT by_scope, scope, claimed_by, hotspot_keys, stuck, processing, failed_retryable, failed_final, succeeded,
       max_attempts
FROM ranked
WHERE rank <= %(limit)s
ORDER BY by_scope DESC, rank

-- list_top_hotspot_keys --
-- The keys with the most attempts (at least N) changed within the window, most attempts then most recently changed first (docs/concepts.md, Retry hotspots).
SELECT idempotency_scope AS scope, idempotency_key AS key, status::text AS status, request_hash, claimed_by,
       claimed_at, locked_until,
       CASE WHEN status = 'processing' THEN
           extract(epoch FROM now() - coalesce(locked_until, claimed_at + make_interval(secs => %(lease_seconds)s)))::double precision
       END AS overdue_seconds,
       attempt_count, created_at, updated_at, expires_at,
       coalesce(status = 'processing'
                AND (locked_until < now()
                     OR (locked_until IS NULL AND claimed_at < now() - make_interval(secs => %(lease_seconds)s))),
                false) AS stuck  -- a processing key without claimed_at or a lease is not known to be stuck
FROM {keys}
WHERE attempt_count >= %(min_attempts)s
  AND updated_at >= coalesce(now() - %(window)s::interval, '-infinity'::timestamptz)
ORDER BY attempt_count DESC, updated_at DESC, idempotency_scope, idempotency_key
LIMIT %(limit)s

-- count_keys_by_attempts --
-- Every key changed within the window (not only hotspots; a NULL window is the whole table) counted into attempt buckets 1, 2, 3, 4, 5-9, 10-19, 20+.
WITH retried AS (
    -- keys attempted more than once are few: the partial attempts index serves them. width_bucket gives
    -- 2 for attempt_count 2, ..., 5 for 5-9, 6 for 10-19, 7 for 20 and more.
    SELECT width_bucket(attempt_count, ARRAY[2, 3, 4, 5, 10, 20]) + 1 AS i, count(*) AS keys
    FROM {keys}
    WHERE attempt_count >= 2
      AND updated_at >= coalesce(now() - %(window)s::interval, '-infinity'::timestamptz)
    GROUP BY 1
),
total AS (
    -- the first-attempt bucket is the rest: a plain count, the cheapest way to visit every row (all time), or
    -- an index-only count of the window's rows by updated_at
    SELECT count(*) AS keys FROM {keys}
    WHERE updated_at >= coalesce(now() - %(window)s::interval, '-infinity'::timestamptz)
)
SELECT b.bucket, b.min, b.max,
       CASE WHEN b.i = 1 THEN (SELECT keys FROM total) - (SELECT coalesce(sum(keys), 0) FROM retried)
            ELSE coalesce(r.keys, 0) END::bigint AS keys
FROM (VALUES (1, '1', 1, 1), (2, '2', 2, 2), (3, '3', 3, 3), (4, '4', 4, 4),
             (5, '5-9', 5, 9), (6, '10-19', 10, 19), (7, '20+', 20, NULL)) AS b (i, bucket, min, max)
LEFT JOIN retried r USING (i)
ORDER BY b.i
