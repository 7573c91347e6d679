-- library_demo_spring_history --
-- The Spring Modulith demo's history: %(n)s publications over the last %(days)s days, most completed a second after publication, a few failed, some left from v1 (NULL status, completed).
INSERT INTO {schema}.event_publication (id, listener_id, event_type, serialized_event, publication_date,
                                        completion_date, status, completion_attempts)
SELECT gen_random_uuid(), 'com.example.' || (ARRAY['Shipping', 'Billing', 'Mail'])[1 + i %% 3] || 'Listener.on',
       'com.example.' || (ARRAY['OrderPlaced', 'OrderPaid', 'OrderShipped'])[1 + i %% 3],
       '{{"order":' || i || '}}', p,
       CASE WHEN i %% 100 <> 0 THEN p + interval '1 second' END,
       CASE WHEN i %% 100 = 0 THEN 'FAILED' WHEN i %% 10 = 1 THEN NULL ELSE 'COMPLETED' END, 1
FROM (SELECT i, now() - make_interval(secs => random() * %(days)s * 86400) AS p
      FROM generate_series(1, %(n)s) AS i) s

-- library_demo_spring_publish --
-- The Spring Modulith demo's workload: %(n)s events published now, each to one listener.
INSERT INTO {schema}.event_publication (id, listener_id, event_type, serialized_event, publication_date, status,
                                        completion_attempts)
SELECT gen_random_uuid(), 'com.example.' || (ARRAY['Shipping', 'Billing', 'Mail'])[1 + (random() * 2)::int] ||
       'Listener.on', 'com.example.OrderPlaced', '{{"order":' || (random() * 100000)::int || '}}', now(), 'PUBLISHED', 0
FROM generate_series(1, %(n)s)

-- library_demo_spring_listen --
-- The Spring Modulith demo's listeners: published events a few seconds old are taken; most complete (COMPLETED with their completion_date, as the registry writes both at once), a few fail, and the Mail listener's sometimes hang (PROCESSING, a stuck publication).
WITH taken AS (
    SELECT id, CASE WHEN random() < 0.02 THEN 'FAILED'
                    WHEN listener_id LIKE '%%Mail%%' AND random() < 0.05 THEN 'PROCESSING'
                    ELSE 'COMPLETED' END AS outcome
    FROM {schema}.event_publication
    WHERE status = 'PUBLISHED' AND publication_date < now() - interval '3 seconds' LIMIT 100)
UPDATE {schema}.event_publication p
SET status = taken.outcome,
    completion_date = CASE WHEN taken.outcome = 'COMPLETED' THEN now() END,
    completion_attempts = p.completion_attempts + 1
FROM taken
WHERE p.id = taken.id

-- library_demo_masstransit_history --
-- The MassTransit demo's history: %(n)s inbox states over the last %(days)s days, delivered a second after they were received.
INSERT INTO {schema}."InboxState" ("MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount", "Consumed",
                                   "Delivered")
SELECT gen_random_uuid(), ('00000000-0000-0000-0000-00000000000' || (1 + i %% 3))::uuid, gen_random_uuid(), r, 1,
       r + interval '1 second', r + interval '1 second'
FROM (SELECT i, now() - make_interval(secs => random() * %(days)s * 86400) AS r
      FROM generate_series(1, %(n)s) AS i) s

-- library_demo_masstransit_receive --
-- The MassTransit demo's workload: %(n)s messages received now by one of three consumers.
INSERT INTO {schema}."InboxState" ("MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount")
SELECT gen_random_uuid(), ('00000000-0000-0000-0000-00000000000' || (1 + (random() * 2)::int))::uuid,
       gen_random_uuid(), now(), 1
FROM generate_series(1, %(n)s)

-- library_demo_masstransit_consume --
-- The MassTransit demo's consumers: messages a few seconds old are consumed and delivered; one in twenty faults (consumed never, received again) and stays undelivered.
UPDATE {schema}."InboxState"
SET "Consumed" = CASE WHEN random() < 0.95 THEN now() END,
    "Delivered" = CASE WHEN random() < 0.95 THEN now() END,
    "ReceiveCount" = "ReceiveCount" + 1
WHERE "Id" IN (SELECT "Id" FROM {schema}."InboxState"
               WHERE "Delivered" IS NULL AND "ReceiveCount" = 1 AND "Received" < now() - interval '3 seconds' LIMIT 100)

-- library_demo_brandur_history --
-- The Brandur-style keys demo's history: %(n)s keys over the last %(days)s days, nearly all finished.
INSERT INTO {schema}.idempotency_keys (created_at, idempotency_key, last_run_at, locked_at, request_method,
                                       request_params, request_path, recovery_point, user_id)
SELECT c, 'ride-' || i, c, NULL, 'POST', '{{}}', '/rides',
       CASE WHEN i %% 200 = 0 THEN 'charge_created' ELSE 'finished' END, 1 + i %% 50
