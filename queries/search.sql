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
      WHERE status = 'processing' AND claimed_by IS NOT NULL AND claimed_by <> 'idemdash:needs_review'
      ORDER BY locked_until DESC NULLS LAST
      LIMIT %(sample)s) w
ORDER BY w.claimed_by
LIMIT %(limit)s
