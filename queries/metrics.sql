-- count_stuck_keys_by_scope --
-- Stuck keys per scope for /metrics (only processing rows are read: the partial index on processing keys serves it).
-- Two ranges instead of one OR: leases that ran out are an index-only range (scope is in the index); the few
-- keys without a lease need their claimed_at from the table.
SELECT scope, sum(stuck)::bigint AS stuck
FROM (
    SELECT idempotency_scope AS scope, count(*) AS stuck
    FROM {keys}
    WHERE status = 'processing' AND locked_until < now()
    GROUP BY idempotency_scope
    UNION ALL
    SELECT idempotency_scope, count(*)
    FROM {keys}
    WHERE status = 'processing' AND locked_until IS NULL
      AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)
    GROUP BY idempotency_scope
) by_kind
GROUP BY scope
ORDER BY scope
LIMIT %(limit)s

-- list_purge_status_by_table --
-- Per purged table: when the last successful real purge finished and how many rows it deleted.
SELECT DISTINCT ON (table_name) table_name, finished_at AS last_success_at, rows_deleted AS last_rows_deleted
FROM idemdash.purge_run
WHERE outcome = 'succeeded' AND NOT dry_run
ORDER BY table_name, finished_at DESC

-- list_last_purge_run_by_table --
-- Per purged table: the most recent finished real run that was not skipped for another runner, and whether it failed.
SELECT DISTINCT ON (table_name) table_name, finished_at, outcome = 'failed' AS failed
FROM idemdash.purge_run
WHERE NOT dry_run AND finished_at IS NOT NULL AND outcome <> 'skipped'
ORDER BY table_name, finished_at DESC