FROM (SELECT i, now() - make_interval(secs => random() * %(days)s * 86400) AS c
      FROM generate_series(1, %(n)s) AS i) s

-- library_demo_brandur_request --
-- The Brandur-style keys demo's workload: %(n)s requests arrive now, each locking its new key.
INSERT INTO {schema}.idempotency_keys (created_at, idempotency_key, last_run_at, locked_at, request_method,
                                       request_params, request_path, recovery_point, user_id)
SELECT now(), 'ride-' || gen_random_uuid(), now(), now(), 'POST', '{{}}', '/rides', 'started',
       1 + (random() * 49)::int
FROM generate_series(1, %(n)s)

-- library_demo_brandur_finish --
-- The Brandur-style keys demo's API: requests a few seconds old finish and unlock; a few crash holding the lock (stuck once the lock timeout passes), a few stop at a recovery point (waiting for the completer).
UPDATE {schema}.idempotency_keys
SET recovery_point = CASE WHEN r < 0.03 THEN 'ride_created' WHEN r < 0.06 THEN 'charge_created' ELSE 'finished' END,
    locked_at = CASE WHEN r < 0.03 THEN locked_at END,
    last_run_at = now()
FROM (SELECT id AS picked, random() AS r FROM {schema}.idempotency_keys
      WHERE recovery_point = 'started' AND locked_at < now() - interval '3 seconds' LIMIT 100) p
WHERE id = p.picked

-- library_demo_wolverine_history --
-- The Wolverine demo's history: two live nodes (1 and 2; node 3 died without being cleaned up), %(n)s incoming envelopes over the last %(days)s days handled and kept 5 minutes (so purgeable now), a few still Incoming and owned by dead node 3 (stuck), Scheduled ones of a queue no node listens to any more (overdue), outgoing envelopes of node 3 never sent, and dead letters, a tenth of them marked replayable.
WITH nodes AS (
    INSERT INTO {schema}.wolverine_nodes (id, node_number, description, uri, started, health_check, version, capabilities)
    SELECT gen_random_uuid(), k, 'orders-' || k, 'tcp://orders-' || k || ':2201', now() - interval '2 days', now(),
           '3.0.0', ARRAY['wolverine://agents/durability']
    FROM generate_series(1, 2) AS k
), outgoing AS (
    INSERT INTO {schema}.wolverine_outgoing_envelopes (id, owner_id, destination, deliver_by, body, attempts, message_type)
    SELECT gen_random_uuid(), 3, 'rabbitmq://exchange/shipping', NULL, '\x7b7d'::bytea, 2, 'Shipping.ShipOrder'
    FROM generate_series(1, greatest(%(n)s / 2000, 1))
), dead AS (
    INSERT INTO {schema}.wolverine_dead_letters (id, execution_time, body, message_type, received_at, source,
                                                 exception_type, exception_message, sent_at, replayable)
    SELECT gen_random_uuid(), NULL, '\x7b7d'::bytea, 'Orders.CapturePayment', 'rabbitmq://queue/orders', 'orders',
           'System.TimeoutException', 'The payment gateway did not answer within 30 seconds', s,
           i %% 10 = 0
    FROM (SELECT i, now() - make_interval(secs => random() * %(days)s * 86400) AS s
          FROM generate_series(1, greatest(%(n)s / 200, 1)) AS i) t
)
INSERT INTO {schema}.wolverine_incoming_envelopes (id, status, owner_id, execution_time, attempts, body, message_type,
                                                   received_at, keep_until)
SELECT gen_random_uuid(),
       CASE WHEN i %% 500 = 0 THEN 'Incoming' WHEN i %% 700 = 0 THEN 'Scheduled' ELSE 'Handled' END,
       CASE WHEN i %% 500 = 0 THEN 3 ELSE 0 END,
       CASE WHEN i %% 500 <> 0 AND i %% 700 = 0 THEN r END, 1, '\x7b7d'::bytea,
       CASE WHEN i %% 500 <> 0 AND i %% 700 = 0 THEN 'Legacy.SendReminder' ELSE 'Orders.PlaceOrder' END,
       'rabbitmq://queue/orders', CASE WHEN i %% 500 <> 0 AND i %% 700 <> 0 THEN r + interval '5 minutes' END
FROM (SELECT i, now() - make_interval(secs => random() * %(days)s * 86400) AS r
      FROM generate_series(1, %(n)s) AS i) t

-- library_demo_wolverine_heartbeat --
-- The Wolverine demo's nodes: each live node writes its health check every tick, as Wolverine's node agent does.
UPDATE {schema}.wolverine_nodes SET health_check = now()

-- library_demo_wolverine_receive --
-- The Wolverine demo's listeners: %(n)s envelopes arrive now; most are owned by the live node that received them (Incoming), about one in six is persisted unowned (owner_id 0, any node may recover it), and about one in ten is a retry scheduled a few seconds ahead (Scheduled).
INSERT INTO {schema}.wolverine_incoming_envelopes (id, status, owner_id, execution_time, attempts, body, message_type,
                                                   received_at)
