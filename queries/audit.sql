-- list_audit_for_key --
-- Operator actions on one key, newest first (the key page's history).
SELECT audit_id, at, actor, action, scope, key, from_status, to_status, reason, evidence, detail
FROM idemdash.audit_log
WHERE scope = %(scope)s AND key = %(key)s
ORDER BY at DESC, audit_id DESC
LIMIT %(limit)s

-- list_audit --
-- Every operator action, newest first, optionally one scope, key or actor; keyset pages on (at, audit_id).
SELECT audit_id, at, actor, action, scope, key, from_status, to_status, reason, evidence, detail
FROM idemdash.audit_log
WHERE (%(scope)s::text IS NULL OR scope = %(scope)s)
  AND (%(key)s::text IS NULL OR key = %(key)s)
  AND (%(actor)s::text IS NULL OR actor = %(actor)s)
  AND (NOT %(has_cursor)s OR (at, audit_id) < (%(c_at)s::timestamptz, %(c_id)s::bigint))
ORDER BY at DESC, audit_id DESC
LIMIT %(limit)s
