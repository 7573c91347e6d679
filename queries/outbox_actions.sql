-- move_outbox_row --
-- Park one pending outbox row (the relay publishes only pending rows) or release a parked one: only if its status is still the one the operator saw and, when given, it has still failed at least min_attempts times (a park: still likely poison, however often the relay retried it since) or its attempt count is still expected_attempt_count (a release); never waiting behind the relay (NOWAIT); the audit row commits with it.
WITH target AS (
    SELECT o.outbox_id FROM {outbox} o WHERE o.outbox_id = %(outbox_id)s FOR UPDATE NOWAIT
), changed AS (
    UPDATE {outbox} o
    SET status = %(to_status)s
    FROM target t
    WHERE o.outbox_id = t.outbox_id
      AND o.status::text = %(from_status)s
      AND (%(expected_attempt_count)s::integer IS NULL OR o.attempt_count = %(expected_attempt_count)s::integer)
      AND (%(min_attempts)s::integer IS NULL OR o.attempt_count >= %(min_attempts)s::integer)
    RETURNING o.outbox_id, o.idempotency_scope, o.idempotency_key, o.event_type, o.attempt_count
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail)
    SELECT %(actor)s, %(action)s, c.idempotency_scope, c.idempotency_key, %(from_status)s, %(to_status)s,
           %(reason)s, '[]'::jsonb,
           jsonb_build_object('outbox_id', c.outbox_id, 'event_type', c.event_type, 'attempt_count', c.attempt_count)
    FROM changed c
    RETURNING audit_id
)
SELECT (SELECT audit_id FROM audit) AS audit_id, (SELECT count(*) FROM changed) AS changed

-- list_outbox_parked --
-- Parked outbox rows (held back from the relay by an operator), oldest first, with who parked each and why.
SELECT o.outbox_id::text AS outbox_id, o.event_type, o.idempotency_scope, o.idempotency_key, o.attempt_count,
       o.created_at, a.actor AS parked_by, a.at AS parked_at, a.reason
FROM {outbox} o
LEFT JOIN LATERAL (
    SELECT al.actor, al.at, al.reason FROM idemdash.audit_log al
    WHERE al.action = 'outbox-park' AND al.scope = o.idempotency_scope AND al.key = o.idempotency_key
      AND al.detail ->> 'outbox_id' = o.outbox_id::text
    ORDER BY al.at DESC LIMIT 1
) a ON true
WHERE o.status = 'parked'
ORDER BY o.created_at, o.outbox_id
LIMIT %(limit)s

-- list_outbox_status_checks --
-- CHECK constraints on the outbox that name its status column, and the labels of an enum status type: what would refuse 'parked'.
SELECT c.conname AS name, pg_get_constraintdef(c.oid) AS definition
FROM pg_constraint c
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
WHERE c.conrelid = to_regclass(quote_ident(%(schema)s) || '.' || quote_ident(%(table)s)) AND c.contype = 'c' AND a.attname = 'status'
UNION ALL
SELECT 'enum ' || format_type(a.atttypid, NULL), string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
FROM pg_attribute a
JOIN pg_enum e ON e.enumtypid = a.atttypid
WHERE a.attrelid = to_regclass(quote_ident(%(schema)s) || '.' || quote_ident(%(table)s)) AND a.attname = 'status'
GROUP BY a.atttypid

-- get_outbox_status_type --
-- The outbox's status column type, or no row when the table or column is not there.
SELECT format_type(a.atttypid, a.atttypmod) AS data_type
FROM pg_attribute a
WHERE a.attrelid = to_regclass(quote_ident(%(schema)s) || '.' || quote_ident(%(table)s)) AND a.attname = 'status'
  AND NOT a.attisdropped

-- fix_outbox_status_check --
-- The outbox's CHECK constraint on status again with 'parked' allowed: added NOT VALID (no scan under lock), then validated (shown, never run by idemdash).
ALTER TABLE {outbox} DROP CONSTRAINT {constraint},
    ADD CONSTRAINT {constraint} {definition} NOT VALID;
ALTER TABLE {outbox} VALIDATE CONSTRAINT {constraint}

-- fix_outbox_status_enum --
-- The outbox's status enum type with the label 'parked' added (shown, never run by idemdash).
ALTER TYPE {type_name} ADD VALUE IF NOT EXISTS 'parked'