SELECT gen_random_uuid(), CASE WHEN r < 0.1 THEN 'Scheduled' ELSE 'Incoming' END,
       CASE WHEN r < 0.27 THEN 0 ELSE 1 + (random() * 1)::int END,
       CASE WHEN r < 0.1 THEN now() + make_interval(secs => 1 + random() * 4) END, CASE WHEN r < 0.1 THEN 1 ELSE 0 END,
       '\x7b7d'::bytea, (ARRAY['Orders.PlaceOrder', 'Orders.CapturePayment', 'Orders.ShipOrder'])[1 + (random() * 2)::int],
       'rabbitmq://queue/orders'
FROM (SELECT random() AS r FROM generate_series(1, %(n)s)) t

-- library_demo_wolverine_recover --
-- The Wolverine demo's durability agent: about a third of the unowned Incoming envelopes are taken by a live node each tick, and Scheduled envelopes that came due are moved to Incoming for a live node (the Legacy queue's are left: no node listens to it, so they stay overdue).
UPDATE {schema}.wolverine_incoming_envelopes
SET status = 'Incoming', owner_id = 1 + (random() * 1)::int, execution_time = NULL
WHERE (status = 'Incoming' AND owner_id = 0 AND random() < 0.35)
   OR (status = 'Scheduled' AND execution_time <= now() AND message_type <> 'Legacy.SendReminder')

-- library_demo_wolverine_handle --
-- The Wolverine demo's handlers: about half of the envelopes a live node owns are handled each tick and kept 5 minutes as the idempotency record (Handled, keep_until), so rows become purgeable 5 minutes after they were handled.
UPDATE {schema}.wolverine_incoming_envelopes
SET status = 'Handled', attempts = attempts + 1, keep_until = now() + interval '5 minutes'
WHERE status = 'Incoming' AND owner_id IN (SELECT node_number FROM {schema}.wolverine_nodes) AND random() < 0.5

-- library_demo_wolverine_fail --
-- The Wolverine demo's failures: an owned Incoming envelope fails for good now and then (about once in four ticks) and moves to the dead letters, as Wolverine's error policy does after its last attempt.
WITH failed AS (
    DELETE FROM {schema}.wolverine_incoming_envelopes
    WHERE id = (SELECT id FROM {schema}.wolverine_incoming_envelopes
                WHERE status = 'Incoming' AND owner_id IN (SELECT node_number FROM {schema}.wolverine_nodes) LIMIT 1)
      AND random() < 0.25
    RETURNING id, body, message_type, received_at, attempts
)
INSERT INTO {schema}.wolverine_dead_letters (id, execution_time, body, message_type, received_at, source,
                                             exception_type, exception_message, sent_at, replayable)
SELECT id, NULL, body, message_type, received_at, 'orders', 'System.InvalidOperationException',
       'Order ' || left(id::text, 8) || ' is in a state that does not allow ' || message_type, now(), false
FROM failed

-- library_demo_wolverine_send --
-- The Wolverine demo's senders: %(n)s outgoing envelopes are written by a live node now (its transactional outbox), and about two thirds of the live nodes' outgoing envelopes are sent and deleted each tick.
WITH sent AS (
    DELETE FROM {schema}.wolverine_outgoing_envelopes
    WHERE owner_id IN (SELECT node_number FROM {schema}.wolverine_nodes) AND random() < 0.65
)
INSERT INTO {schema}.wolverine_outgoing_envelopes (id, owner_id, destination, deliver_by, body, attempts, message_type)
SELECT gen_random_uuid(), 1 + (random() * 1)::int, 'rabbitmq://exchange/shipping', now() + interval '1 hour',
       '\x7b7d'::bytea, 0, 'Shipping.ShipOrder'
FROM generate_series(1, %(n)s)

