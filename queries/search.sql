-- find_keys_exact --
-- Keys by exact (scope, key) pairs, e.g. one key name probed in every scope: one primary-key lookup per pair.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key, k.status::text AS status, k.claimed_by,
       k.attempt_count, k.locked_until, k.updated_at,
       (k.status = 'processing'
        AND (k.locked_until < now()
             OR (k.locked_until IS NULL AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)))) AS stuck
FROM unnest(%(scopes)s::text[], %(keys)s::text[]) AS wanted(scope, key)
JOIN {keys} k ON k.idempotency_scope = wanted.scope AND k.idempotency_key = wanted.key
ORDER BY k.idempotency_scope, k.idempotency_key

-- list_keys_with_prefix --
-- Keys starting with a prefix in each given scope, in key order: per scope at most per_scope of the first `examine` primary-key entries from the prefix on.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key, k.status::text AS status, k.claimed_by,
       k.attempt_count, k.locked_until, k.updated_at,
       (k.status = 'processing'
        AND (k.locked_until < now()
             OR (k.locked_until IS NULL AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)))) AS stuck
FROM unnest(%(scopes)s::text[]) WITH ORDINALITY AS s(scope, n)
CROSS JOIN LATERAL (
    -- a bounded walk of the primary key from the prefix: in a C collation the matches are exactly the first rows
    SELECT c.idempotency_key
    FROM (SELECT p.idempotency_key FROM {keys} p
          WHERE p.idempotency_scope = s.scope AND p.idempotency_key >= %(prefix)s
          ORDER BY p.idempotency_key
          LIMIT %(examine)s) c
    WHERE starts_with(c.idempotency_key, %(prefix)s)
    ORDER BY c.idempotency_key
    LIMIT %(per_scope)s
) m
JOIN {keys} k ON k.idempotency_scope = s.scope AND k.idempotency_key = m.idempotency_key
ORDER BY s.n, k.idempotency_key

-- list_recent_workers --
-- Workers (claimed_by) of the processing keys with the latest leases: the suggestions of the worker filter and the search, from a bounded sample.
SELECT DISTINCT w.claimed_by AS name
FROM (SELECT claimed_by FROM {keys}
      WHERE status = 'processing' AND claimed_by IS NOT NULL AND claimed_by <> {review_holder}
      ORDER BY locked_until DESC NULLS LAST
      LIMIT %(sample)s) w
ORDER BY w.claimed_by
LIMIT %(limit)s

-- find_outbox_rows --
-- Outbox rows whose {column} is one of the given UUIDs, newest first: outbox_id through the primary key (a pasted row id), aggregate_id through index_outbox_aggregate (an order's or invoice's id).
SELECT o.outbox_id::text AS outbox_id, o.event_type, o.status::text AS status, o.idempotency_scope AS scope,
       o.idempotency_key AS key, o.aggregate_type, o.aggregate_id::text AS aggregate_id, o.created_at,
       %(matched)s::text AS matched
FROM {outbox} o
WHERE o.{column} = ANY(%(ids)s::uuid[])
ORDER BY o.created_at DESC
LIMIT %(limit)s

-- find_inbox_messages --
-- Inbox rows with one of the given message ids in every consumer: the consumers from a loose index scan of the primary key (consumer_name, message_id), then one primary-key probe per consumer and id.
WITH RECURSIVE {inbox_consumers_scan}
SELECT m.consumer_name AS consumer, m.message_id, m.processed_at
FROM (SELECT consumer_name FROM consumers WHERE consumer_name IS NOT NULL LIMIT %(max_consumers)s) c
CROSS JOIN unnest(%(ids)s::text[]) AS wanted(id)
JOIN {inbox} m ON m.consumer_name = c.consumer_name AND m.message_id = wanted.id
ORDER BY m.processed_at DESC, m.consumer_name
LIMIT %(limit)s

-- list_nearest_keys --
-- The key just before and just after the text in each scope's key order (two primary-key probes per scope): what the operator may have meant when nothing matches.
SELECT s.scope, n.key
FROM unnest(%(scopes)s::text[]) AS s(scope)
CROSS JOIN LATERAL (
    (SELECT k.idempotency_key AS key FROM {keys} k
     WHERE k.idempotency_scope = s.scope AND k.idempotency_key > %(q)s
     ORDER BY k.idempotency_key LIMIT 1)
    UNION ALL
    (SELECT k.idempotency_key FROM {keys} k
     WHERE k.idempotency_scope = s.scope AND k.idempotency_key < %(q)s
     ORDER BY k.idempotency_key DESC LIMIT 1)
) n

-- list_recent_owners --
-- Owners (claimed_by) of keys whatever their state, to find a worker by name: every owner of a failed key (a loose index scan of index_keys_failures, one descent per owner, at most max_failing), and the owners of the latest `sample` succeeded keys (index_keys_updated, newest first) and of the processing keys with the latest and the oldest leases (index_keys_leases, index-only: the stuck keys' owners too). Bounded by its limits, not by the table.
WITH RECURSIVE failing(name, n) AS (
    (SELECT claimed_by, 1 FROM {keys}
     WHERE status IN ('failed_retryable', 'failed_final') AND claimed_by IS NOT NULL
     ORDER BY claimed_by LIMIT 1)
    UNION ALL
    SELECT (SELECT k.claimed_by FROM {keys} k
            WHERE k.status IN ('failed_retryable', 'failed_final') AND k.claimed_by > f.name
            ORDER BY k.claimed_by LIMIT 1), f.n + 1
    FROM failing f
    WHERE f.name IS NOT NULL AND f.n < %(max_failing)s
)
SELECT DISTINCT o.claimed_by AS name
FROM (
    SELECT name AS claimed_by FROM failing
    UNION ALL
    (SELECT claimed_by FROM {keys} WHERE status = 'succeeded' ORDER BY updated_at DESC LIMIT %(sample)s)
    UNION ALL
    (SELECT claimed_by FROM {keys} WHERE status = 'processing' ORDER BY locked_until DESC NULLS LAST LIMIT %(sample)s)
    UNION ALL
    (SELECT claimed_by FROM {keys} WHERE status = 'processing' ORDER BY locked_until NULLS FIRST LIMIT %(sample)s)
) o
WHERE o.claimed_by IS NOT NULL AND o.claimed_by <> {review_holder}
ORDER BY name
LIMIT %(limit)s

-- find_failing_owner --
-- Whether an owner with exactly this name failed a key that is still in the table: one probe of index_keys_failures (claimed_by first), so a worker is found by its exact name past the loose scan's limit too.
SELECT EXISTS (SELECT 1 FROM {keys}
               WHERE claimed_by = %(name)s AND status IN ('failed_retryable', 'failed_final')) AS found
