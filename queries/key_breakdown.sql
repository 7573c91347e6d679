-- breakdown_stuck_keys --
-- The stuck keys examined: at most cap + 1 keys from each of the two index ranges that hold them (the unleased ones by claim time, the leased ones by lease end, oldest first: stuck_range_unleased, stuck_range_leased), read index-only and aggregated in one pass, so an incident of any size costs at most 2 x (cap + 1) index entries whatever the filters. One row per range (how many keys it gave: more than cap means it was cut and the counts are a lower bound), per scope and per worker (how many of its keys match the operator's filters): grouping sets, not every (range, scope, worker) combination (2,241 rows at 100M keys, each built in Python).
SELECT CASE WHEN GROUPING(k.part) = 0 THEN 'part' WHEN GROUPING(k.idempotency_scope) = 0 THEN 'scope' ELSE 'worker' END AS dimension,
       k.part, k.idempotency_scope AS scope, k.claimed_by, count(*)::integer AS count,
       count(*) FILTER (WHERE {key_operator_filter})::integer AS matching
FROM ((SELECT 1 AS part, k.idempotency_scope, k.claimed_by, k.attempt_count FROM {keys} k
       WHERE {stuck_range_unleased} ORDER BY k.claimed_at LIMIT %(cap)s + 1)
      UNION ALL
      (SELECT 2 AS part, k.idempotency_scope, k.claimed_by, k.attempt_count FROM {keys} k
       WHERE {stuck_range_leased} ORDER BY k.locked_until NULLS FIRST LIMIT %(cap)s + 1)) k
GROUP BY GROUPING SETS ((k.part), (k.idempotency_scope), (k.claimed_by))

-- breakdown_processing_keys --
-- The keys of the needs_review or processing tab examined: at most cap + 1 keys of the tab in lease order (processing_range), aggregated in one pass; rows as breakdown_stuck_keys' (more than cap keys in the range means the tab was cut and the counts are a lower bound).
SELECT CASE WHEN GROUPING(k.part) = 0 THEN 'part' WHEN GROUPING(k.idempotency_scope) = 0 THEN 'scope' ELSE 'worker' END AS dimension,
       k.part, k.idempotency_scope AS scope, k.claimed_by, count(*)::integer AS count,
       count(*) FILTER (WHERE {key_operator_filter})::integer AS matching
FROM (SELECT 1 AS part, k.idempotency_scope, k.claimed_by, k.attempt_count FROM {keys} k
      WHERE {processing_range} ORDER BY k.locked_until NULLS FIRST LIMIT %(cap)s + 1) k
GROUP BY GROUPING SETS ((k.part), (k.idempotency_scope), (k.claimed_by))

-- breakdown_status_keys --
-- The keys of a terminal or failed tab that match every filter, per scope and per worker, over at most cap + 1 of them (a total over cap: too many to break down). examined_order: with a scope given, the oldest changed first (key_breakdown.py says why), else none.
WITH examined AS MATERIALIZED (
    SELECT k.idempotency_scope AS scope, k.claimed_by FROM {keys} k WHERE {status_key_filter} {examined_order} LIMIT %(cap)s + 1
)
SELECT 'scope' AS dimension, e.scope AS name, count(*)::integer AS count FROM examined e GROUP BY e.scope
UNION ALL
SELECT 'worker' AS dimension, e.claimed_by AS name, count(*)::integer AS count FROM examined e GROUP BY e.claimed_by