-- library_demo_nservicebus_create_outbox --
-- The NServiceBus demo's outbox table: the installer's function (library_ddl_nservicebus) run for the prefix given (the profile's default table name, "OutboxData", has none) in the schema given.
SELECT pg_temp.create_outbox_table(%(prefix)s, %(schema)s)

-- library_demo_nservicebus_history --
-- The NServiceBus demo's history: %(n)s incoming messages over the last %(days)s days whose outgoing messages were dispatched (Dispatched, DispatchedAt a naive UTC time as NServiceBus writes it, Operations emptied) and a few whose dispatch never happened (still holding their operations).
INSERT INTO {schema}."OutboxData" ("MessageId", "Dispatched", "DispatchedAt", "PersistenceVersion", "Operations")
SELECT gen_random_uuid()::text, i %% 400 <> 0, CASE WHEN i %% 400 <> 0 THEN d END, '8.1.0',
       CASE WHEN i %% 400 <> 0 THEN '[]'::jsonb
            ELSE jsonb_build_array(jsonb_build_object('MessageId', gen_random_uuid(), 'Body', 'e30=',
                                                      'Headers', '{{}}'::jsonb, 'Options', '{{}}'::jsonb)) END
FROM (SELECT i, (now() AT TIME ZONE 'utc') - make_interval(secs => random() * %(days)s * 86400) AS d
      FROM generate_series(1, %(n)s) AS i) t

-- library_demo_nservicebus_handle --
-- The NServiceBus demo's handlers: %(n)s incoming messages handled now, each storing its outgoing operations in the outbox in the handler's transaction (not dispatched yet).
INSERT INTO {schema}."OutboxData" ("MessageId", "Dispatched", "PersistenceVersion", "Operations")
SELECT gen_random_uuid()::text, false, '8.1.0',
       jsonb_build_array(jsonb_build_object('MessageId', gen_random_uuid(), 'Body', 'e30=',
                                            'Headers', jsonb_build_object('NServiceBus.EnclosedMessageTypes',
                                                                          'Sales.OrderAccepted'),
                                            'Options', jsonb_build_object('Destination', 'Billing')))
FROM generate_series(1, %(n)s)

-- library_demo_nservicebus_dispatch --
-- The NServiceBus demo's dispatcher: about two thirds of the undispatched rows are dispatched each tick, as SetAsDispatched writes them: Dispatched, DispatchedAt from the UTC clock (a naive timestamp), Operations emptied.
UPDATE {schema}."OutboxData"
SET "Dispatched" = true, "DispatchedAt" = now() AT TIME ZONE 'utc', "Operations" = '[]'::jsonb
WHERE NOT "Dispatched" AND random() < 0.65

-- library_demo_eventuate_history --
-- The Eventuate demo's history: %(n)s messages over the last %(days)s days (creation_time in epoch milliseconds), all relayed by the CDC (published = 1), and the consuming service's received_messages for nine in ten of them.
WITH sent AS (
    INSERT INTO {schema}.message (id, destination, headers, payload, published, creation_time)
    SELECT lpad(to_hex(ms), 16, '0') || '-' || lpad(to_hex(i), 16, '0'), 'net.chrisrichardson.ftgo.orderservice.Order',
           '{{"PARTITION_ID":"' || i %% 50 || '","event-type":"OrderCreatedEvent","DATE":"' || ms || '"}}',
           '{{"orderId":' || i || '}}', 1, ms
    FROM (SELECT i, (extract(epoch FROM now() - make_interval(secs => random() * %(days)s * 86400)) * 1000)::bigint AS ms
          FROM generate_series(1, %(n)s) AS i) t
    RETURNING id, creation_time
)
INSERT INTO {schema}.received_messages (consumer_id, message_id, creation_time)
SELECT 'kitchenService', id, creation_time + 50 FROM sent WHERE random() < 0.9

-- library_demo_eventuate_send --
-- The Eventuate demo's producer: %(n)s messages written now in the application's transaction (published = 0, creation_time now in epoch milliseconds).
INSERT INTO {schema}.message (id, destination, headers, payload, published, creation_time)
SELECT lpad(to_hex(ms), 16, '0') || '-' || replace(gen_random_uuid()::text, '-', ''),
       'net.chrisrichardson.ftgo.orderservice.Order',
       '{{"event-type":"OrderCreatedEvent","DATE":"' || ms || '"}}', '{{"orderId":' || (random() * 100000)::int || '}}',
       0, ms
FROM generate_series(1, %(n)s), (SELECT (extract(epoch FROM now()) * 1000)::bigint AS ms) t

-- library_demo_eventuate_relay --
-- The Eventuate demo's CDC (its polling mode): about two thirds of the unpublished messages are relayed to the broker each tick and marked published = 1.
UPDATE {schema}.message SET published = 1 WHERE published = 0 AND random() < 0.65

-- library_demo_eventuate_consume --
-- The Eventuate demo's consumer: messages published in the last minute are received once each (received_messages, the consumer's deduplication record; a message already there is a duplicate and skipped).
INSERT INTO {schema}.received_messages (consumer_id, message_id, creation_time)
SELECT 'kitchenService', id, (extract(epoch FROM now()) * 1000)::bigint
FROM {schema}.message
WHERE published = 1 AND creation_time > (extract(epoch FROM now() - interval '1 minute') * 1000)::bigint
ON CONFLICT DO NOTHING

