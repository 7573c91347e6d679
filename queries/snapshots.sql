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

-- count_key_changes_between --
-- What the keys table says happened in (since, until]: keys claimed (claimed_at in the interval; a key claimed twice
-- in one interval counts once), completed (succeeded) and failed (failed_retryable or failed_final) by updated_at in
-- the interval, less the keys an operator decided (a reclassification's audit row, written with the change, within
-- a second of it). A key claimed in the interval and finished after `until` still counts as claimed here; its
-- completion counts in the next interval. Ranges of the (status, updated_at) index: it reads the keys that changed.
SELECT
    count(*) FILTER (WHERE k.claimed_at > %(since)s::timestamptz AND k.claimed_at <= %(until)s::timestamptz)
        AS claims,
    count(*) FILTER (WHERE k.status::text = 'succeeded' AND k.updated_at <= %(until)s::timestamptz
                       AND NOT EXISTS (SELECT 1 FROM idemdash.audit_log a
                                       WHERE a.scope = k.idempotency_scope AND a.key = k.idempotency_key
                                         AND a.at BETWEEN k.updated_at - interval '1 second'
                                                      AND k.updated_at + interval '1 second'
                                         AND split_part(a.action, ':', 1) IN ('reclassify', 'reclassify-bulk')))
        AS completions,
    count(*) FILTER (WHERE k.status::text IN ('failed_retryable', 'failed_final')
                       AND k.updated_at <= %(until)s::timestamptz
                       AND NOT EXISTS (SELECT 1 FROM idemdash.audit_log a
                                       WHERE a.scope = k.idempotency_scope AND a.key = k.idempotency_key
                                         AND a.at BETWEEN k.updated_at - interval '1 second'
                                                      AND k.updated_at + interval '1 second'
                                         AND split_part(a.action, ':', 1) IN ('reclassify', 'reclassify-bulk')))
        AS failures
FROM {keys} k
WHERE k.status IN ('processing', 'succeeded', 'failed_retryable', 'failed_final')
  AND k.updated_at > %(since)s::timestamptz

-- insert_metric_snapshot --
-- Record one snapshot of the headline numbers, stamped with the transaction's start time.
INSERT INTO idemdash.metric_snapshot (taken_at, stuck_keys, processing_keys, failed_retryable_keys,
                                      failed_final_keys_24h, outbox_pending, outbox_lag_seconds, inbox_rows_24h,
                                      rows_purged, interval_seconds, claims, completions, failures,
                                      needs_review_keys, failed_keys, outbox_poison, outbox_poison_oldest_seconds,
                                      stuck_by_scope)
VALUES (%(taken_at)s, %(stuck_keys)s, %(processing_keys)s, %(failed_retryable_keys)s, %(failed_final_keys_24h)s,
        %(outbox_pending)s, %(outbox_lag_seconds)s, %(inbox_rows_24h)s, %(rows_purged)s, %(interval_seconds)s,
        %(claims)s, %(completions)s, %(failures)s, %(needs_review_keys)s, %(failed_keys)s, %(outbox_poison)s,
        %(outbox_poison_oldest_seconds)s, %(stuck_by_scope)s)
ON CONFLICT (taken_at) DO NOTHING
RETURNING {snapshot_columns}

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
-- (peaks kept for levels, sums for rows purged and for the keys claimed, completed and failed, whose rate per minute
-- is their sum over the seconds the merged snapshots counted; NULL where no snapshot of the point counted them);
-- fewer snapshots than that come back one per point.
SELECT min(taken_at) AS taken_at,
       max(taken_at) AS until,
       count(*)::integer AS snapshots,
       max(stuck_keys) AS stuck_keys,
       max(outbox_pending) AS outbox_pending,
       max(outbox_lag_seconds) AS outbox_lag_seconds,
       sum(rows_purged)::bigint AS rows_purged,
       sum(interval_seconds) FILTER (WHERE claims IS NOT NULL) AS interval_seconds,
       sum(claims)::bigint AS claims,
       sum(completions)::bigint AS completions,
       sum(failures)::bigint AS failures,
       (sum(claims) * 60 / nullif(sum(interval_seconds) FILTER (WHERE claims IS NOT NULL), 0))::double precision
           AS claims_per_minute,
       (sum(completions) * 60 / nullif(sum(interval_seconds) FILTER (WHERE claims IS NOT NULL), 0))::double precision
           AS completions_per_minute,
       (sum(failures) * 60 / nullif(sum(interval_seconds) FILTER (WHERE claims IS NOT NULL), 0))::double precision
           AS failures_per_minute
FROM (
    SELECT s.*, (row_number() OVER (ORDER BY taken_at) - 1) * %(max_points)s / count(*) OVER () AS bucket
    FROM idemdash.metric_snapshot s
    WHERE taken_at >= now() - make_interval(hours => %(hours)s)
) s
GROUP BY bucket
ORDER BY bucket

-- get_latest_snapshot --
-- The newest snapshot (its counts stand in for live counts that would be too slow to take on every page view).
SELECT {snapshot_columns}
FROM idemdash.metric_snapshot
ORDER BY taken_at DESC
LIMIT 1

-- get_snapshot_younger_than --
-- The newest snapshot if it was taken within max_age_seconds (what /metrics serves instead of counting the tables).
SELECT {snapshot_columns}
FROM idemdash.metric_snapshot
WHERE taken_at >= now() - make_interval(secs => %(max_age_seconds)s)
ORDER BY taken_at DESC
LIMIT 1

-- snapshot_columns --
-- Every column of a snapshot, in the order of queries/snapshots.py's Snapshot.
taken_at, stuck_keys, processing_keys, failed_retryable_keys, failed_final_keys_24h, outbox_pending, outbox_lag_seconds,
inbox_rows_24h, rows_purged, interval_seconds, claims, completions, failures, needs_review_keys, failed_keys,
outbox_poison, outbox_poison_oldest_seconds, stuck_by_scope
