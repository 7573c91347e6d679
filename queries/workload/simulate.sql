-- list_missing_reference_objects --
-- The reference tables and functions the simulator needs that this database lacks (empty when ready).
SELECT wanted.name
FROM (VALUES (%(keys)s, 'table'), (%(inbox)s, 'table'), (%(outbox)s, 'table'),
             ('claim_idempotency_key', 'function'), ('complete_idempotency_key', 'function'),
             ('fail_idempotency_key', 'function'), ('consume_message_once', 'function')) AS wanted (name, kind)
WHERE CASE wanted.kind
    WHEN 'table' THEN to_regclass(format('%%I.%%I', %(schema)s::text, wanted.name)) IS NULL
    ELSE NOT EXISTS (
        SELECT 1
        FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = %(schema)s AND p.proname = wanted.name)
END
ORDER BY wanted.kind DESC, wanted.name

-- insert_outbox_event --
-- The business effect's outbox row; a second effect of the same command is absorbed by the outbox's unique key.
INSERT INTO {outbox} (event_type, aggregate_type, aggregate_id, idempotency_scope, idempotency_key, payload)
VALUES (%(event_type)s, %(aggregate_type)s, %(aggregate_id)s, %(scope)s, %(key)s, %(payload)s)
ON CONFLICT DO NOTHING

-- list_pending_outbox_events_for_publish --
-- Lock a batch of pending outbox rows for the simulated publisher; rows that failed before are retried only now and then.
-- Fresh rows first (attempt_count, then age) so rows that never publish cannot starve the rest.
SELECT outbox_id, event_type, attempt_count
FROM {outbox}
WHERE status = 'pending'
  AND (attempt_count = 0 OR random() < %(retry_fraction)s)
ORDER BY attempt_count, created_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- mark_outbox_published --
-- Mark outbox rows the simulated publisher delivered.
UPDATE {outbox}
SET status = 'published', published_at = now()
WHERE outbox_id = ANY(%(ids)s) AND status = 'pending'

-- record_outbox_publish_failures --
-- Count one more failed delivery attempt on outbox rows that stay pending.
UPDATE {outbox}
SET attempt_count = attempt_count + 1
WHERE outbox_id = ANY(%(ids)s) AND status = 'pending'

