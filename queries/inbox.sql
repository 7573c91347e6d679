-- list_inbox_consumers --
-- Per consumer (at most limit, by name): rows in the last 1h / 24h / 7d, oldest and newest processed_at, oldest vs retention.
-- Consumers come from a loose index scan on the primary key (consumer_name, message_id); each one's numbers
-- from index range scans on (consumer_name, processed_at): the 7-day window, and the first and last row.
WITH RECURSIVE {inbox_consumers_scan},
shown AS (
    SELECT consumer_name
    FROM consumers
    WHERE consumer_name IS NOT NULL
      AND (%(consumer)s::text IS NULL OR strpos(lower(consumer_name), lower(%(consumer)s::text)) > 0)
    LIMIT %(limit)s
)
SELECT s.consumer_name,
       w.rows_1h,
       w.rows_24h,
       w.rows_7d,
       o.processed_at AS oldest_processed_at,
       extract(epoch FROM now() - o.processed_at)::double precision AS oldest_age_seconds,
       coalesce(o.processed_at < now() - make_interval(days => %(retention_days)s::integer), false) AS purge_overdue,
       n.processed_at AS newest_processed_at,
       extract(epoch FROM now() - n.processed_at)::double precision AS newest_age_seconds
FROM shown s
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE i.processed_at >= now() - interval '1 hour') AS rows_1h,
           count(*) FILTER (WHERE i.processed_at >= now() - interval '24 hours') AS rows_24h,
           count(*) AS rows_7d
    FROM {inbox} i
    WHERE i.consumer_name = s.consumer_name AND i.processed_at >= now() - interval '7 days'
) w
LEFT JOIN LATERAL (
    SELECT i.processed_at FROM {inbox} i
    WHERE i.consumer_name = s.consumer_name AND i.processed_at IS NOT NULL
    ORDER BY i.processed_at LIMIT 1
) o ON true
LEFT JOIN LATERAL (
    SELECT i.processed_at FROM {inbox} i
    WHERE i.consumer_name = s.consumer_name AND i.processed_at IS NOT NULL
    ORDER BY i.processed_at DESC LIMIT 1
) n ON true
ORDER BY s.consumer_name

-- get_inbox_totals --
-- Inbox rows of every consumer in the last 1h / 24h / 7d, the oldest and newest processed_at, oldest vs retention.
SELECT
    count(*) FILTER (WHERE processed_at >= now() - interval '1 hour') AS rows_1h,
    count(*) FILTER (WHERE processed_at >= now() - interval '24 hours') AS rows_24h,
    count(*) AS rows_7d,
    (SELECT min(processed_at) FROM {inbox}) AS oldest_processed_at,
    extract(epoch FROM now() - (SELECT min(processed_at) FROM {inbox}))::double precision AS oldest_age_seconds,
    coalesce((SELECT min(processed_at) FROM {inbox}) < now() - make_interval(days => %(retention_days)s::integer),
             false) AS purge_overdue,
    (SELECT max(processed_at) FROM {inbox}) AS newest_processed_at
FROM {inbox}
WHERE processed_at >= now() - interval '7 days'

-- inbox_consumers_scan --
-- The CTE "consumers": every consumer_name of the inbox, by a loose index scan of the primary key (consumer_name, message_id), one index descent per consumer (a trailing NULL row ends it).
consumers AS (
    (SELECT consumer_name FROM {inbox} ORDER BY consumer_name LIMIT 1)
    UNION ALL
    SELECT (SELECT i.consumer_name FROM {inbox} i
            WHERE i.consumer_name > c.consumer_name ORDER BY i.consumer_name LIMIT 1)
    FROM consumers c
    WHERE c.consumer_name IS NOT NULL
)
