-- list_workers --
-- The owners (claimed_by) of the keys: each one holding a processing key now or owning a key that failed or succeeded in the window, with its last claim, in flight (processing, lease live), stuck, failed and succeeded in the window; worst first (stuck, failed, name), at most limit. The processing keys from index_keys_leases (index-only: it carries claimed_by and claimed_at), the window's finished keys from index_keys_updated (one range of updated_at per status); the rollup job precomputes it at scale.
SELECT o.* FROM (
SELECT w.claimed_by AS name, max(w.claimed_at) AS last_claim,
       count(*) FILTER (WHERE w.kind = 'in_flight') AS in_flight,
       count(*) FILTER (WHERE w.kind = 'stuck') AS stuck,
       count(*) FILTER (WHERE w.kind = 'failed_retryable') AS failed_retryable,
       count(*) FILTER (WHERE w.kind = 'failed_final') AS failed_final,
       count(*) FILTER (WHERE w.kind = 'succeeded') AS succeeded
FROM (
    SELECT p.claimed_by, p.claimed_at,
           CASE WHEN p.locked_until < now()
                     OR (p.locked_until IS NULL AND p.claimed_at < now() - make_interval(secs => %(lease_seconds)s))
                THEN 'stuck' ELSE 'in_flight' END AS kind
    FROM {keys} p
    WHERE p.status = 'processing' AND p.claimed_by IS NOT NULL AND p.claimed_by <> {review_holder}
    UNION ALL
    SELECT d.claimed_by, d.claimed_at, d.status::text
    FROM {keys} d
    WHERE d.status IN ('succeeded', 'failed_retryable', 'failed_final')
      AND d.updated_at >= now() - %(window)s::interval
      AND d.claimed_by IS NOT NULL AND d.claimed_by <> {review_holder}
) w
GROUP BY w.claimed_by
) o
ORDER BY o.stuck DESC, o.failed_retryable + o.failed_final DESC, o.name
LIMIT %(limit)s

-- count_held_keys --
-- Keys idemdash itself holds for review (claimed_by {review_holder}): shown apart from the workers, one range of index_keys_held.
SELECT count(*) AS held FROM {keys} WHERE status = 'processing' AND claimed_by = {review_holder}
