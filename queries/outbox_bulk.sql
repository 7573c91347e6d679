-- count_outbox_bulk --
-- Outbox rows a bulk park or release would move, by event type: in from_status, of the event type when one is given, and (a park) still likely poison: at least min_attempts delivery attempts.
SELECT o.event_type, count(*) AS rows
FROM {outbox} o
WHERE o.status::text = %(from_status)s
  AND (%(event_type)s::text IS NULL OR o.event_type = %(event_type)s::text)
  AND (%(min_attempts)s::integer IS NULL OR o.attempt_count >= %(min_attempts)s::integer)
GROUP BY o.event_type
ORDER BY count(*) DESC, o.event_type

-- list_outbox_bulk_rows --
-- The rows a bulk park or release would move, oldest first, at most limit: the ones its preview shows and records.
SELECT o.outbox_id::text AS outbox_id, o.event_type, o.idempotency_scope, o.idempotency_key, o.attempt_count,
       o.created_at
FROM {outbox} o
WHERE o.status::text = %(from_status)s
  AND (%(event_type)s::text IS NULL OR o.event_type = %(event_type)s::text)
  AND (%(min_attempts)s::integer IS NULL OR o.attempt_count >= %(min_attempts)s::integer)
ORDER BY o.created_at, o.outbox_id
LIMIT %(limit)s

-- insert_outbox_bulk_preview --
-- Record a bulk park or release preview (its filter, action, count, and the ids of the rows it showed) so the confirmation acts on exactly those; forget previews older than a day.
WITH forget AS (
    DELETE FROM idemdash.bulk_preview WHERE created_at < now() - interval '1 day'
)
INSERT INTO idemdash.bulk_preview (as_of, filter, to_status, candidates, by_scope, actor)
VALUES (%(as_of)s, %(filter)s, %(action)s, %(candidates)s, %(shown)s, %(actor)s)
RETURNING preview_id

-- get_outbox_bulk_preview --
-- The bulk park or release preview a confirmation names by its as_of: the one with the same filter and action if there is one, else any outbox preview then (to say what differs).
SELECT preview_id, filter, to_status AS action, candidates,
       ARRAY(SELECT jsonb_array_elements_text(by_scope -> 'ids')) AS ids,
       (filter = %(filter)s AND to_status = %(action)s) AS matches
FROM idemdash.bulk_preview
WHERE as_of = %(as_of)s AND to_status LIKE 'outbox-%%'
ORDER BY (filter = %(filter)s AND to_status = %(action)s) DESC, preview_id DESC
LIMIT 1

-- insert_outbox_bulk_audit --
-- The one audit entry of a bulk park or release (filter, as_of, what the preview counted); each row's entry points to it.
INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail)
VALUES (%(actor)s, %(action)s, NULL, NULL, %(from_status)s, %(to_status)s, %(reason)s, %(evidence)s, %(detail)s)
RETURNING audit_id

-- move_outbox_bulk_batch --
-- One batch of a bulk park or release: of the rows its preview showed, those still in from_status (a park: still likely poison), oldest first, locked with SKIP LOCKED (never waiting behind the relay), moved, each audited under the bulk's entry, in one statement.
WITH candidates AS (
    SELECT o.outbox_id FROM {outbox} o
    WHERE o.outbox_id = ANY(%(ids)s::uuid[])
      AND o.status::text = %(from_status)s
      AND (%(min_attempts)s::integer IS NULL OR o.attempt_count >= %(min_attempts)s::integer)
    ORDER BY o.created_at, o.outbox_id
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE {outbox} o
    SET status = %(to_status)s
    FROM candidates c
    WHERE o.outbox_id = c.outbox_id
    RETURNING o.outbox_id, o.idempotency_scope, o.idempotency_key, o.event_type, o.attempt_count
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail,
                                    parent_id)
    SELECT %(actor)s, %(row_action)s, c.idempotency_scope, c.idempotency_key, %(from_status)s, %(to_status)s,
           %(reason)s, '[]'::jsonb,
           jsonb_build_object('outbox_id', c.outbox_id, 'event_type', c.event_type, 'attempt_count', c.attempt_count),
           %(parent_id)s
    FROM changed c
    RETURNING audit_id
)
SELECT count(*) AS changed FROM audit

-- count_outbox_bulk_left --
-- Of the rows a bulk preview showed, how many are still in from_status (a park: still likely poison): the ones a confirmation has not moved.
SELECT count(*) AS rows
FROM {outbox} o
WHERE o.outbox_id = ANY(%(ids)s::uuid[])
  AND o.status::text = %(from_status)s
  AND (%(min_attempts)s::integer IS NULL OR o.attempt_count >= %(min_attempts)s::integer)