-- library_demo_pg_transactional_outbox_history --
-- The pg-transactional-outbox demo's history: %(n)s outbox messages over the last %(days)s days, nearly all processed a second after they were written, a few abandoned (poisonous: started 3 times, finished none), a few whose worker died holding them (stuck); each processed one delivered to the inbox, where nearly all were processed too and a few were abandoned or left stuck the same way.
WITH sent AS (
    INSERT INTO {schema}.outbox (id, aggregate_type, aggregate_id, message_type, payload, locked_until, created_at,
                                 processed_at, abandoned_at, started_attempts, finished_attempts)
    SELECT gen_random_uuid(), 'movie', (i %% 1000)::text, 'movie_created', jsonb_build_object('id', i), c + interval '5 seconds', c,
           CASE WHEN i %% 200 <> 0 AND i %% 500 <> 0 THEN c + interval '1 second' END,
           CASE WHEN i %% 200 = 0 THEN c + interval '1 minute' END,
           CASE WHEN i %% 200 = 0 THEN 3 ELSE 1 END, CASE WHEN i %% 200 = 0 OR i %% 500 = 0 THEN 0 ELSE 1 END
    FROM (SELECT i, now() - make_interval(secs => random() * %(days)s * 86400) AS c
          FROM generate_series(1, %(n)s) AS i) t
    RETURNING *
)
INSERT INTO {schema}.inbox (id, aggregate_type, aggregate_id, message_type, payload, locked_until, created_at,
                            processed_at, abandoned_at, started_attempts, finished_attempts)
SELECT id, aggregate_type, aggregate_id, message_type, payload, r + interval '5 seconds', r,
       CASE WHEN i %% 300 <> 0 AND i %% 700 <> 0 THEN r + interval '1 second' END,
       CASE WHEN i %% 300 = 0 THEN r + interval '1 minute' END,
       CASE WHEN i %% 300 = 0 THEN 3 ELSE 1 END, CASE WHEN i %% 300 = 0 OR i %% 700 = 0 THEN 0 ELSE 1 END
FROM (SELECT *, processed_at AS r, (payload ->> 'id')::int AS i FROM sent WHERE processed_at IS NOT NULL) delivered

-- library_demo_pg_transactional_outbox_write --
-- The pg-transactional-outbox demo's producer: %(n)s outbox messages written now in the application's transaction.
INSERT INTO {schema}.outbox (id, aggregate_type, aggregate_id, message_type, payload)
SELECT gen_random_uuid(), 'movie', (random() * 1000)::int::text, 'movie_created',
       jsonb_build_object('id', (random() * 100000)::int)
FROM generate_series(1, %(n)s)

-- library_demo_pg_transactional_outbox_take --
-- The pg-transactional-outbox demo's workers, outbox and inbox alike: unlocked unprocessed messages are taken with a 5-second lease (started_attempts + 1), stuck ones (lease run out, unfinished) only now and then; a message started 3 times without finishing is abandoned as poisonous, as the library does.
WITH outbox AS (
    UPDATE {schema}.outbox
    SET locked_until = CASE WHEN started_attempts - finished_attempts < 3 THEN now() + interval '5 seconds' ELSE locked_until END,
        started_attempts = started_attempts + CASE WHEN started_attempts - finished_attempts < 3 THEN 1 ELSE 0 END,
        abandoned_at = CASE WHEN started_attempts - finished_attempts >= 3 THEN now() END
    WHERE processed_at IS NULL AND abandoned_at IS NULL AND locked_until <= now()
      AND (started_attempts = finished_attempts OR random() < 0.1)
)
UPDATE {schema}.inbox
SET locked_until = CASE WHEN started_attempts - finished_attempts < 3 THEN now() + interval '5 seconds' ELSE locked_until END,
    started_attempts = started_attempts + CASE WHEN started_attempts - finished_attempts < 3 THEN 1 ELSE 0 END,
    abandoned_at = CASE WHEN started_attempts - finished_attempts >= 3 THEN now() END
WHERE processed_at IS NULL AND abandoned_at IS NULL AND locked_until <= now()
  AND (started_attempts = finished_attempts OR random() < 0.1)

-- library_demo_pg_transactional_outbox_finish --
-- The pg-transactional-outbox demo's handlers: about half of the outbox messages under a lease are sent each tick (processed, finished_attempts + 1) and each arrives in the inbox, unprocessed; a few are left unfinished until their lease runs out (a crashed worker: stuck until taken again).
WITH picked AS (
    SELECT id, random() AS r FROM {schema}.outbox
    WHERE processed_at IS NULL AND abandoned_at IS NULL AND locked_until > now() AND started_attempts > finished_attempts
      AND random() < 0.5
), outbox AS (
    UPDATE {schema}.outbox o SET processed_at = now(), finished_attempts = finished_attempts + 1
    FROM picked p WHERE o.id = p.id AND p.r >= 0.04
    RETURNING o.*
)
INSERT INTO {schema}.inbox (id, aggregate_type, aggregate_id, message_type, payload, created_at)
SELECT id, aggregate_type, aggregate_id, message_type, payload, now() FROM outbox

