-- breakdown_stuck_keys --
-- The stuck keys that match the filters (suggested outcome included), counted per scope and per worker (claimed_by): at most cap + 1 rows from each of the two index ranges that hold them (stuck_keys_unleased, stuck_keys_leased), so an incident of any size costs at most 2 x (cap + 1) index entries; a total over cap means "too many to break down".
WITH examined AS MATERIALIZED (
    (SELECT k.idempotency_scope AS scope, k.claimed_by FROM {keys} k
     WHERE {stuck_keys_unleased} AND {suggested_is} LIMIT %(cap)s + 1)
    UNION ALL
    (SELECT k.idempotency_scope AS scope, k.claimed_by FROM {keys} k
     WHERE {stuck_keys_leased} AND {suggested_is} LIMIT %(cap)s + 1)
)
SELECT 'scope' AS dimension, e.scope AS name, count(*)::integer AS count FROM examined e GROUP BY e.scope
UNION ALL
SELECT 'worker' AS dimension, e.claimed_by AS name, count(*)::integer AS count FROM examined e GROUP BY e.claimed_by

-- breakdown_processing_keys --
-- The keys of the needs_review or processing tab that match every filter, per scope and per worker, over at most cap + 1 of them (a total over cap: too many to break down).
WITH examined AS MATERIALIZED (
    SELECT k.idempotency_scope AS scope, k.claimed_by FROM {keys} k WHERE {processing_key_filter} LIMIT %(cap)s + 1
)
SELECT 'scope' AS dimension, e.scope AS name, count(*)::integer AS count FROM examined e GROUP BY e.scope
UNION ALL
SELECT 'worker' AS dimension, e.claimed_by AS name, count(*)::integer AS count FROM examined e GROUP BY e.claimed_by

-- breakdown_status_keys --
-- The keys of a terminal or failed tab that match every filter, per scope and per worker, over at most cap + 1 of them (a total over cap: too many to break down).
WITH examined AS MATERIALIZED (
    SELECT k.idempotency_scope AS scope, k.claimed_by FROM {keys} k WHERE {status_key_filter} LIMIT %(cap)s + 1
)
SELECT 'scope' AS dimension, e.scope AS name, count(*)::integer AS count FROM examined e GROUP BY e.scope
UNION ALL
SELECT 'worker' AS dimension, e.claimed_by AS name, count(*)::integer AS count FROM examined e GROUP BY e.claimed_by