-- backfill_keys_and_outbox --
-- Write one time slice of synthetic key history, plus the outbox rows of the effects that committed, in one statement.
-- Volatile CTEs are materialised, so every random() below is drawn once per row.
-- status goes through jsonb_populate_record so the same text works for an enum or a text column.
WITH window_ AS (
    SELECT now() - %(newest_ago)s::interval AS newest,
           %(oldest_ago)s::interval - %(newest_ago)s::interval AS span
),
raw AS (
    SELECT g.i, random() AS r_scope, random() AS r_status, random() AS r_attempt, random() AS r_key,
           random() AS r_evidence, random() AS r_worker,
           w.newest - random() * w.span AS created_at
    FROM window_ w, generate_series(1, %(rows)s) AS g (i)
),
scoped AS (
    SELECT r.*,
           CASE WHEN r.r_scope < 0.40 THEN 'create_order'
                WHEN r.r_scope < 0.70 THEN 'capture_payment'
                WHEN r.r_scope < 0.90 THEN 'send_invoice'
                ELSE 'refund' END AS scope,
           CASE WHEN r.r_status < 0.006 THEN 'stuck'
                WHEN r.r_status < 0.040 THEN 'failed_final'
                WHEN r.r_status < 0.090 THEN 'failed_retryable'
                ELSE 'succeeded' END AS outcome,
           -- most commands succeed first time; some need 2-4 attempts; a few are hotspots (5-12)
           CASE WHEN r.r_attempt < 0.85 THEN 1
                WHEN r.r_attempt < 0.97 THEN 2 + floor((r.r_attempt - 0.85) / 0.04)::int
                ELSE 5 + floor((r.r_attempt - 0.97) * 250)::int END AS attempts,
           CASE WHEN r.r_key < 0.03 THEN format('cart/%%s/checkout/%%s', r.i, %(token)s::text)
                WHEN r.r_key < 0.05 THEN format('user %%s rüge %%s', r.i, %(token)s::text)
                WHEN r.r_key < 0.06 THEN format('invoice #%%s für Müller (%%s)', r.i, %(token)s::text)
                ELSE md5(%(token)s::text || ':' || r.i)::uuid::text END AS key
    FROM raw r
),
timed AS (
    SELECT s.*,
           -- the last attempt's claim: earlier attempts were minutes apart; never later than the slice allows
           least(s.created_at + (s.attempts - 1) * random() * interval '3 minutes',
                 now() - %(newest_ago)s::interval) AS claimed_at,
           CASE s.scope WHEN 'create_order' THEN interval '7 days' WHEN 'capture_payment' THEN interval '3 days'
                        WHEN 'send_invoice' THEN interval '1 day' ELSE interval '2 days' END AS retention,
           CASE s.scope WHEN 'create_order' THEN 'customer_order' WHEN 'capture_payment' THEN 'payment'
                        WHEN 'send_invoice' THEN 'invoice' ELSE 'refund' END AS result_type,
           CASE s.scope WHEN 'create_order' THEN 'order.created' WHEN 'capture_payment' THEN 'payment.captured'
                        WHEN 'send_invoice' THEN 'invoice.sent' ELSE 'refund.issued' END AS event_type,
           CASE WHEN s.attempts >= 5 AND s.r_worker < 0.6 THEN 'worker-7'
                ELSE (ARRAY['api-1', 'api-2', 'api-3', 'worker-7', 'worker-9'])[1 + floor(s.r_worker * 5)::int]
           END AS claimed_by,
           gen_random_uuid() AS result_id,
           round((5 + random() * 495)::numeric, 2) AS amount
    FROM scoped s
),
finished AS (
    SELECT t.*,
           t.claimed_at + random() * interval '2 seconds' AS updated_at,
           t.claimed_at + (30 + floor(random() * 270)::int) * interval '1 second' AS lease_end
    FROM timed t
),
keys_written AS (
    INSERT INTO {keys} (idempotency_scope, idempotency_key, request_hash, status, result_ref_type, result_ref_id,
                        response_body, failure_code, failure_message, claimed_by, claimed_at, locked_until,
                        attempt_count, created_at, updated_at, expires_at)
    SELECT f.scope, f.key, md5(f.scope || '|' || f.key || '|' || f.amount),
           (jsonb_populate_record(NULL::{keys},
               jsonb_build_object('status', CASE f.outcome WHEN 'stuck' THEN 'processing' ELSE f.outcome END))).status,
           CASE WHEN f.outcome = 'succeeded' THEN f.result_type END,
           CASE WHEN f.outcome = 'succeeded' THEN f.result_id END,
           CASE WHEN f.outcome = 'succeeded'
                THEN jsonb_build_object('id', f.result_id, 'status', 'ok', 'amount', f.amount) END,
           CASE f.outcome WHEN 'failed_retryable' THEN 'upstream_timeout' WHEN 'failed_final' THEN 'card_declined' END,
           CASE f.outcome WHEN 'failed_retryable' THEN 'payment gateway did not answer within 10s'
                          WHEN 'failed_final' THEN 'issuer declined the card' END,
           f.claimed_by, f.claimed_at,
           CASE WHEN f.outcome = 'stuck' THEN f.lease_end END,
           f.attempts, f.created_at,
           CASE WHEN f.outcome = 'stuck' THEN f.claimed_at ELSE f.updated_at END,
           f.updated_at + f.retention
    FROM finished f
    RETURNING status::text AS status
),
events AS (
    -- the command's own event: every success, and the stuck keys whose effect committed before the crash
    SELECT f.scope, f.key, f.event_type, f.result_type AS aggregate_type, f.result_id AS aggregate_id,
           jsonb_build_object('amount', f.amount, 'scope', f.scope) AS payload,
           f.updated_at AS created_at,
           CASE WHEN f.outcome = 'succeeded' OR f.r_evidence < 0.10 THEN 'published' ELSE 'pending' END AS status,
           CASE WHEN f.r_evidence > 0.97 THEN 1 + floor(random() * 3)::int ELSE 0 END AS attempt_count
    FROM finished f
    WHERE f.outcome = 'succeeded' OR (f.outcome = 'stuck' AND f.r_evidence < 0.45)
    UNION ALL
    -- events no publisher route exists for: pending forever, one failed attempt every couple of minutes
    SELECT f.scope, f.key, 'legacy.unroutable', f.result_type, f.result_id,
           jsonb_build_object('amount', f.amount, 'scope', f.scope), f.updated_at, 'pending',
           1 + floor(extract(epoch FROM now() - f.updated_at) / 120)::int
    FROM finished f
    WHERE f.outcome = 'succeeded' AND f.r_evidence BETWEEN 0.50 AND 0.51
),
outbox_written AS (
    INSERT INTO {outbox} (event_type, aggregate_type, aggregate_id, idempotency_scope, idempotency_key, payload,
                          status, attempt_count, created_at, published_at)
    SELECT e.event_type, e.aggregate_type, e.aggregate_id, e.scope, e.key, e.payload, e.status, e.attempt_count,
           e.created_at,
           CASE WHEN e.status = 'published'
                THEN least(e.created_at + random() * interval '3 seconds'
                                        + e.attempt_count * random() * interval '5 minutes', now()) END
    FROM events e
    RETURNING status
)
SELECT
    (SELECT count(*) FROM keys_written) AS keys,
    (SELECT count(*) FROM keys_written WHERE status = 'succeeded') AS succeeded,
    (SELECT count(*) FROM keys_written WHERE status = 'failed_retryable') AS failed_retryable,
    (SELECT count(*) FROM keys_written WHERE status = 'failed_final') AS failed_final,
    (SELECT count(*) FROM keys_written WHERE status = 'processing') AS stuck,
    (SELECT count(*) FROM outbox_written WHERE status = 'published') AS outbox_published,
    (SELECT count(*) FROM outbox_written WHERE status = 'pending') AS outbox_pending

-- backfill_inbox --
-- Write one time slice of synthetic inbox history across several consumers.
INSERT INTO {inbox} (consumer_name, message_id, message_hash, processed_at, result_ref_type, result_ref_id)
SELECT (ARRAY['billing', 'shipping', 'analytics', 'notifications', 'fraud-check'])[1 + floor(random() * 5)::int],
       md5(%(token)s::text || ':msg:' || g.i)::uuid::text,
       md5(%(token)s::text || ':body:' || g.i),
       now() - %(newest_ago)s::interval - random() * (%(oldest_ago)s::interval - %(newest_ago)s::interval),
       CASE WHEN g.i %% 3 = 0 THEN 'ledger_entry' END,
       CASE WHEN g.i %% 3 = 0 THEN gen_random_uuid() END
FROM generate_series(1, %(rows)s) AS g (i)
