-- list_suppression_by_scope --
-- Keys created within a window, per scope: first-attempt vs retried, attempts, status now; then one totals row (is_total).
WITH per_scope AS (
    SELECT idempotency_scope AS scope,
           count(*) AS keys,
           count(*) FILTER (WHERE attempt_count = 1) AS first_attempt,
           count(*) FILTER (WHERE attempt_count > 1) AS retried,
           sum(attempt_count)::bigint AS total_attempts,
           max(attempt_count) AS max_attempts,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE status = 'failed_final') AS failed_final,
           count(*) FILTER (WHERE status = 'processing') AS processing,
           count(*) FILTER (WHERE status = 'failed_retryable') AS failed_retryable
    FROM {keys}
    WHERE created_at >= now() - %(window)s::interval
    GROUP BY idempotency_scope
),
shown AS (
    SELECT * FROM per_scope ORDER BY retried DESC, keys DESC, scope LIMIT %(limit)s
),
result_rows AS (
    SELECT false AS is_total, scope, 1::bigint AS scopes, keys, first_attempt, retried, total_attempts,
           max_attempts, succeeded, failed_final, processing, failed_retryable
    FROM shown
    UNION ALL
    -- over every scope in the window, also those past the limit; one row even when there are none
    SELECT true, NULL, count(*), coalesce(sum(keys), 0)::bigint, coalesce(sum(first_attempt), 0)::bigint,
           coalesce(sum(retried), 0)::bigint, coalesce(sum(total_attempts), 0)::bigint, max(max_attempts),
           coalesce(sum(succeeded), 0)::bigint, coalesce(sum(failed_final), 0)::bigint,
           coalesce(sum(processing), 0)::bigint, coalesce(sum(failed_retryable), 0)::bigint
    FROM per_scope
)
SELECT is_total, scope, scopes, keys, first_attempt, retried,
       (100.0 * retried / nullif(keys, 0))::double precision AS retried_pct,
       total_attempts, total_attempts - keys AS extra_attempts, max_attempts,
       succeeded, failed_final, processing, failed_retryable,
       now() - %(window)s::interval AS since
FROM result_rows
ORDER BY is_total, retried DESC, keys DESC, scope
