-- delete_library_batch --
-- One batch of a library table's purge: up to %(batch_size)s rows its purgeable state ({condition}) selects, rows another transaction holds left for the next run (SKIP LOCKED), the condition checked again as each row is deleted; the run's progress in the same statement.
WITH doomed AS (
    SELECT ctid AS row_ctid FROM {table} WHERE {condition} LIMIT %(batch_size)s FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM {table} t USING doomed WHERE t.ctid = doomed.row_ctid AND ({condition}) RETURNING 1
), progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + (SELECT CASE WHEN count(*) > 0 THEN 1 ELSE 0 END FROM gone),
        rows_deleted = rows_deleted + (SELECT count(*) FROM gone)
    WHERE run_id = %(run_id)s
)
SELECT count(*) AS deleted FROM gone

-- record_library_dry_run --
-- A dry run of a library table's purge: the rows its purgeable state selects now, counted, written as the run's rows.
UPDATE idemdash.purge_run SET rows_deleted = (SELECT count(*) FROM {table} WHERE {condition})
WHERE run_id = %(run_id)s
RETURNING rows_deleted
