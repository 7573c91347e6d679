-- journey_sent_pg_transactional_outbox --
-- pg-transactional-outbox: outbox rows by id (the primary key; the consumer's inbox row has the same id).
SELECT {id}::text AS message_id, {message_type} AS event_type,
       CASE WHEN {processed_at} IS NOT NULL THEN 'processed' WHEN {abandoned_at} IS NOT NULL THEN 'abandoned'
            ELSE 'waiting' END AS status,
       CASE WHEN {processed_at} IS NOT NULL THEN 'published' WHEN {abandoned_at} IS NOT NULL THEN 'failed'
            ELSE 'pending' END AS phase,
       {started_attempts}::int AS attempts, {created_at} AS created_at, {processed_at} AS published_at,
       NULL::text AS scope, NULL::text AS key,
       coalesce({metadata} ->> 'traceparent', {payload} ->> 'traceparent') AS traceparent
FROM {table} WHERE {id} = ANY(%(uuids)s::uuid[])
LIMIT %(limit)s

-- journey_consumed_pg_transactional_outbox --
-- pg-transactional-outbox: inbox rows by id (the primary key: the producer's message id).
SELECT NULL::text AS consumer, {id}::text AS message_id, {created_at} AS received_at, {processed_at} AS consumed_at,
       CASE WHEN {processed_at} IS NOT NULL THEN 'consumed' WHEN {abandoned_at} IS NOT NULL THEN 'failed'
            ELSE 'received' END AS state
FROM {table} WHERE {id} = ANY(%(uuids)s::uuid[])
LIMIT %(limit)s

-- routes_sent_pg_transactional_outbox --
-- pg-transactional-outbox: outbox rows processed (sent) in the recent window, newest first.
SELECT {id}::text AS message_id, {message_type} AS event_type, 'processed' AS status, 'published' AS phase,
       {started_attempts}::int AS attempts, {created_at} AS created_at, {processed_at} AS published_at,
       NULL::text AS scope, NULL::text AS key, NULL::text AS traceparent
FROM {table} WHERE {processed_at} >= %(since)s
ORDER BY {processed_at} DESC
LIMIT %(limit)s

-- routes_consumed_pg_transactional_outbox --
-- pg-transactional-outbox: inbox rows processed in the recent window, newest first.
SELECT NULL::text AS consumer, {id}::text AS message_id, {created_at} AS received_at, {processed_at} AS consumed_at,
       'consumed' AS state
FROM {table} WHERE {processed_at} >= %(since)s
ORDER BY {processed_at} DESC
LIMIT %(limit)s

-- journey_sent_masstransit --
-- MassTransit: outbox messages by MessageId (the advised index; a row exists until it is sent, then it is deleted).
SELECT {MessageId}::text AS message_id, {MessageType} AS event_type, 'waiting' AS status, 'pending' AS phase,
       NULL::int AS attempts, {SentTime} AS created_at, NULL::timestamptz AS published_at,
       NULL::text AS scope, NULL::text AS key,
       substring({Headers} from '"traceparent"\s*:\s*"([0-9a-f-]+)"') AS traceparent
FROM {table} WHERE {MessageId} = ANY(%(uuids)s::uuid[])
LIMIT %(limit)s

-- journey_consumed_masstransit --
-- MassTransit: inbox states by MessageId (the library's own unique (MessageId, ConsumerId)).
SELECT NULL::text AS consumer, {MessageId}::text AS message_id, {Received} AS received_at, {Consumed} AS consumed_at,
       CASE WHEN {Consumed} IS NOT NULL THEN 'consumed' ELSE 'received' END AS state
FROM {table} WHERE {MessageId} = ANY(%(uuids)s::uuid[])
LIMIT %(limit)s

-- routes_consumed_masstransit --
-- MassTransit: inbox states delivered in the recent window, newest first (the library's own index on Delivered).
SELECT NULL::text AS consumer, {MessageId}::text AS message_id, {Received} AS received_at, {Consumed} AS consumed_at,
       'consumed' AS state
FROM {table} WHERE {Delivered} >= %(since)s AND {Consumed} IS NOT NULL
ORDER BY {Delivered} DESC
LIMIT %(limit)s

-- journey_sent_wolverine --
-- Wolverine: outgoing envelopes by id (the primary key; a row exists until it is sent, then it is deleted).
SELECT {id}::text AS message_id, {message_type} AS event_type, 'outgoing' AS status, 'pending' AS phase,
       {attempts} AS attempts, NULL::timestamptz AS created_at, NULL::timestamptz AS published_at,
       NULL::text AS scope, NULL::text AS key, NULL::text AS traceparent
FROM {table} WHERE {id} = ANY(%(uuids)s::uuid[])
LIMIT %(limit)s

-- journey_consumed_wolverine --
-- Wolverine: incoming envelopes by id (the primary key: the envelope id the sender gave); Wolverine records no time of handling.
SELECT NULL::text AS consumer, {id}::text AS message_id, NULL::timestamptz AS received_at,
       NULL::timestamptz AS consumed_at,
       CASE {status} WHEN 'Handled' THEN 'consumed' ELSE 'received' END AS state
FROM {table} WHERE {id} = ANY(%(uuids)s::uuid[])
LIMIT %(limit)s

-- journey_sent_eventuate --
-- Eventuate: messages by id (the primary key); the destination channel stands for the event type.
SELECT {id} AS message_id, {destination} AS event_type,
       CASE WHEN {published} = 1 THEN 'published' ELSE 'unpublished' END AS status,
       CASE WHEN {published} = 1 THEN 'published' ELSE 'pending' END AS phase,
       NULL::int AS attempts, to_timestamp({creation_time} / 1000.0) AS created_at, NULL::timestamptz AS published_at,
       NULL::text AS scope, NULL::text AS key,
       substring({headers} from '"traceparent"\s*:\s*"([0-9a-f-]+)"') AS traceparent
FROM {table} WHERE {id} = ANY(%(ids)s::text[])
LIMIT %(limit)s

-- journey_consumed_eventuate --
-- Eventuate: received_messages by message_id (the advised index), in every consumer.
SELECT {consumer_id} AS consumer, {message_id} AS message_id, to_timestamp({creation_time} / 1000.0) AS received_at,
       to_timestamp({creation_time} / 1000.0) AS consumed_at, 'consumed' AS state
FROM {table} WHERE {message_id} = ANY(%(ids)s::text[])
LIMIT %(limit)s

-- journey_sent_cap --
-- CAP: published messages by the cap-msg-id header their Content carries (the advised expression index); Name is the topic.
SELECT substring({Content} from '"cap-msg-id"\s*:\s*"([^"]*)"') AS message_id, {Name} AS event_type,
       {StatusName} AS status,
       CASE {StatusName} WHEN 'Succeeded' THEN 'published' WHEN 'Failed' THEN 'failed' ELSE 'pending' END AS phase,
       {Retries} AS attempts, {Added} AT TIME ZONE %(library_zone)s AS created_at, NULL::timestamptz AS published_at,
       NULL::text AS scope, NULL::text AS key,
       substring({Content} from '"traceparent"\s*:\s*"([0-9a-f-]+)"') AS traceparent
FROM {table} WHERE substring({Content} from '"cap-msg-id"\s*:\s*"([^"]*)"') = ANY(%(ids)s::text[])
LIMIT %(limit)s

-- journey_consumed_cap --
-- CAP: received messages by the cap-msg-id header their Content carries (the advised expression index), each group a consumer.
SELECT {Group} AS consumer, substring({Content} from '"cap-msg-id"\s*:\s*"([^"]*)"') AS message_id,
       {Added} AT TIME ZONE %(library_zone)s AS received_at,
       CASE WHEN {StatusName} = 'Succeeded' THEN {Added} AT TIME ZONE %(library_zone)s END AS consumed_at,
       CASE {StatusName} WHEN 'Succeeded' THEN 'consumed' WHEN 'Failed' THEN 'failed' ELSE 'received' END AS state
FROM {table} WHERE substring({Content} from '"cap-msg-id"\s*:\s*"([^"]*)"') = ANY(%(ids)s::text[])
LIMIT %(limit)s
