-- journey_keys_reference --
-- A journey's key: the (scope, key) pairs the text may mean, one primary-key probe each.
SELECT k.idempotency_scope AS scope, k.idempotency_key AS key, k.status::text AS status, k.claimed_by,
       k.attempt_count, k.created_at, k.updated_at, k.locked_until,
       (k.status::text = 'processing' AND coalesce(k.locked_until, k.claimed_at + make_interval(secs => %(lease_seconds)s)) < now()) AS stuck
FROM unnest(%(scopes)s::text[], %(keys)s::text[]) AS wanted(scope, key)
JOIN {keys} k ON k.idempotency_scope = wanted.scope AND k.idempotency_key = wanted.key
LIMIT %(limit)s

-- journey_sent_reference --
-- A journey's outbox rows: by outbox_id (the primary key), by aggregate_id (index_outbox_aggregate) and by the key that wrote them (the unique (scope, key, event_type)); one statement, three index probes.
SELECT outbox_id::text AS message_id, event_type, status::text AS status,
       CASE status::text WHEN 'published' THEN 'published' WHEN 'pending' THEN 'pending' WHEN 'parked' THEN 'parked'
            ELSE 'failed' END AS phase,
       attempt_count AS attempts, created_at, published_at, idempotency_scope AS scope, idempotency_key AS key,
       coalesce(payload ->> 'traceparent', payload -> 'headers' ->> 'traceparent',
                payload -> 'metadata' ->> 'traceparent') AS traceparent
FROM (
    SELECT o.* FROM {outbox} o WHERE o.outbox_id = ANY(%(uuids)s::uuid[])
    UNION
    SELECT o.* FROM {outbox} o WHERE o.aggregate_id = ANY(%(uuids)s::uuid[])
    UNION
    SELECT o.* FROM unnest(%(scopes)s::text[], %(keys)s::text[]) AS wanted(scope, key)
    JOIN {outbox} o ON o.idempotency_scope = wanted.scope AND o.idempotency_key = wanted.key
) found
ORDER BY created_at, outbox_id
LIMIT %(limit)s

-- journey_consumed_reference --
-- Inbox rows of the given message ids in every consumer: the consumers from a loose index scan of the primary key, then one primary-key probe per consumer and id.
WITH RECURSIVE {inbox_consumers_scan}
SELECT m.consumer_name AS consumer, m.message_id, m.processed_at AS received_at, m.processed_at AS consumed_at,
       'consumed' AS state
FROM (SELECT consumer_name FROM consumers WHERE consumer_name IS NOT NULL LIMIT %(max_consumers)s) c
CROSS JOIN unnest(%(ids)s::text[]) AS wanted(id)
JOIN {inbox} m ON m.consumer_name = c.consumer_name AND m.message_id = wanted.id
ORDER BY m.processed_at, m.consumer_name
LIMIT %(limit)s

-- routes_sent_reference --
-- Outbox rows published in the recent window, newest first (index_outbox_published), to learn which event types go where.
SELECT outbox_id::text AS message_id, event_type, status::text AS status, 'published' AS phase,
       attempt_count AS attempts, created_at, published_at, NULL::text AS scope, NULL::text AS key,
       NULL::text AS traceparent
FROM {outbox}
WHERE published_at >= %(since)s
ORDER BY published_at DESC
LIMIT %(limit)s

-- routes_consumed_reference --
-- Inbox rows consumed in the recent window, newest first (index_inbox_processed).
SELECT consumer_name AS consumer, message_id, processed_at AS received_at, processed_at AS consumed_at,
       'consumed' AS state
FROM {inbox}
WHERE processed_at >= %(since)s
ORDER BY processed_at DESC
LIMIT %(limit)s
