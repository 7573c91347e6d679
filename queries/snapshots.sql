-- try_snapshot_lock --
-- One snapshot writer at a time across scheduler replicas; released when the transaction ends.
SELECT pg_try_advisory_xact_lock(hashtextextended('idemdash.snapshot', 0)) AS locked

-- get_last_snapshot_at --
-- When the newest snapshot was taken (NULL before the first one).
SELECT max(taken_at) AS taken_at FROM idemdash.metric_snapshot

-- count_rows_purged_between --
-- Rows deleted by real (not dry) purge runs that finished in (since, until]: each run is counted once.
SELECT coalesce(sum(rows_deleted), 0)::bigint AS rows_purged
FROM idemdash.purge_run
WHERE NOT dry_run
  AND finished_at > %(since)s::timestamptz
  AND finished_at <= %(until)s::timestamptz

-- insert_metric_snapshot --
-- Record one snapshot of the headline numbers, stamped with the transaction's start time.
INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                                      failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h,
                                      rows_purged)
VALUES (%(taken_at)s, %(stuck_keys)s, %(processing_keys)s, %(failed_retryable_keys)s, %(failed_final_keys_24h)s,
        %(outbox_pending)s, %(outbox_lag_seconds)s, %(inbox_rows_24h)s, %(rows_purged)s)
ON CONFLICT (taken_at) DO NOTHING
RETURNING taken_at, stuck_keys, processing_keys, failed_retryable_keys, failed_final_keys_24h, outbox_pending,
          outbox_lag_seconds, inbox_rows_24h, rows_purged

-- delete_old_snapshots --
-- Drop the oldest snapshots past their retention, at most one batch per call (the job runs every minute).
DELETE FROM idemdash.metric_snapshot
WHERE taken_at IN (
    SELECT taken_at FROM idemdash.metric_snapshot
    WHERE taken_at < now() - make_interval(days => %(retention_days)s)
    ORDER BY taken_at
    LIMIT %(limit)s)

-- list_snapshot_trend --
-- Snapshots of the last hours, oldest first, merged into at most max_points buckets of consecutive snapshots
-- (peaks kept for levels, sums for rows purged); fewer snapshots than that come back one per point.
SELECT min(taken_at) AS taken_at,
       max(taken_at) AS until,
       count(*)::integer AS snapshots,
       max(stuck_keys) AS stuck_keys,
       max(outbox_pending) AS outbox_pending,
       max(outbox_lag_seconds) AS outbox_lag_seconds,
       sum(rows_purged)::bigint AS rows_purged
FROM (
    SELECT s.*, (row_number() OVER (ORDER BY taken_at) - 1) * %(max_points)s / count(*) OVER () AS bucket
    FROM idemdash.metric_snapshot s
    WHERE taken_at >= now() - make_interval(hours => %(hours)s)
) s
GROUP BY bucket
ORDER BY bucket

-- get_latest_snapshot --
-- The newest snapshot (its counts stand in for live counts that would be too slow to take on every page view).
SELECT taken_at, stuck_keys, processing_keys, failed_retryable_keys, failed_final_keys_24h, outbox_pending,
       outbox_lag_seconds, inbox_rows_24h, rows_purged
FROM idemdash.metric_snapshot
ORDER BY taken_at DESC
LIMIT 1
