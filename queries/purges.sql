-- try_purge_lock --
-- Session-level advisory lock for one table's purge: one runner per table across every replica (false: taken).
SELECT pg_try_advisory_lock(hashtextextended('idemdash.purge.' || %(table)s::text, 0)) AS locked

-- release_purge_lock --
-- Give the table's purge lock back (disconnecting releases it too).
SELECT pg_advisory_unlock(hashtextextended('idemdash.purge.' || %(table)s::text, 0)) AS released

-- fail_dead_purge_runs --
-- Other runs of this table still 'running' while we hold its lock: their runner died (SIGKILL, lost connection).
UPDATE idemdash.purge_run
SET outcome = 'failed',
    finished_at = clock_timestamp(),
    error = 'runner died: its process or connection ended before the run finished (found by run '
            || %(by_run)s::text || ')'
WHERE table_name = %(table)s
  AND outcome = 'running'
  AND run_id <> %(by_run)s
RETURNING run_id

-- started_within --
-- Whether a run of this table by this starter began within the last %(seconds)s seconds and did not fail (a scheduled run asks, holding the table's lock: another scheduler's run of this period came first; a failed one is tried again).
SELECT EXISTS (
    SELECT 1 FROM idemdash.purge_run
    WHERE table_name = %(table)s
      AND started_by = %(started_by)s
      AND NOT dry_run
      AND outcome NOT IN ('failed', 'skipped')
      AND started_at > clock_timestamp() - make_interval(secs => %(seconds)s)
) AS started

-- insert_purge_run --
-- Record a run as it starts (outcome 'running'; progress is updated after every batch); a run a person started is audited in the same statement.
WITH run AS (
    INSERT INTO idemdash.purge_run (table_name, dry_run, started_by)
    VALUES (%(table)s, %(dry_run)s, %(started_by)s)
    RETURNING run_id, table_name, dry_run, started_by, outcome
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, detail)
    SELECT started_by, CASE WHEN dry_run THEN 'purge-dry-run:' ELSE 'purge:' END || table_name,
           jsonb_build_object('run_id', run_id, 'table', table_name, 'dry_run', dry_run, 'outcome', outcome)
    FROM run
    WHERE %(audited)s
)
SELECT run_id FROM run

-- insert_skipped_purge_run --
-- Record a run that did not start because another runner holds the table's lock (audited when a person started it).
WITH run AS (
    INSERT INTO idemdash.purge_run (table_name, dry_run, started_by, outcome, finished_at, error)
    SELECT %(table)s, %(dry_run)s, %(started_by)s, 'skipped', clock_timestamp(),
           'another purge of this table is running'
           || coalesce(' (run ' || (SELECT max(r.run_id) FROM idemdash.purge_run r
                                    WHERE r.table_name = %(table)s AND r.outcome = 'running')::text || ')', '')
    RETURNING run_id, table_name, dry_run, started_by, outcome, error
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, detail)
    SELECT started_by, CASE WHEN dry_run THEN 'purge-dry-run:' ELSE 'purge:' END || table_name,
           jsonb_build_object('run_id', run_id, 'table', table_name, 'dry_run', dry_run, 'outcome', outcome,
                              'error', error)
    FROM run
    WHERE %(audited)s
)
SELECT run_id, error FROM run

-- get_purge_cancel --
-- Between batches, on the lock-holding connection: who asked to cancel this run, if anyone (a round trip that also proves the connection, and so the lock, is still there).
SELECT cancel_requested_by FROM idemdash.purge_run WHERE run_id = %(run_id)s

-- request_purge_cancel --
-- Ask a running run to stop after its current batch (it reads this between batches); audited in the same statement. No row: the run is not running.
WITH asked AS (
    UPDATE idemdash.purge_run
    SET cancel_requested_by = coalesce(cancel_requested_by, %(actor)s),
        cancel_requested_at = coalesce(cancel_requested_at, clock_timestamp())
    WHERE run_id = %(run_id)s AND outcome = 'running'
    RETURNING run_id, table_name, cancel_requested_by, cancel_requested_at
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail)
    SELECT %(actor)s, 'purge-cancel:' || a.table_name, NULL, NULL, 'running', 'cancelled', %(reason)s, '[]'::jsonb,
           jsonb_build_object('run_id', a.run_id)
    FROM asked a
    RETURNING audit_id
)
SELECT a.run_id, a.table_name, a.cancel_requested_by, a.cancel_requested_at, (SELECT audit_id FROM audit) AS audit_id
FROM asked a

