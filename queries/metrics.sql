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
