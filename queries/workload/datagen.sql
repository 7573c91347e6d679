-- create_datagen_functions --
-- Session-local (pg_temp) helpers of the data generator: a seeded hash per row and attribute, and the row's scope and key.
-- They are inlined SQL functions, so a 10M-row INSERT ... SELECT pays no call overhead, and they vanish with the session.
-- pg_temp.datagen_u(i, salt): a uniform number in [0, 1), a pure function of the row number (repeatable for a seed).
CREATE FUNCTION pg_temp.datagen_u(i bigint, salt bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT ((hashint8extended(i, salt) >> 11) & 9007199254740991)::double precision / 9007199254740992.0 $$;

-- 20 scopes with a power-law skew: the busiest gets about 37 % of the keys, the quietest under 2 %.
CREATE FUNCTION pg_temp.datagen_scope_index(i bigint, seed bigint) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT least(19, floor(20 * pg_temp.datagen_u(i, seed * 100 + 1) ^ 3)::integer) $$;

CREATE FUNCTION pg_temp.datagen_scope(s integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (ARRAY['create_order', 'capture_payment', 'send_invoice', 'refund', 'create_shipment',
                    'reserve_inventory', 'charge_subscription', 'send_email', 'send_sms', 'apply_coupon',
                    'update_address', 'cancel_order', 'issue_credit', 'sync_crm', 'export_ledger',
                    'create_customer', 'close_account', 'webhook/stripe', 'webhook/github', 'import_catalog'])[s + 1] $$;

CREATE FUNCTION pg_temp.datagen_event_type(s integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (ARRAY['order.created', 'payment.captured', 'invoice.sent', 'refund.issued', 'shipment.created',
                    'inventory.reserved', 'subscription.charged', 'email.sent', 'sms.sent', 'coupon.applied',
                    'address.updated', 'order.cancelled', 'credit.issued', 'crm.synced', 'ledger.exported',
                    'customer.created', 'account.closed', 'stripe.event.handled', 'github.event.handled',
                    'catalog.imported'])[s + 1] $$;

-- Keys of the shapes clients send: UUIDs mostly, then paths with slashes, prefixed ids, text with spaces and
-- non-ASCII letters, and a few long ones. Every shape embeds the row number (or its hash), so keys are unique.
-- u is pg_temp.datagen_u(i, seed * 100 + 2), computed once by the caller (an argument used several times
-- is only inlined when it is a plain column).
CREATE FUNCTION pg_temp.datagen_key(i bigint, seed bigint, u double precision) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE
    WHEN u < 0.70 THEN md5(seed::text || ':' || i)::uuid::text
    WHEN u < 0.80 THEN 'cart/' || i || '/checkout/' || (1 + mod(i, 3))
    WHEN u < 0.88 THEN 'ord_' || lpad(to_hex(mod(i * 2654435761, 1099511627776)), 10, '0')
    WHEN u < 0.93 THEN 'user ' || i || ' rüge ' || left(md5(seed::text || i), 6)
    WHEN u < 0.97 THEN 'invoice #' || i || ' für Müller'
    WHEN u < 0.99 THEN 'INV-2024/' || lpad(i::text, 9, '0') || '/retry'
    ELSE 'batch-' || repeat(md5(seed::text || ':' || i), 3) || '-' || i
END $$;

-- 50 workers, skewed: api-01 .. api-20 and worker-01 .. worker-30.
CREATE FUNCTION pg_temp.datagen_worker(w integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN w < 20 THEN 'api-' || lpad((w + 1)::text, 2, '0')
                  ELSE 'worker-' || lpad((w - 19)::text, 2, '0') END $$;

-- 50 consumers: ten services, five deployments each.
CREATE FUNCTION pg_temp.datagen_consumer(c integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (ARRAY['billing', 'shipping', 'analytics', 'notifications', 'fraud-check', 'ledger', 'search-indexer',
                    'crm-sync', 'loyalty', 'warehouse'])[1 + mod(c, 10)]
             || (ARRAY['', '-v2', '.eu', '.us', '-replay'])[1 + c / 10] $$

-- insert_generated_keys --
-- Synthetic idempotency keys lo .. hi-1 of n: exact status counts, skewed scopes and workers, time in row order.
-- Time follows the row number (created_at over 30 days), as an append-mostly table is laid out; the newest
-- (processing - stuck) rows are the active claims: long-running commands whose leases end 2 to 8 hours
-- from now (1 %% processing at a steady rate means hours in flight). For the
-- others, p = i * perm mod (n - active) visits every number below n - active once, so "p < stuck" holds for
-- exactly `stuck` rows, scattered over the 30 days, and likewise for each failed status.
INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, result_ref_type, result_ref_id,
                    response_body, failure_code, failure_message, claimed_by, claimed_at, locked_until,
                    attempt_count, created_at, updated_at, expires_at)
SELECT scope, key, md5(scope || '|' || key), state::{status_type},
       CASE WHEN state = 'succeeded' THEN split_part(pg_temp.datagen_event_type(s), '.', 1) END,
       CASE WHEN state = 'succeeded' THEN result_id END,
       CASE WHEN state = 'succeeded' AND %(response_bodies)s THEN jsonb_build_object('id', result_id, 'status', 'ok') END,
       CASE state WHEN 'failed_retryable' THEN 'upstream_timeout' WHEN 'failed_final' THEN 'card_declined' END,
       CASE state WHEN 'failed_retryable' THEN 'payment gateway did not answer within 10s'
                  WHEN 'failed_final' THEN 'issuer declined the card' END,
       claimed_by, claimed_at,
       CASE WHEN stuck_kind = 'lease' THEN claimed_at + (30 + floor(u_lease * 270)) * interval '1 second'
            WHEN stuck_kind = 'active' THEN now() + interval '2 hours' + u_lease * interval '6 hours' END,
       attempts, created_at,
       CASE WHEN state = 'processing' THEN claimed_at ELSE claimed_at + u_lease * interval '2 seconds' END,
       claimed_at + interval '1 minute'
           + (ARRAY[7, 3, 1, 2, 14, 1, 30, 1, 1, 3, 7, 7, 30, 1, 30, 14, 30, 2, 2, 1])[s + 1] * interval '1 day'
FROM (
    SELECT b.*,
           -- the last claim: earlier attempts were minutes apart, never later than a moment before now
           -- (a stuck key's claim ends at least 35 minutes before now, so even a 5-minute lease has run out)
           created_at + least((attempts - 1) * u_claim * interval '3 minutes',
                              CASE WHEN stuck_kind IN ('lease', 'null_lease') THEN now() - created_at - interval '35 minutes'
                                   ELSE (now() - created_at) * 0.9 END) AS claimed_at
    FROM (
        SELECT a.*,
               CASE WHEN stuck_kind IN ('lease', 'null_lease') THEN least(base_created, now() - interval '40 minutes')
                    ELSE base_created END AS created_at
        FROM (
            SELECT raw.*,
                   pg_temp.datagen_scope(s) AS scope,
                   pg_temp.datagen_key(i, %(seed)s::bigint, u_key) AS key,
                   CASE WHEN p < 0 THEN 'active'
                        WHEN p < %(stuck)s::bigint / 20 THEN 'null_lease'     -- locked_until NULL, claimed long ago
                        WHEN p < %(stuck)s::bigint THEN 'lease' END AS stuck_kind,
                   CASE WHEN p < %(stuck)s::bigint THEN 'processing'
                        WHEN p < %(stuck)s::bigint + %(failed_retryable)s::bigint THEN 'failed_retryable'
                        WHEN p < %(stuck)s::bigint + %(failed_retryable)s::bigint + %(failed_final)s::bigint THEN 'failed_final'
                        ELSE 'succeeded' END AS state,
                   now() - interval '30 days'
                       + (i + u_time) / %(n)s::bigint * (interval '30 days' - interval '2 minutes') AS base_created,
                   -- most commands run once; a tail needs 2-4 attempts; 1 %% are hotspots (5 and up)
                   CASE WHEN u_att < 0.91 THEN 1
                        WHEN u_att < 0.96 THEN 2
                        WHEN u_att < 0.98 THEN 3
                        WHEN u_att < 0.99 THEN 4
                        WHEN u_att < 0.998 THEN 5 + floor((u_att - 0.99) / 0.008 * 5)::integer
                        WHEN u_att < 0.9997 THEN 10 + floor((u_att - 0.998) / 0.0017 * 10)::integer
                        ELSE 20 + floor((u_att - 0.9997) / 0.0003 * 40)::integer END AS attempts
            FROM (
                SELECT i,
                       CASE WHEN i >= %(n)s::bigint - (%(processing)s::bigint - %(stuck)s::bigint) THEN -1
                            ELSE mod(i * %(perm)s::bigint, %(n)s::bigint - (%(processing)s::bigint - %(stuck)s::bigint))
                       END AS p,
                       pg_temp.datagen_scope_index(i, %(seed)s::bigint) AS s,
                       pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 2) AS u_key,
                       pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 3) AS u_att,
                       pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 4) AS u_time,
                       pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 5) AS u_claim,
                       pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 6) AS u_lease,
                       md5(%(seed)s::text || ':r:' || i)::uuid AS result_id,
                       pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 7) AS u_worker
                FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS i
                OFFSET 0
            ) raw
            OFFSET 0
        ) a
        OFFSET 0
    ) b
    OFFSET 0
) t
CROSS JOIN LATERAL (
    -- one worker in fifty claims 40 %% of the hotspot keys; a few rows come from a client that records no worker
    SELECT CASE WHEN u_worker < 0.002 THEN NULL
                WHEN attempts >= 5 AND u_worker < 0.4 THEN 'worker-07'
                ELSE pg_temp.datagen_worker(least(49, floor(50 * u_worker ^ 1.5)::integer)) END AS claimed_by
) w

