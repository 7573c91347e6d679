-- insert_triage_note --
-- A triage note on a key that exists, and its audit row, in one statement (one transaction); no row when there is no such key.
WITH note AS (
    INSERT INTO idemdash.triage_note (scope, key, author, note)
    SELECT %(scope)s, %(key)s, %(author)s, %(text)s
    WHERE EXISTS (SELECT 1 FROM {keys} k WHERE k.idempotency_scope = %(scope)s AND k.idempotency_key = %(key)s)
    RETURNING note_id, scope, key, at, author, note
), audit AS (
    INSERT INTO idemdash.audit_log (at, actor, action, scope, key, reason, detail)
    SELECT n.at, n.author, 'note', n.scope, n.key, n.note, jsonb_build_object('note_id', n.note_id)
    FROM note n
    RETURNING audit_id
)
SELECT n.note_id, n.scope, n.key, n.at, n.author, n.note AS text, (SELECT audit_id FROM audit) AS audit_id
FROM note n

-- list_notes_for_key --
-- Triage notes on one key, newest first.
SELECT note_id, scope, key, at, author, note AS text, NULL::bigint AS audit_id
FROM idemdash.triage_note
WHERE scope = %(scope)s AND key = %(key)s
ORDER BY at DESC, note_id DESC
LIMIT %(limit)s
