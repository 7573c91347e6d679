-- list_purge_runs --
-- Purge runs newest first, optionally of one table, one run, one outcome or one starter; keyset on
-- (started_at, run_id) descending. The history is small (one row a run, pruned with the purge history's
-- retention), so the outcome and starter filters ride purge_run_started_idx (or purge_run_table_idx).
SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
       method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle,
       extract(epoch FROM coalesce(finished_at, now()) - started_at)::double precision AS duration_seconds
FROM idemdash.purge_run r
WHERE (%(table)s::text IS NULL OR r.table_name = %(table)s::text)
  AND (%(run_id)s::bigint IS NULL OR r.run_id = %(run_id)s::bigint)
  AND (%(outcome)s::text IS NULL OR r.outcome = %(outcome)s::text)
  AND (%(started_by)s::text IS NULL OR r.started_by = %(started_by)s::text)
  AND (NOT %(has_cursor)s OR (r.started_at, r.run_id) < (%(c_ts)s::timestamptz, %(c_id)s::bigint))
ORDER BY r.started_at DESC, r.run_id DESC
LIMIT %(limit)s

-- list_running_purge_runs --
-- Runs still in progress (outcome 'running'), oldest first: what the live progress panel shows.
SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
       method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle,
       extract(epoch FROM now() - started_at)::double precision AS duration_seconds
FROM idemdash.purge_run
WHERE outcome = 'running'
ORDER BY started_at, run_id
LIMIT %(limit)s

-- list_purge_table_runs --
-- Per table (kind says which): its latest run, latest real run that was not skipped, latest successful real purge,
-- latest successful dry run.
SELECT t.table_name AS table_key, 'last_run' AS kind, r.*
FROM unnest(%(tables)s::text[]) AS t(table_name)
CROSS JOIN LATERAL (
    SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
           method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle,
           extract(epoch FROM coalesce(finished_at, now()) - started_at)::double precision AS duration_seconds
    FROM idemdash.purge_run p
    WHERE p.table_name = t.table_name
    ORDER BY p.started_at DESC, p.run_id DESC
    LIMIT 1) r
UNION ALL
SELECT t.table_name, 'last_real_run', r.*
FROM unnest(%(tables)s::text[]) AS t(table_name)
CROSS JOIN LATERAL (
    SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
           method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle,
           extract(epoch FROM coalesce(finished_at, now()) - started_at)::double precision AS duration_seconds
    FROM idemdash.purge_run p
    WHERE p.table_name = t.table_name AND NOT p.dry_run AND p.outcome <> 'skipped'
    ORDER BY p.started_at DESC, p.run_id DESC
    LIMIT 1) r
UNION ALL
SELECT t.table_name, 'last_success', r.*
FROM unnest(%(tables)s::text[]) AS t(table_name)
CROSS JOIN LATERAL (
    SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
           method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle,
           extract(epoch FROM finished_at - started_at)::double precision AS duration_seconds
    FROM idemdash.purge_run p
    WHERE p.table_name = t.table_name AND p.outcome = 'succeeded' AND NOT p.dry_run
    ORDER BY p.started_at DESC, p.run_id DESC
    LIMIT 1) r
UNION ALL
SELECT t.table_name, 'last_dry_run', r.*
FROM unnest(%(tables)s::text[]) AS t(table_name)
CROSS JOIN LATERAL (
    SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
           method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle,
           extract(epoch FROM finished_at - started_at)::double precision AS duration_seconds
    FROM idemdash.purge_run p
    WHERE p.table_name = t.table_name AND p.outcome = 'succeeded' AND p.dry_run
    ORDER BY p.started_at DESC, p.run_id DESC
    LIMIT 1) r
