-- count_keys_by_state --
-- Headline key counts: stuck (processing, lease run out), processing, failed in the last 24h.
SELECT
    count(*) FILTER (
        WHERE status = 'processing'
          AND (locked_until < now()
               OR (locked_until IS NULL AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)))
    ) AS stuck,
    count(*) FILTER (WHERE status = 'processing') AS processing,
    count(*) FILTER (WHERE status = 'failed_retryable') AS failed_retryable,
    count(*) FILTER (WHERE status = 'failed_final' AND updated_at >= now() - interval '24 hours') AS failed_final_24h,
    count(*) FILTER (WHERE status = 'succeeded' AND updated_at >= now() - interval '24 hours') AS succeeded_24h,
    min(locked_until) FILTER (WHERE status = 'processing' AND locked_until < now()) AS oldest_stuck_lease
FROM {keys}

-- get_outbox_backlog --
-- Pending outbox rows and the age of the oldest one (the publisher's lag).
SELECT
    count(*) AS pending,
    min(created_at) AS oldest_pending_at,
    extract(epoch FROM now() - min(created_at))::double precision AS lag_seconds
FROM {outbox}
WHERE status = 'pending'

-- get_inbox_volume --
-- Inbox rows recorded in the last 24 hours and how many consumers wrote them.
SELECT
    count(*) AS rows_24h,
    count(DISTINCT consumer_name) AS consumers_24h
FROM {inbox}
WHERE processed_at >= now() - interval '24 hours'

-- list_recent_purge_runs --
-- The most recent purge runs of any table, newest first.
SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by
FROM idemdash.purge_run
ORDER BY started_at DESC, run_id DESC
LIMIT %(limit)s
