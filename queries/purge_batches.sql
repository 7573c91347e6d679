-- delete_expired_keys --
-- One purge batch: expired terminal keys in the order they expired (expires_at, then the key) after the cursor, through the index of due keys, locked rows skipped; records progress.
-- Never processing or failed_retryable, nor a key an operator decided on within the replay horizon. The cursor (after_1, after_2, after_3) is the last row of the previous batch: the scan starts there and stops at now().
WITH doomed AS (
    SELECT ctid AS row_id, expires_at, idempotency_scope, idempotency_key
    FROM {keys}
    WHERE status IN ('succeeded', 'failed_final')
      AND expires_at < now()
      AND NOT EXISTS (
          -- an operator decided on this key within the replay horizon: a client's retry may still need it
          SELECT 1 FROM idemdash.audit_log a
          WHERE a.scope = {keys}.idempotency_scope AND a.key = {keys}.idempotency_key
            AND a.action LIKE 'reclassify%%'
            AND a.at > now() - make_interval(secs => %(replay_horizon_seconds)s))
      AND (%(after_1)s::timestamptz IS NULL
           OR (expires_at, idempotency_scope, idempotency_key)
              > (%(after_1)s::timestamptz, %(after_2)s::text, %(after_3)s::text))
    ORDER BY expires_at, idempotency_scope, idempotency_key
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above; the predicate again, so nothing that stopped
    -- qualifying can go
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
       last.expires_at AS after_1, last.idempotency_scope AS after_2, last.idempotency_key AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT expires_at, idempotency_scope, idempotency_key FROM doomed
    ORDER BY expires_at DESC, idempotency_scope DESC, idempotency_key DESC
    LIMIT 1
) last ON true

-- count_expired_keys --
-- Dry-run chunk: how many keys the purge would delete, counted in the order they expired after the cursor; records progress.
WITH chunk AS (
    SELECT expires_at, idempotency_scope, idempotency_key
    FROM {keys}
    WHERE status IN ('succeeded', 'failed_final')
      AND expires_at < now()
      AND NOT EXISTS (
          -- an operator decided on this key within the replay horizon: a client's retry may still need it
          SELECT 1 FROM idemdash.audit_log a
          WHERE a.scope = {keys}.idempotency_scope AND a.key = {keys}.idempotency_key
            AND a.action LIKE 'reclassify%%'
            AND a.at > now() - make_interval(secs => %(replay_horizon_seconds)s))
      AND (%(after_1)s::timestamptz IS NULL
           OR (expires_at, idempotency_scope, idempotency_key)
              > (%(after_1)s::timestamptz, %(after_2)s::text, %(after_3)s::text))
    ORDER BY expires_at, idempotency_scope, idempotency_key
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken,
       last.expires_at AS after_1, last.idempotency_scope AS after_2, last.idempotency_key AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT expires_at, idempotency_scope, idempotency_key FROM chunk
    ORDER BY expires_at DESC, idempotency_scope DESC, idempotency_key DESC
    LIMIT 1
) last ON true

-- delete_old_inbox_rows --
-- One purge batch: inbox rows processed more than the retention ago, oldest first (processed_at, then the key) after the cursor, through an index on processed_at, locked rows skipped; records progress.
WITH doomed AS (
    SELECT ctid AS row_id, processed_at, consumer_name, message_id
    FROM {inbox}
    WHERE processed_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::timestamptz IS NULL
           OR (processed_at, consumer_name, message_id)
              > (%(after_1)s::timestamptz, %(after_2)s::text, %(after_3)s::text))
    ORDER BY processed_at, consumer_name, message_id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above; the predicate again, so nothing that stopped
    -- qualifying can go
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
       last.processed_at AS after_1, last.consumer_name AS after_2, last.message_id AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT processed_at, consumer_name, message_id FROM doomed
    ORDER BY processed_at DESC, consumer_name DESC, message_id DESC
    LIMIT 1
) last ON true

-- count_old_inbox_rows --
-- Dry-run chunk: how many inbox rows the purge would delete, counted oldest first after the cursor; records progress.
WITH chunk AS (
    SELECT processed_at, consumer_name, message_id
    FROM {inbox}
    WHERE processed_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::timestamptz IS NULL
           OR (processed_at, consumer_name, message_id)
              > (%(after_1)s::timestamptz, %(after_2)s::text, %(after_3)s::text))
    ORDER BY processed_at, consumer_name, message_id
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken,
       last.processed_at AS after_1, last.consumer_name AS after_2, last.message_id AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT processed_at, consumer_name, message_id FROM chunk
    ORDER BY processed_at DESC, consumer_name DESC, message_id DESC
    LIMIT 1
) last ON true

