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

-- check_purge_connection --
-- Round trip on the lock-holding connection between batches: if it is gone, so is the lock.
SELECT 1 AS ok

-- finish_purge_run --
-- Close a run: its outcome, end time and error (batches and rows were kept current batch by batch).
UPDATE idemdash.purge_run
SET outcome = %(outcome)s, finished_at = clock_timestamp(), error = %(error)s
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

-- delete_expired_keys --
-- One purge batch: expired terminal keys (succeeded, failed_final) in primary-key order after the cursor, locked rows skipped; records progress.
-- Never processing or failed_retryable, nor a key an operator decided on within the replay horizon. The cursor (after_1, after_2) is the last key of the previous batch.
WITH doomed AS (
    SELECT ctid AS row_id, idempotency_scope, idempotency_key
    FROM {keys}
    WHERE status IN ('succeeded', 'failed_final')
      AND expires_at < now()
      AND NOT EXISTS (
          -- an operator decided on this key within the replay horizon: a client's retry may still need it
          SELECT 1 FROM idemdash.audit_log a
          WHERE a.scope = {keys}.idempotency_scope AND a.key = {keys}.idempotency_key
            AND a.action LIKE 'reclassify%%'
            AND a.at > now() - make_interval(secs => %(replay_horizon_seconds)s))
      AND (%(after_1)s::text IS NULL
           OR (idempotency_scope, idempotency_key) > (%(after_1)s::text, %(after_2)s::text))
    ORDER BY idempotency_scope, idempotency_key
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above (a join on the key may be planned as a hash join
    -- over the whole table); the predicate again, so nothing that stopped qualifying can go
    DELETE FROM {keys}
    WHERE ctid = ANY (ARRAY(SELECT row_id FROM doomed))
      AND status IN ('succeeded', 'failed_final')
      AND expires_at < now()
    RETURNING 1
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM gone)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM gone)::int AS rows, (SELECT count(*) FROM doomed)::int AS taken,
       last.idempotency_scope AS after_1, last.idempotency_key AS after_2
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT idempotency_scope, idempotency_key FROM doomed
    ORDER BY idempotency_scope DESC, idempotency_key DESC
    LIMIT 1
) last ON true

-- count_expired_keys --
-- Dry-run chunk: how many keys the purge would delete, counted in primary-key order after the cursor; records progress.
WITH chunk AS (
    SELECT idempotency_scope, idempotency_key
    FROM {keys}
    WHERE status IN ('succeeded', 'failed_final')
      AND expires_at < now()
      AND NOT EXISTS (
          -- an operator decided on this key within the replay horizon: a client's retry may still need it
          SELECT 1 FROM idemdash.audit_log a
          WHERE a.scope = {keys}.idempotency_scope AND a.key = {keys}.idempotency_key
            AND a.action LIKE 'reclassify%%'
            AND a.at > now() - make_interval(secs => %(replay_horizon_seconds)s))
      AND (%(after_1)s::text IS NULL
           OR (idempotency_scope, idempotency_key) > (%(after_1)s::text, %(after_2)s::text))
    ORDER BY idempotency_scope, idempotency_key
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken,
       last.idempotency_scope AS after_1, last.idempotency_key AS after_2
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT idempotency_scope, idempotency_key FROM chunk
    ORDER BY idempotency_scope DESC, idempotency_key DESC
    LIMIT 1
) last ON true

-- delete_old_inbox_rows --
-- One purge batch: inbox rows processed more than the retention ago, in primary-key order after the cursor, locked rows skipped; records progress.
WITH doomed AS (
    SELECT ctid AS row_id, consumer_name, message_id
    FROM {inbox}
    WHERE processed_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::text IS NULL
           OR (consumer_name, message_id) > (%(after_1)s::text, %(after_2)s::text))
    ORDER BY consumer_name, message_id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above (a join on the key may be planned as a hash join
    -- over the whole table); the predicate again, so nothing that stopped qualifying can go
    DELETE FROM {inbox}
    WHERE ctid = ANY (ARRAY(SELECT row_id FROM doomed))
      AND processed_at < now() - make_interval(days => %(retention_days)s)
    RETURNING 1
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM gone)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM gone)::int AS rows, (SELECT count(*) FROM doomed)::int AS taken,
       last.consumer_name AS after_1, last.message_id AS after_2
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT consumer_name, message_id FROM doomed
    ORDER BY consumer_name DESC, message_id DESC
    LIMIT 1
) last ON true

-- count_old_inbox_rows --
-- Dry-run chunk: how many inbox rows the purge would delete, counted in primary-key order after the cursor; records progress.
WITH chunk AS (
    SELECT consumer_name, message_id
    FROM {inbox}
    WHERE processed_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::text IS NULL
           OR (consumer_name, message_id) > (%(after_1)s::text, %(after_2)s::text))
    ORDER BY consumer_name, message_id
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken,
       last.consumer_name AS after_1, last.message_id AS after_2
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT consumer_name, message_id FROM chunk
    ORDER BY consumer_name DESC, message_id DESC
    LIMIT 1
) last ON true

-- delete_old_published_outbox_rows --
-- One purge batch: outbox rows published more than the retention ago, in outbox_id order after the cursor, locked rows skipped; records progress.
-- Only status 'published' with published_at set: never pending or any other status.
WITH doomed AS (
    SELECT ctid AS row_id, outbox_id
    FROM {outbox}
    WHERE status = 'published'
      AND published_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::uuid IS NULL OR outbox_id > %(after_1)s::uuid)
    ORDER BY outbox_id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above (a join on the key may be planned as a hash join
    -- over the whole table); the predicate again, so nothing that stopped qualifying can go
    DELETE FROM {outbox}
    WHERE ctid = ANY (ARRAY(SELECT row_id FROM doomed))
      AND status = 'published'
      AND published_at < now() - make_interval(days => %(retention_days)s)
    RETURNING 1
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM gone)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM gone)::int AS rows, (SELECT count(*) FROM doomed)::int AS taken,
       last.outbox_id AS after_1, NULL::text AS after_2
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (SELECT outbox_id FROM doomed ORDER BY outbox_id DESC LIMIT 1) last ON true

-- count_old_published_outbox_rows --
-- Dry-run chunk: how many outbox rows the purge would delete, counted in outbox_id order after the cursor; records progress.
WITH chunk AS (
    SELECT outbox_id
    FROM {outbox}
    WHERE status = 'published'
      AND published_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::uuid IS NULL OR outbox_id > %(after_1)s::uuid)
    ORDER BY outbox_id
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken, last.outbox_id AS after_1, NULL::text AS after_2
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (SELECT outbox_id FROM chunk ORDER BY outbox_id DESC LIMIT 1) last ON true
