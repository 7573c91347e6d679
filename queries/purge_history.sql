-- list_purge_runs --
-- Purge runs newest first, optionally of one table, one run, one outcome or one starter; keyset on
-- (started_at, run_id) descending. The history is small (one row a run, pruned with the purge history's
-- retention), so the outcome and starter filters ride purge_run_started_idx (or purge_run_table_idx).
SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
       method, partitions_dropped, cancel_requested_by, latency_budget, probe_baseline_ms, probe_p99_ms, probes,
       backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs,
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
       backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs,
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
       backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs,
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
       backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs,
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
       backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs,
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
       backoffs, final_batch_size, final_duty_cycle, app_backends, lock_backoffs,
           extract(epoch FROM finished_at - started_at)::double precision AS duration_seconds
    FROM idemdash.purge_run p
    WHERE p.table_name = t.table_name AND p.outcome = 'succeeded' AND p.dry_run
    ORDER BY p.started_at DESC, p.run_id DESC
    LIMIT 1) r

-- list_purge_table_status --
-- Per table this database's purges ever ran on (the all-databases purges view, read by the background refresh): its
-- latest run, how many runs failed in the last 24 hours, and when the latest real purge succeeded. The tables come
-- from purge_run_table_idx by a loose index scan (one probe per table, however long the history), each table's
-- numbers from the same index.
WITH RECURSIVE tables(table_name) AS (
    (SELECT table_name FROM idemdash.purge_run ORDER BY table_name LIMIT 1)
    UNION ALL
    SELECT (SELECT p.table_name FROM idemdash.purge_run p WHERE p.table_name > t.table_name
            ORDER BY p.table_name LIMIT 1)
    FROM tables t
    WHERE t.table_name IS NOT NULL
)
SELECT r.run_id, r.table_name, r.started_at, r.finished_at, r.batches, r.rows_deleted, r.dry_run, r.outcome, r.error,
       r.started_by, extract(epoch FROM coalesce(r.finished_at, now()) - r.started_at)::double precision
       AS duration_seconds, r.method, r.partitions_dropped, r.cancel_requested_by,
       (SELECT count(*) FROM idemdash.purge_run f
        WHERE f.table_name = t.table_name AND f.started_at > now() - interval '24 hours' AND f.outcome = 'failed')
       AS failures_24h,
       (SELECT max(s.finished_at) FROM idemdash.purge_run s
        WHERE s.table_name = t.table_name AND s.outcome = 'succeeded' AND NOT s.dry_run) AS last_success_at
FROM tables t
CROSS JOIN LATERAL (
    SELECT * FROM idemdash.purge_run p
    WHERE p.table_name = t.table_name
    ORDER BY p.started_at DESC, p.run_id DESC
    LIMIT 1) r
WHERE t.table_name IS NOT NULL
ORDER BY t.table_name