-- delete_old_published_outbox_rows --
-- One purge batch: outbox rows published more than the retention ago, oldest publication first (published_at, then outbox_id) after the cursor, through an index on published_at, locked rows skipped; records progress.
-- Only status 'published' with published_at set: never pending or any other status.
WITH doomed AS (
    SELECT ctid AS row_id, published_at, outbox_id
    FROM {outbox}
    WHERE status = 'published'
      AND published_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::timestamptz IS NULL
           OR (published_at, outbox_id) > (%(after_1)s::timestamptz, %(after_2)s::uuid))
    ORDER BY published_at, outbox_id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above; the predicate again, so nothing that stopped
    -- qualifying can go
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
       last.published_at AS after_1, last.outbox_id AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT published_at, outbox_id FROM doomed ORDER BY published_at DESC, outbox_id DESC LIMIT 1
) last ON true

-- count_old_published_outbox_rows --
-- Dry-run chunk: how many outbox rows the purge would delete, counted oldest publication first after the cursor; records progress.
WITH chunk AS (
    SELECT published_at, outbox_id
    FROM {outbox}
    WHERE status = 'published'
      AND published_at < now() - make_interval(days => %(retention_days)s)
      AND (%(after_1)s::timestamptz IS NULL
           OR (published_at, outbox_id) > (%(after_1)s::timestamptz, %(after_2)s::uuid))
    ORDER BY published_at, outbox_id
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken,
       last.published_at AS after_1, last.outbox_id AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT published_at, outbox_id FROM chunk ORDER BY published_at DESC, outbox_id DESC LIMIT 1
) last ON true

-- explain_purge_batch --
-- The plan PostgreSQL would choose for one purge statement (does an index deliver the due rows in order?).
EXPLAIN (FORMAT JSON) {batch}

-- delete_expired_keys_by_key --
-- Fallback batch (no index of due keys): expired terminal keys (succeeded, failed_final) in primary-key order after the cursor, locked rows skipped; records progress.
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
       last.idempotency_scope AS after_1, last.idempotency_key AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT idempotency_scope, idempotency_key FROM doomed
    ORDER BY idempotency_scope DESC, idempotency_key DESC
    LIMIT 1
) last ON true

-- count_expired_keys_by_key --
-- Fallback dry-run chunk: how many keys the purge would delete, counted in primary-key order after the cursor; records progress.
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
       last.idempotency_scope AS after_1, last.idempotency_key AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT idempotency_scope, idempotency_key FROM chunk
    ORDER BY idempotency_scope DESC, idempotency_key DESC
    LIMIT 1
) last ON true

-- delete_old_inbox_rows_by_key --
-- Fallback batch (no index on processed_at): inbox rows processed more than the retention ago, in primary-key order after the cursor, locked rows skipped; records progress.
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
       last.consumer_name AS after_1, last.message_id AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT consumer_name, message_id FROM doomed
    ORDER BY consumer_name DESC, message_id DESC
    LIMIT 1
) last ON true

-- count_old_inbox_rows_by_key --
-- Fallback dry-run chunk: how many inbox rows the purge would delete, counted in primary-key order after the cursor; records progress.
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
       last.consumer_name AS after_1, last.message_id AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (
    SELECT consumer_name, message_id FROM chunk
    ORDER BY consumer_name DESC, message_id DESC
    LIMIT 1
) last ON true

-- delete_old_published_outbox_rows_by_key --
-- Fallback batch (no index on published_at): outbox rows published more than the retention ago, in outbox_id order after the cursor, locked rows skipped; records progress.
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
       last.outbox_id AS after_1, NULL::text AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (SELECT outbox_id FROM doomed ORDER BY outbox_id DESC LIMIT 1) last ON true

-- count_old_published_outbox_rows_by_key --
-- Fallback dry-run chunk: how many outbox rows the purge would delete, counted in outbox_id order after the cursor; records progress.
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
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken, last.outbox_id AS after_1, NULL::text AS after_2, NULL::text AS after_3
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (SELECT outbox_id FROM chunk ORDER BY outbox_id DESC LIMIT 1) last ON true