-- insert_generated_inbox --
-- Synthetic inbox rows lo .. hi-1 of n over 50 skewed consumers; processed_at follows the row number over 29.5 days,
-- except three consumers whose purge lags (rows back to 40 days, past a 30-day retention).
INSERT INTO {inbox} (consumer_name, message_id, message_hash, processed_at, result_ref_type, result_ref_id)
SELECT pg_temp.datagen_consumer(c),
       CASE WHEN u_shape < 0.70 THEN md5(%(seed)s::text || ':m:' || i)::uuid::text
            WHEN u_shape < 0.90 THEN 'evt_' || i
            ELSE 'kafka:orders:' || mod(i, 12) || ':' || i END,
       md5(%(seed)s::text || ':h:' || i),
       now() - interval '10 seconds'
           - (1 - (i + 0.5) / %(n)s::bigint) * CASE WHEN mod(c, 17) = 3 THEN interval '40 days' ELSE interval '29.5 days' END,
       CASE WHEN mod(i, 3) = 0 THEN 'ledger_entry' END,
       CASE WHEN mod(i, 3) = 0 THEN md5(%(seed)s::text || ':l:' || i)::uuid END
FROM (
    SELECT i,
           least(49, floor(50 * pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 11) ^ 2)::integer) AS c,
           pg_temp.datagen_u(i, %(seed)s::bigint * 100 + 12) AS u_shape
    FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS i
    OFFSET 0
) raw