-- library_demo_pg_transactional_outbox_handle --
-- The pg-transactional-outbox demo's inbox handlers: about half of the inbox messages under a lease are handled each tick (processed, finished_attempts + 1); a few are left unfinished until their lease runs out (a crashed worker: stuck until taken again).
UPDATE {schema}.inbox SET processed_at = now(), finished_attempts = finished_attempts + 1
WHERE id IN (SELECT id FROM {schema}.inbox
             WHERE processed_at IS NULL AND abandoned_at IS NULL AND locked_until > now()
               AND started_attempts > finished_attempts AND random() < 0.5)
  AND random() >= 0.04

-- library_demo_debezium_history --
-- The Debezium outbox demo's history: %(n)s events an application wrote and left in the table (its rows are never updated; the connector reads them from the WAL and deletes nothing).
INSERT INTO {schema}.outboxevent (id, aggregatetype, aggregateid, type, payload)
SELECT gen_random_uuid(), (ARRAY['Order', 'Customer', 'Invoice'])[1 + i %% 3], (i %% 5000)::text,
       (ARRAY['OrderCreated', 'CustomerUpdated', 'InvoiceIssued'])[1 + i %% 3], jsonb_build_object('id', i %% 5000)
FROM generate_series(1, %(n)s) AS i

-- library_demo_debezium_emit --
-- The Debezium outbox demo's application: %(n)s events written now in its transactions, each an insert the connector reads from the WAL.
INSERT INTO {schema}.outboxevent (id, aggregatetype, aggregateid, type, payload)
SELECT gen_random_uuid(), 'Order', (random() * 5000)::int::text, 'OrderCreated',
       jsonb_build_object('id', (random() * 5000)::int)
FROM generate_series(1, %(n)s)