-- finish_purge_run --
-- Close a run: its outcome, end time and error (batches and rows were kept current batch by batch). A run that found no batch left after someone asked it to stop (the cancel came while its last batch ran) says so: the row lock orders this against request_purge_cancel, which changes only a running run.
UPDATE idemdash.purge_run
SET outcome = %(outcome)s, finished_at = clock_timestamp(),
    error = CASE WHEN %(outcome)s = 'succeeded' AND cancel_requested_by IS NOT NULL AND %(error)s::text IS NULL
                 THEN 'the cancel asked by ' || cancel_requested_by || ' came after the last batch: nothing was left '
                      || 'to stop, ' || batches || ' batch(es) and ' || rows_deleted || ' row(s) in all'
                 ELSE %(error)s END
WHERE run_id = %(run_id)s

-- insert_unrecorded_purge_run --
-- Record late a run that failed because it could not reach the database, with its own times; never twice.
INSERT INTO idemdash.purge_run (table_name, dry_run, started_by, started_at, finished_at, outcome, error)
SELECT %(table)s::text, %(dry_run)s, %(started_by)s::text, %(started_at)s::timestamptz,
       %(finished_at)s::timestamptz, 'failed', %(error)s::text
WHERE NOT EXISTS (
    -- a flush whose commit was lost with its connection may come again: the same run is the same start
    SELECT 1 FROM idemdash.purge_run r
    WHERE r.table_name = %(table)s::text
      AND r.started_at = %(started_at)s::timestamptz
      AND r.started_by = %(started_by)s::text)
RETURNING run_id

-- finish_unrecorded_purge_run --
-- Close late a run whose outcome could not be written when it ended (the database went away under it).
UPDATE idemdash.purge_run
SET outcome = %(outcome)s, finished_at = %(finished_at)s::timestamptz, error = %(error)s
WHERE run_id = %(run_id)s
  AND outcome = 'running'
RETURNING run_id

-- set_purge_timeouts --
-- SET LOCAL statement_timeout and lock_timeout for one purge batch's transaction.
SELECT set_config('statement_timeout', %(statement_ms)s, true), set_config('lock_timeout', %(lock_ms)s, true)

-- set_purge_run_method --
-- How a run's batches find their rows: 'due_index' (an index of due rows, in due order), 'heap' (page ranges of a table mostly due) or 'primary_key' (a walk of the whole key).
UPDATE idemdash.purge_run SET method = %(method)s WHERE run_id = %(run_id)s

-- delete_old_purge_runs --
-- idemdash's own retention: finished runs of one table older than the retention, a bounded number a call; the latest successful purge and dry run stay (/purges shows them).
WITH keep AS (
    SELECT max(run_id) AS run_id FROM idemdash.purge_run
    WHERE table_name = %(table)s AND outcome = 'succeeded' GROUP BY dry_run
), old AS (
    SELECT r.run_id FROM idemdash.purge_run r
    WHERE r.table_name = %(table)s
      AND r.outcome <> 'running'
      AND r.started_at < now() - make_interval(days => %(retention_days)s)
      AND r.run_id NOT IN (SELECT run_id FROM keep)
      -- a partition detached by a run that died before dropping it: the next run needs that record
      AND NOT EXISTS (SELECT 1 FROM idemdash.purge_partition p WHERE p.run_id = r.run_id AND p.action = 'detached')
    ORDER BY r.started_at
    LIMIT %(limit)s
), gone AS (
    DELETE FROM idemdash.purge_run WHERE run_id IN (SELECT run_id FROM old) RETURNING 1
)
SELECT count(*)::int AS deleted FROM gone

-- list_delete_settings --
-- The server settings that decide how much WAL a purge's deletes write: full-page image compression and how far apart checkpoints are.
SELECT name, setting, unit, coalesce(enumvals, ARRAY[]::text[]) AS choices, boot_val AS default_value,
       source
FROM pg_catalog.pg_settings
WHERE name IN ('wal_compression', 'checkpoint_timeout', 'max_wal_size', 'full_page_writes')
ORDER BY name

-- fix_wal_compression --
-- The statements that have the server compress full-page images in the WAL (shown, never run by idemdash).
ALTER SYSTEM SET wal_compression = {method};
SELECT pg_reload_conf()

-- fix_checkpoint_spacing --
-- The statements that space checkpoints further apart, so fewer changes log a whole page (shown, never run by idemdash).
ALTER SYSTEM SET checkpoint_timeout = {timeout};
ALTER SYSTEM SET max_wal_size = {wal_size};
SELECT pg_reload_conf()