-- insert_generated_outbox --
-- Synthetic outbox rows lo .. hi-1 of n, one per key for every (n_keys / n)-th key, in the keys' time order. The
-- pending rows are the newest (the backlog of a publisher that fell behind: at 2.5 %% of 30 days, its last 18 hours,
-- at the end of the table as in a real one) plus 2 %% poison rows (3+ attempts, up to 2 days old) and the failed
-- ones, both scattered by a permutation of the older rows.
INSERT INTO {outbox} (outbox_id, event_type, aggregate_type, aggregate_id, idempotency_scope, idempotency_key,
                      payload, status, attempt_count, created_at, published_at)
SELECT md5(%(seed)s::text || ':o:' || o)::uuid,
       pg_temp.datagen_event_type(s),
       split_part(pg_temp.datagen_event_type(s), '.', 1),
       md5(%(seed)s::text || ':r:' || i)::uuid,
       pg_temp.datagen_scope(s),
       pg_temp.datagen_key(i, %(seed)s::bigint, u_key),
       jsonb_build_object('amount', round((5 + u_time * 495)::numeric, 2), 'currency', 'EUR'),
       state,
       CASE WHEN state = 'pending' AND q >= 0 THEN 3 + floor(u_att * 20)::integer
            WHEN state = 'pending' AND u_att > 0.9 THEN 1 + floor((u_att - 0.9) * 20)::integer
            WHEN state = 'failed' THEN 10
            ELSE 0 END,
       created_at,
       CASE WHEN state = 'published' THEN created_at + u_att * interval '3 seconds' END
FROM (
    SELECT r.*,
           CASE WHEN q < 0 OR q < %(pending)s::bigint / 50 THEN 'pending'
                WHEN q < %(pending)s::bigint / 50 + %(failed)s::bigint THEN 'failed'
                ELSE 'published' END AS state,
           CASE WHEN q >= 0 AND q < %(pending)s::bigint / 50 THEN now() - u_time * interval '2 days'
                ELSE now() - interval '30 days'
                     + (i + u_time) / %(n_keys)s::bigint * (interval '30 days' - interval '2 minutes') END AS created_at
    FROM (
        SELECT o,
               o * %(n_keys)s::bigint / %(n)s::bigint AS i,
               CASE WHEN o >= %(n)s::bigint - %(backlog)s::bigint THEN -1
                    ELSE mod(o * %(perm)s::bigint, %(n)s::bigint - %(backlog)s::bigint) END AS q,
               pg_temp.datagen_scope_index(o * %(n_keys)s::bigint / %(n)s::bigint, %(seed)s::bigint) AS s,
               pg_temp.datagen_u(o, %(seed)s::bigint * 100 + 21) AS u_time,
               pg_temp.datagen_u(o, %(seed)s::bigint * 100 + 22) AS u_att,
               pg_temp.datagen_u(o * %(n_keys)s::bigint / %(n)s::bigint, %(seed)s::bigint * 100 + 2) AS u_key
        FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS o
        OFFSET 0
    ) r
    OFFSET 0
) t