-- library_demo_debezium_clean --
-- The Debezium outbox demo's application cleanup: about one row in twenty of the table's newest is deleted each tick (as the Quarkus extension's remove-after-insert would delete them all), so the table's count rises and falls.
DELETE FROM {schema}.outboxevent
WHERE id IN (SELECT id FROM {schema}.outboxevent ORDER BY ctid DESC LIMIT 40) AND random() < 0.05

-- library_demo_dbos_history --
-- The DBOS demo's history, written once DBOS itself has created its tables and an executor of version v1 has registered it (workload/dbos_demo.py): v1 dated forty days back and v2 (the latest, since two days) registered for the demo's application, idemdash-demo (workload/dbos_app.py's name), %(n)s workflows of that application over the last %(days)s days of executors vm-1 and vm-2 with two steps, input and output each, nearly all SUCCESS (a few ERROR, CANCELLED or MAX_RECOVERY_ATTEMPTS_EXCEEDED; one in twenty the child of the one before), and left behind: PENDING workflows of version v1 (no launch of v2 recovers them), PENDING ones of executor vm-gone, silent for an hour, ENQUEUED ones of a queue nobody serves and DELAYED ones.
WITH old_version AS (
    UPDATE {schema}.application_versions
    SET version_timestamp = ((extract(epoch FROM now()) - %(days)s * 86400) * 1000)::bigint,
        created_at = ((extract(epoch FROM now()) - %(days)s * 86400) * 1000)::bigint
    WHERE version_name = 'v1'
), versions AS (
    INSERT INTO {schema}.application_versions (version_id, version_name, version_timestamp, created_at,
                                               application_name)
    SELECT gen_random_uuid()::text, 'v2', ((extract(epoch FROM now()) - 2 * 86400) * 1000)::bigint,
           ((extract(epoch FROM now()) - 2 * 86400) * 1000)::bigint, 'idemdash-demo'
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.application_versions WHERE version_name = 'v2')
), made AS (
    SELECT i, 'wf-' || i AS id,
           ((extract(epoch FROM now()) - random() * %(days)s * 86400) * 1000)::bigint AS at,
           CASE WHEN i %% 400 = 0 THEN 'ERROR' WHEN i %% 700 = 0 THEN 'CANCELLED'
                WHEN i %% 1900 = 0 THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'
                WHEN i %% 997 = 0 THEN 'PENDING' WHEN i %% 991 = 0 THEN 'ENQUEUED' WHEN i %% 983 = 0 THEN 'DELAYED'
                ELSE 'SUCCESS' END AS status
    FROM generate_series(1, %(n)s) AS i
), status AS (
    INSERT INTO {schema}.workflow_status (workflow_uuid, status, name, executor_id, application_version, queue_name,
                                          recovery_attempts, created_at, updated_at, started_at_epoch_ms, completed_at,
                                          parent_workflow_id, error, delay_until_epoch_ms, application_name)
    SELECT id, status, (ARRAY['checkout', 'refund', 'send_invoice'])[1 + i %% 3],
           CASE WHEN status IN ('ENQUEUED', 'DELAYED') THEN NULL WHEN status = 'PENDING' AND i %% 2 = 0 THEN 'vm-gone'
                ELSE 'vm-' || (1 + i %% 2) END,
           CASE WHEN status = 'PENDING' AND i %% 2 = 1 THEN 'v1' ELSE 'v2' END,
           CASE WHEN status IN ('ENQUEUED', 'DELAYED') THEN 'reports' END,
           CASE WHEN status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' THEN 100 ELSE 0 END,
           CASE WHEN status = 'PENDING' THEN ((extract(epoch FROM now()) - 3600) * 1000)::bigint ELSE at END,
           CASE WHEN status = 'PENDING' THEN ((extract(epoch FROM now()) - 3600) * 1000)::bigint ELSE at + 900 END,
           at, CASE WHEN status IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED') THEN at + 900 END,
           CASE WHEN i %% 20 = 0 AND status = 'SUCCESS' THEN 'wf-' || (i - 1) END,
           CASE WHEN status = 'ERROR' THEN 'PaymentDeclined: card expired' END,
           CASE WHEN status = 'DELAYED' THEN ((extract(epoch FROM now()) + 86400) * 1000)::bigint END,
           'idemdash-demo'
    FROM made
), steps AS (
    INSERT INTO {schema}.operation_outputs (workflow_uuid, function_id, function_name, output, started_at_epoch_ms,
                                            completed_at_epoch_ms)
    SELECT id, s, (ARRAY['reserve_stock', 'charge_card'])[s + 1], '"ok"', at + s * 400, at + s * 400 + 300
    FROM made, generate_series(0, 1) AS s
    WHERE status NOT IN ('ENQUEUED', 'DELAYED') AND (s = 0 OR status <> 'PENDING')
), inputs AS (
    INSERT INTO {schema}.workflow_input (workflow_uuid, inputs, retention_timestamp)
    SELECT id, '{{"positionalArgs": [' || i || '], "namedArgs": {{}}}}', at FROM made
)
INSERT INTO {schema}.workflow_output (workflow_uuid, output, error, retention_timestamp)
SELECT id, CASE WHEN status = 'SUCCESS' THEN '"done"' END,
       CASE WHEN status = 'ERROR' THEN 'PaymentDeclined: card expired' END, at + 900
FROM made WHERE status IN ('SUCCESS', 'ERROR')

-- library_demo_create_schema --
-- The library demo's schema (Wolverine's and Eventuate's are not public), made before the library's DDL as the library's own tooling makes it.
CREATE SCHEMA IF NOT EXISTS {schema}

-- library_demo_table_exists --
-- Whether the library demo's table is there already (its history is written only when it is new).
SELECT to_regclass(%(table)s) IS NOT NULL

-- library_demo_cap_history --
-- The CAP demo's history: %(n)s published and %(n)s received messages over the last %(days)s days, their times naive wall-clock times of the CAP host's zone (%(host_zone)s), as DateTime.Now writes them: nearly all Succeeded (ExpiresAt a day after: SucceedMessageExpiredAfter), some Failed with their retries spent or not (ExpiresAt 15 days after Added: FailedMessageExpiredAfter), some Delayed until later, and a few left behind by an instance that crashed: Scheduled since long ago, Queued past their publish time.
WITH published AS (
    INSERT INTO {schema}."published" ("Id", "Version", "Name", "Content", "Retries", "Added", "ExpiresAt", "StatusName")
    SELECT (random() * 9e18)::bigint, 'v1', (ARRAY['orders.created', 'orders.paid', 'orders.shipped'])[1 + i %% 3],
           '{{"Headers":{{}},"Value":{{}}}}', CASE s WHEN 'Failed' THEN CASE WHEN i / 200 %% 2 = 0 THEN 50 ELSE 3 END ELSE 0 END,
           a, CASE s WHEN 'Succeeded' THEN a + interval '2 seconds' + interval '1 day'
                     WHEN 'Failed' THEN a + interval '15 days'
                     WHEN 'Delayed' THEN h + interval '1 hour' * (1 + i %% 24)
                     WHEN 'Queued' THEN a + interval '30 seconds' END, s
    FROM (SELECT i, h, h - make_interval(secs => 600 + random() * %(days)s * 86400) AS a,
                 CASE WHEN i %% 200 = 0 THEN 'Failed' WHEN i %% 311 = 0 THEN 'Delayed' WHEN i %% 997 = 0 THEN 'Scheduled'
                      WHEN i %% 1009 = 0 THEN 'Queued' ELSE 'Succeeded' END AS s
          FROM generate_series(1, %(n)s) AS i, (SELECT now() AT TIME ZONE %(host_zone)s AS h) AS host) t
)
INSERT INTO {schema}."received" ("Id", "Version", "Name", "Group", "Content", "Retries", "Added", "ExpiresAt",
                                 "StatusName")
SELECT (random() * 9e18)::bigint, 'v1', (ARRAY['orders.created', 'orders.paid', 'orders.shipped'])[1 + i %% 3],
       (ARRAY['billing', 'shipping'])[1 + i %% 2], '{{"Headers":{{}},"Value":{{}}}}',
       CASE s WHEN 'Failed' THEN CASE WHEN i / 150 %% 2 = 0 THEN 50 ELSE 0 END ELSE 0 END,
       a, CASE s WHEN 'Succeeded' THEN a + interval '1 second' + interval '1 day'
                 WHEN 'Failed' THEN a + interval '15 days' END, s
FROM (SELECT i, h - make_interval(secs => 600 + random() * %(days)s * 86400) AS a,
             CASE WHEN i %% 150 = 0 THEN 'Failed' WHEN i %% 997 = 0 THEN 'Scheduled' ELSE 'Succeeded' END AS s
      FROM generate_series(1, %(n)s) AS i, (SELECT now() AT TIME ZONE %(host_zone)s AS h) AS host) t

-- library_demo_cap_publish --
-- The CAP demo's publishers: %(n)s messages stored now (Scheduled, as StoreMessageAsync writes them, Added from the host's clock in %(host_zone)s), one in five published with a delay: Queued when due within a minute, else Delayed (EnqueueToScheduler), ExpiresAt the publish time.
INSERT INTO {schema}."published" ("Id", "Version", "Name", "Content", "Retries", "Added", "ExpiresAt", "StatusName")
SELECT (random() * 9e18)::bigint, 'v1', (ARRAY['orders.created', 'orders.paid', 'orders.shipped'])[1 + i %% 3],
       '{{"Headers":{{}},"Value":{{}}}}', 0, h,
       CASE i %% 5 WHEN 0 THEN h + interval '30 seconds' WHEN 1 THEN h + interval '10 minutes' END,
       CASE i %% 5 WHEN 0 THEN 'Queued' WHEN 1 THEN 'Delayed' ELSE 'Scheduled' END
