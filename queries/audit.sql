-- list_audit_for_key --
-- Operator actions on one key, newest first (the key page's history).
SELECT audit_id, at, actor, action, scope, key, from_status, to_status, reason, evidence, detail
FROM idemdash.audit_log
WHERE scope = %(scope)s AND key = %(key)s
ORDER BY at DESC, audit_id DESC
LIMIT %(limit)s
