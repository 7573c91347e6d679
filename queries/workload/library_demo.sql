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
-- The Spring Modulith demo's listeners: published events a few seconds old are taken (PROCESSING); most complete, a few fail, and the Mail listener's sometimes hang (a stuck publication).
UPDATE {schema}.event_publication
SET status = CASE WHEN random() < 0.02 THEN 'FAILED'
                  WHEN listener_id LIKE '%%Mail%%' AND random() < 0.05 THEN 'PROCESSING'
                  ELSE 'COMPLETED' END,
    completion_date = CASE WHEN random() < 0.93 THEN now() END,
    completion_attempts = completion_attempts + 1
WHERE id IN (SELECT id FROM {schema}.event_publication
             WHERE status = 'PUBLISHED' AND publication_date < now() - interval '3 seconds' LIMIT 100)

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

-- library_demo_table_exists --
-- Whether the library demo's table is there already (its history is written only when it is new).
SELECT to_regclass(%(table)s) IS NOT NULL