-- get_status_type --
-- The status column's type (an enum of the application's or text), so generated statuses are cast to it.
SELECT n.nspname AS type_schema, t.typname AS type_name
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE a.attrelid = to_regclass(%(table)s) AND a.attname = 'status' AND NOT a.attisdropped

-- count_generated_rows --
-- Rows in each of the three application tables (the generator refuses to add to non-empty tables).
SELECT (SELECT count(*) FROM {keys}) AS keys,
       (SELECT count(*) FROM {inbox}) AS inbox,
       (SELECT count(*) FROM {outbox}) AS outbox

-- truncate_generated_tables --
-- Empty the three application tables before generating (only with --replace: a benchmark database).
TRUNCATE {keys}, {inbox}, {outbox}

-- vacuum_analyze_keys --
-- Set the visibility map (index-only scans) and statistics of the keys table, as autovacuum would after a load.
VACUUM (ANALYZE) {keys}

-- vacuum_analyze_inbox --
-- Set the visibility map and statistics of the inbox table.
VACUUM (ANALYZE) {inbox}

-- vacuum_analyze_outbox --
-- Set the visibility map and statistics of the outbox table.
VACUUM (ANALYZE) {outbox}

-- set_datagen_session --
-- The load can be re-created from its seed: commits need not wait for the WAL flush.
SET synchronous_commit = off

-- count_missing_app_tables --
-- How many of the three application tables do not exist yet (the generator then creates the reference schema).
SELECT count(*) FILTER (WHERE to_regclass(name) IS NULL) AS missing
FROM unnest(ARRAY[%(keys)s::text, %(inbox)s::text, %(outbox)s::text]) AS t (name)

-- list_deferrable_constraints --
-- The primary keys and unique constraints of the three application tables that no foreign key depends on, with their definitions: a large load drops them first and adds them back after (one sorted build instead of a B-tree grown by random inserts).
SELECT c.conrelid::regclass::text AS relation, c.conname AS name, pg_get_constraintdef(c.oid) AS definition
FROM pg_constraint c
WHERE c.conrelid = ANY (ARRAY[%(keys)s::regclass, %(inbox)s::regclass, %(outbox)s::regclass])
  AND c.contype IN ('p', 'u')
  AND NOT EXISTS (SELECT FROM pg_constraint f WHERE f.contype = 'f' AND f.confrelid = c.conrelid)
ORDER BY c.conrelid::regclass::text, c.conname

-- drop_constraint --
-- Drop one constraint listed by list_deferrable_constraints (its index goes with it).
ALTER TABLE {relation} DROP CONSTRAINT {constraint_name}

-- add_constraint --
-- Add a dropped constraint back by its definition (pg_get_constraintdef), building its index in one sort.
ALTER TABLE {relation} ADD CONSTRAINT {constraint_name} {definition}

-- get_deferred_record --
-- The table in which a load keeps the constraints it dropped until it has added them back (see create_deferred_record), if there is one.
SELECT to_regclass(%(record)s) IS NOT NULL AS present

-- create_deferred_record --
-- Before a large load drops its tables' constraints: a table of the application schema that keeps their definitions until each is added back, so a load interrupted in between (a killed benchmark) is repaired by the next one instead of leaving the tables without primary keys.
CREATE TABLE IF NOT EXISTS {record} (relation text NOT NULL, name text NOT NULL, definition text NOT NULL)

-- record_deferred_constraint --
-- One constraint a load is about to drop (the record is new: an earlier one was restored and dropped first).
INSERT INTO {record} (relation, name, definition) VALUES (%(relation)s, %(name)s, %(definition)s)

-- list_deferred_record --
-- The constraints a load dropped and has not yet added back.
SELECT relation, name, definition FROM {record} ORDER BY relation, name

-- forget_deferred_constraint --
-- A constraint the load has added back.
DELETE FROM {record} WHERE relation = %(relation)s AND name = %(name)s

-- drop_deferred_record --
-- Every dropped constraint is back: the record goes.
DROP TABLE IF EXISTS {record}
