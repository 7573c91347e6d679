-- count_processing_keys --
-- Headline key counts that must be live: stuck (processing, lease run out), all processing, held for review, the oldest stuck lease.
-- Each number is one range of a partial index (processing keys by lease end; processing keys without a lease by
-- claim time), index-only, never a scan of the table.
SELECT
    (SELECT count(*) FROM {keys} WHERE status = 'processing' AND locked_until < now())
    + (SELECT count(*) FROM {keys}
       WHERE status = 'processing' AND locked_until IS NULL
         AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)) AS stuck,
    (SELECT count(*) FROM {keys} WHERE status = 'processing') AS processing,
    (SELECT count(*) FROM {keys} WHERE status = 'processing' AND claimed_by = {review_holder}) AS needs_review,
    (SELECT min(locked_until) FROM {keys} WHERE status = 'processing' AND locked_until < now()) AS oldest_stuck_lease

-- count_keys_by_window --
-- Headline key counts by status: failed_retryable and failed_final now, failed_final and succeeded in the last 24h.
-- Ranges of the (status, updated_at) index; at millions of keys the rollup job precomputes them (the key list's
-- failed_final tab then shows the stored count instead of counting 10,001 keys on each view).
SELECT
    (SELECT count(*) FROM {keys} WHERE status = 'failed_retryable') AS failed_retryable,
    (SELECT count(*) FROM {keys} WHERE status = 'failed_final') AS failed_final,
    (SELECT count(*) FROM {keys}
     WHERE status = 'failed_final' AND updated_at >= now() - interval '24 hours') AS failed_final_24h,
    (SELECT count(*) FROM {keys}
     WHERE status = 'succeeded' AND updated_at >= now() - interval '24 hours') AS succeeded_24h

-- get_outbox_backlog --
-- Pending outbox rows; the publisher's lag: the age of the oldest pending row that is not likely poison (fewer than
-- min_attempts delivery attempts: a poison row's age says nothing about how far behind the relay is); and the likely
-- poison rows counted apart, with the age of their oldest.
SELECT
    count(*) AS pending,
    min(created_at) AS oldest_pending_at,
    extract(epoch FROM now() - min(created_at) FILTER (WHERE attempt_count < %(min_attempts)s))::double precision
        AS lag_seconds,
    count(*) FILTER (WHERE attempt_count >= %(min_attempts)s) AS poison,
    min(created_at) FILTER (WHERE attempt_count >= %(min_attempts)s) AS oldest_poison_at,
    extract(epoch FROM now() - min(created_at) FILTER (WHERE attempt_count >= %(min_attempts)s))::double precision
        AS poison_oldest_seconds
FROM {outbox}
WHERE status = 'pending'

-- get_inbox_volume --
-- Inbox rows recorded in the last 24 hours and how many consumers wrote them.
SELECT
    count(*) AS rows_24h,
    count(DISTINCT consumer_name) AS consumers_24h
FROM {inbox}
WHERE processed_at >= now() - interval '24 hours'

-- count_stuck_keys_by_scope --
-- Stuck keys per scope, recorded by the snapshot job for /metrics (only processing rows are read: the partial index on processing keys serves it).
-- Two ranges instead of one OR: leases that ran out are an index-only range (scope is in the index); the few
-- keys without a lease need their claimed_at from the table.
SELECT scope, sum(stuck)::bigint AS stuck
FROM (
    SELECT idempotency_scope AS scope, count(*) AS stuck
    FROM {keys}
    WHERE status = 'processing' AND locked_until < now()
    GROUP BY idempotency_scope
    UNION ALL
    SELECT idempotency_scope, count(*)
    FROM {keys}
    WHERE status = 'processing' AND locked_until IS NULL
      AND claimed_at < now() - make_interval(secs => %(lease_seconds)s)
    GROUP BY idempotency_scope
) by_kind
GROUP BY scope
ORDER BY scope
LIMIT %(limit)s

-- list_recent_purge_runs --
-- The most recent purge runs of any table, newest first.
SELECT run_id, table_name, started_at, finished_at, batches, rows_deleted, dry_run, outcome, error, started_by,
       extract(epoch FROM coalesce(finished_at, now()) - started_at)::double precision AS duration_seconds,
       method, partitions_dropped
FROM idemdash.purge_run
ORDER BY started_at DESC, run_id DESC
LIMIT %(limit)s
