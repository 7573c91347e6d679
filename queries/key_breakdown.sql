-- breakdown_stuck_keys --
-- The stuck keys that match the operator's filters, counted per scope and per worker (claimed_by), among at most cap + 1 keys examined from each of the two index ranges that hold them (the unleased ones by claim time, the leased ones by lease end, oldest first: stuck_range_unleased, stuck_range_leased), so an incident of any size costs at most 2 x (cap + 1) index entries, whatever the filters. A total over cap means "too many to break down"; a 'cut' row, that a range held more keys than were examined (the counts are a lower bound).
WITH examined AS MATERIALIZED (
    (SELECT 1 AS part, k.idempotency_scope, k.claimed_by, k.attempt_count FROM {keys} k
     WHERE {stuck_range_unleased} ORDER BY k.claimed_at LIMIT %(cap)s + 1)
    UNION ALL
    (SELECT 2 AS part, k.idempotency_scope, k.claimed_by, k.attempt_count FROM {keys} k
     WHERE {stuck_range_leased} ORDER BY k.locked_until NULLS FIRST LIMIT %(cap)s + 1)
), matched AS MATERIALIZED (
    SELECT k.idempotency_scope AS scope, k.claimed_by FROM examined k WHERE {key_operator_filter}
)
SELECT 'scope' AS dimension, m.scope AS name, count(*)::integer AS count FROM matched m GROUP BY m.scope
UNION ALL
SELECT 'worker' AS dimension, m.claimed_by AS name, count(*)::integer AS count FROM matched m GROUP BY m.claimed_by
UNION ALL
SELECT 'cut' AS dimension, NULL AS name, count(*)::integer AS count FROM examined e GROUP BY e.part
HAVING count(*) > %(cap)s

-- breakdown_processing_keys --
-- The keys of the needs_review or processing tab that match the operator's filters, per scope and per worker, among at most cap + 1 keys of the tab examined in lease order (processing_range); a total over cap: too many to break down; a 'cut' row: the tab held more keys than were examined (the counts are a lower bound).
WITH examined AS MATERIALIZED (
    SELECT k.idempotency_scope, k.claimed_by, k.attempt_count FROM {keys} k
    WHERE {processing_range} ORDER BY k.locked_until NULLS FIRST LIMIT %(cap)s + 1
), matched AS MATERIALIZED (
    SELECT k.idempotency_scope AS scope, k.claimed_by FROM examined k WHERE {key_operator_filter}
)
SELECT 'scope' AS dimension, m.scope AS name, count(*)::integer AS count FROM matched m GROUP BY m.scope
UNION ALL
SELECT 'worker' AS dimension, m.claimed_by AS name, count(*)::integer AS count FROM matched m GROUP BY m.claimed_by
UNION ALL
SELECT 'cut' AS dimension, NULL AS name, count(*)::integer AS count FROM examined e HAVING count(*) > %(cap)s

-- breakdown_status_keys --
-- The keys of a terminal or failed tab that match every filter, per scope and per worker, over at most cap + 1 of them (a total over cap: too many to break down).
WITH examined AS MATERIALIZED (
    SELECT k.idempotency_scope AS scope, k.claimed_by FROM {keys} k WHERE {status_key_filter} LIMIT %(cap)s + 1
)
SELECT 'scope' AS dimension, e.scope AS name, count(*)::integer AS count FROM examined e GROUP BY e.scope
UNION ALL
SELECT 'worker' AS dimension, e.claimed_by AS name, count(*)::integer AS count FROM examined e GROUP BY e.claimed_by
