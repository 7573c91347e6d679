-- delete_library_batch --
-- One batch of a library table's purge: up to %(batch_size)s rows its purgeable state ({condition}) selects, rows another transaction holds left for the next run (SKIP LOCKED), the condition checked again as each row is deleted; the run's progress in the same statement.
WITH doomed AS (
    SELECT ctid AS row_ctid FROM {table} WHERE {condition} LIMIT %(batch_size)s FOR UPDATE SKIP LOCKED
), {library_batch_delete}
SELECT count(*) AS deleted FROM gone

-- delete_library_batch_in_order --
-- One batch of a library table's purge along the time column the library indexes for its purgeable state ({order}): the due rows from where the previous batch stopped (%(after_value)s, unless %(first)s), oldest first, so a batch never walks again over the index entries of the rows earlier batches deleted; otherwise as delete_library_batch. Answers the rows deleted and where this batch stopped.
WITH doomed AS (
    SELECT ctid AS row_ctid, {order} AS row_order FROM {table}
    WHERE {condition} AND (%(first)s OR {order} >= %(after_value)s)
    ORDER BY {order}
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
), {library_batch_delete}
SELECT (SELECT count(*) FROM gone) AS deleted, (SELECT max(row_order)::text FROM doomed) AS stopped_at

-- record_library_dry_run --
-- A dry run of a library table's purge: the rows its purgeable state selects now, counted, written as the run's rows.
UPDATE idemdash.purge_run SET rows_deleted = (SELECT count(*) FROM {table} WHERE {condition})
WHERE run_id = %(run_id)s
RETURNING rows_deleted

-- library_batch_delete --
-- A fragment of both batch statements above: delete the rows of `doomed` that the purgeable condition still selects as each is deleted ({returned}: the columns the dependent tables' deletes ({dependents}, delete_library_dependent blocks) match, else 1), and add them to the run's progress in the same statement.
gone AS (
    DELETE FROM {table} t USING doomed WHERE t.ctid = doomed.row_ctid AND ({condition}) RETURNING {returned}
){dependents}, progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + (SELECT CASE WHEN count(*) > 0 THEN 1 ELSE 0 END FROM gone),
        rows_deleted = rows_deleted + (SELECT count(*) FROM gone)
    WHERE run_id = %(run_id)s
)

-- delete_library_dependent --
-- One table's rows that belong to the rows a library batch deleted ({dependent}.{column} equal to a deleted row's {parent}), deleted in the same statement: the library's tables that have no foreign key to the purged one (Table.dependents), so no cascade would.
{cte} AS (
    DELETE FROM {dependent} WHERE {column} IN (SELECT {parent} FROM gone)
)