FROM generate_series(1, %(n)s) AS i, (SELECT now() AT TIME ZONE %(host_zone)s AS h) AS host

-- library_demo_cap_send --
-- The CAP demo's sender: of the messages stored in the last minute and of the Queued ones now due, most are sent (Succeeded, ExpiresAt a day from now: SetSuccessfulState), a few fail (Failed, Retries + 1, ExpiresAt 15 days after Added: SetFailedState); the rows a crashed instance left behind stay.
UPDATE {schema}."published" p
SET "StatusName" = o.s, "Retries" = p."Retries" + CASE o.s WHEN 'Failed' THEN 1 ELSE 0 END,
    "ExpiresAt" = CASE o.s WHEN 'Succeeded' THEN o.h + interval '1 day' ELSE p."Added" + interval '15 days' END
FROM (SELECT "Id", h, CASE WHEN random() < 0.9 THEN 'Succeeded' ELSE 'Failed' END AS s
      FROM {schema}."published", (SELECT now() AT TIME ZONE %(host_zone)s AS h) AS host
      WHERE ("StatusName" = 'Scheduled' AND "Added" > h - interval '1 minute' AND random() < 0.65)
         OR ("StatusName" = 'Queued' AND "ExpiresAt" <= h AND "Added" > h - interval '5 minutes')) o
WHERE p."Id" = o."Id"

-- library_demo_cap_receive --
-- The CAP demo's consumers: %(n)s messages received now by the billing and shipping groups (Scheduled, as StoreReceivedMessageAsync writes them, Added from the host's clock in %(host_zone)s).
INSERT INTO {schema}."received" ("Id", "Version", "Name", "Group", "Content", "Retries", "Added", "ExpiresAt",
                                 "StatusName")
SELECT (random() * 9e18)::bigint, 'v1', (ARRAY['orders.created', 'orders.paid', 'orders.shipped'])[1 + i %% 3],
       (ARRAY['billing', 'shipping'])[1 + i %% 2], '{{"Headers":{{}},"Value":{{}}}}', 0, h, NULL, 'Scheduled'
FROM generate_series(1, %(n)s) AS i, (SELECT now() AT TIME ZONE %(host_zone)s AS h) AS host

-- library_demo_cap_execute --
-- The CAP demo's subscribers: of the messages received in the last minute, most are executed (Succeeded, ExpiresAt a day from now), a few fail (Failed, Retries + 1, ExpiresAt 15 days after Added).
UPDATE {schema}."received" r
SET "StatusName" = o.s, "Retries" = r."Retries" + CASE o.s WHEN 'Failed' THEN 1 ELSE 0 END,
    "ExpiresAt" = CASE o.s WHEN 'Succeeded' THEN o.h + interval '1 day' ELSE r."Added" + interval '15 days' END
FROM (SELECT "Id", h, CASE WHEN random() < 0.9 THEN 'Succeeded' ELSE 'Failed' END AS s
      FROM {schema}."received", (SELECT now() AT TIME ZONE %(host_zone)s AS h) AS host
      WHERE "StatusName" = 'Scheduled' AND "Added" > h - interval '1 minute' AND random() < 0.65) o
WHERE r."Id" = o."Id"
