-- count_stuck_keys_by_scope --
-- Stuck keys per scope for /metrics (only processing rows are read: the partial index on processing keys serves it).
SELECT idempotency_scope AS scope, count(*) AS stuck
FROM {keys}
WHERE status = 'processing'
  AND (locked_until < now()
       OR (locked_until IS NULL AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)))
GROUP BY idempotency_scope
ORDER BY idempotency_scope
LIMIT %(limit)s

-- list_purge_status_by_table --
-- Per purged table: when the last successful real purge finished and how many rows it deleted.
SELECT DISTINCT ON (table_name) table_name, finished_at AS last_success_at, rows_deleted AS last_rows_deleted
FROM idemdash.purge_run
WHERE outcome = 'succeeded' AND NOT dry_run
ORDER BY table_name, finished_at DESC
