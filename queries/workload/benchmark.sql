-- textbook_stuck_keys --
-- A textbook query, verbatim (docs/concepts.md, The four textbook queries): "Find active keys older than their lock horizon" (the benchmark's baseline for /keys?status=stuck).
SELECT *
FROM app.idempotency_request ir
WHERE ir.status = 'processing'
  AND ir.locked_until < clock_timestamp()
ORDER BY ir.locked_until

-- textbook_high_retry_commands --
-- A textbook query, verbatim (docs/concepts.md, The four textbook queries): "Find high retry commands" (the baseline for /hotspots).
SELECT *
FROM app.idempotency_request ir
WHERE ir.attempt_count >= 5
ORDER BY ir.attempt_count DESC, ir.updated_at DESC

-- textbook_suppression_by_scope --
-- A textbook query, verbatim (docs/concepts.md, The four textbook queries): "Find duplicate suppression rate by scope" (the baseline for /suppression).
SELECT
    ir.idempotency_scope,
    count(*) FILTER (WHERE ir.attempt_count = 1) AS first_attempt_count,
    count(*) FILTER (WHERE ir.attempt_count > 1) AS retried_count,
    max(ir.attempt_count) AS max_attempt_count
FROM app.idempotency_request ir
GROUP BY ir.idempotency_scope
ORDER BY retried_count DESC

-- textbook_pending_outbox --
-- A textbook query, verbatim (docs/concepts.md, The four textbook queries): "Find pending outbox rows" (the baseline for /outbox).
SELECT *
FROM app.outbox_event oe
WHERE oe.status = 'pending'
ORDER BY oe.created_at
LIMIT 100

-- analyze_app_tables --
-- Fresh statistics for the three application tables (after indexes were added or dropped).
ANALYZE {keys}, {inbox}, {outbox}

-- get_server_facts --
-- The database server the benchmark ran against: version and the settings that shape its numbers.
SELECT version() AS version,
       current_setting('shared_buffers') AS shared_buffers,
       current_setting('work_mem') AS work_mem,
       current_setting('effective_cache_size') AS effective_cache_size,
       current_setting('max_parallel_workers_per_gather') AS max_parallel_workers_per_gather,
       current_setting('jit') AS jit,
       current_setting('random_page_cost') AS random_page_cost

-- list_app_table_sizes --
-- Rows (planner estimate) and on-disk size, heap and indexes, of the three application tables.
SELECT c.relname AS table_name, c.reltuples::bigint AS estimated_rows,
       pg_relation_size(c.oid) AS heap_bytes, pg_indexes_size(c.oid) AS index_bytes
FROM pg_class c
WHERE c.oid IN (to_regclass(%(keys)s), to_regclass(%(inbox)s), to_regclass(%(outbox)s))
ORDER BY c.relname

-- get_sample_stuck_key_with_outbox --
-- A stuck key that has outbox rows (the key page with evidence), preferring one whose scope and key fit in a path.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key
FROM {keys} k
WHERE k.status = 'processing' AND k.locked_until < now()
  AND EXISTS (SELECT 1 FROM {outbox} o
              WHERE o.idempotency_scope = k.idempotency_scope AND o.idempotency_key = k.idempotency_key)
ORDER BY (strpos(k.idempotency_scope, '/') > 0) = %(path_safe)s, k.locked_until
LIMIT 1

-- get_sample_inbox_message --
-- One inbox message id (the header's search for a pasted message id): the first row of the primary key.
SELECT consumer_name AS consumer, message_id
FROM {inbox}
ORDER BY consumer_name, message_id
LIMIT 1

-- get_setting --
-- One server setting's current value (the benchmark's embedded server is tuned before it runs).
SELECT current_setting(%(name)s) AS value

-- alter_system_set --
-- Change one server setting for the benchmark's own embedded server (a restart applies it); name and value are composed.
ALTER SYSTEM SET {setting} = {value}

-- get_run_pacing --
-- What one purge run's latency pacer recorded (the pacer benchmark reads idemdash's own history).
SELECT probe_baseline_ms, probe_p99_ms, probes, backoffs, final_batch_size, final_duty_cycle, app_backends,
       lock_backoffs
FROM idemdash.purge_run WHERE run_id = %(run_id)s

-- list_client_waits --
-- What the pacer benchmark's clients' active backends are waiting for now (on CPU when nothing).
SELECT coalesce(wait_event_type || ':' || wait_event, 'on CPU') AS wait
FROM pg_stat_activity WHERE application_name LIKE 'pacer-bench-client-%%' AND state = 'active'

-- list_backends_of --
-- The backends of one application name (the pacer benchmark renices the purge's).
SELECT pid FROM pg_stat_activity WHERE application_name = %(application_name)s

-- insert_quiet_scope --
-- A scope that went quiet weeks ago beside the generated ones (page_bench --quiet-scope): keys that succeeded 50 days ago and one stuck with an outbox row, its lease ended before every generated stuck key's, so that it is the benchmark's sample key; rows already there are kept.
WITH old AS (
    INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, result_ref_type, result_ref_id,
                        response_body, claimed_by, claimed_at, locked_until, attempt_count, created_at, updated_at,
                        expires_at)
    SELECT %(scope)s, 'statement-' || g, md5(g::text), 'succeeded', 'statement', gen_random_uuid(),
           jsonb_build_object('id', gen_random_uuid(), 'status', 'ok', 'amount', g), 'worker-01',
           now() - interval '50 days', NULL, 1, now() - interval '50 days', now() - interval '50 days',
           now() + interval '30 days'
    FROM generate_series(1, %(keys)s) g
    ON CONFLICT DO NOTHING
    RETURNING 1
), stuck AS (
    INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, claimed_by, claimed_at,
                        locked_until, attempt_count, created_at, updated_at, expires_at)
    VALUES (%(scope)s, 'statement-stuck', md5('stuck'), 'processing', 'worker-01', now() - interval '45 days',
            now() - interval '45 days', 1, now() - interval '45 days', now() - interval '45 days',
            now() + interval '30 days')
    ON CONFLICT DO NOTHING
    RETURNING idempotency_scope, idempotency_key
)
INSERT INTO {outbox} (event_type, aggregate_type, aggregate_id, idempotency_scope, idempotency_key, payload)
SELECT 'statement.created', 'statement', gen_random_uuid(), s.idempotency_scope, s.idempotency_key,
       jsonb_build_object('amount', 1)
FROM stuck s

-- frontier_delete_pages --
-- The frontier benchmark's bare batch (benchmarks/frontier_bench.py): the due keys on heap pages first_page up to (not including) next_page deleted, nothing else (no row locks skipped, no progress row, no recheck); the rows it deleted.
WITH gone AS (
    DELETE FROM {keys}
    WHERE ctid >= %(first_tid)s::tid AND ctid < %(next_tid)s::tid
      AND status IN ('succeeded', 'failed_final') AND expires_at < now()
    RETURNING 1
)
SELECT count(*)::int FROM gone

-- set_session_setting --
-- One setting for the rest of the frontier benchmark's purge session (synchronous_commit, wal_compression); name and value are composed.
SET {setting} = {value}
