-- list_audit_for_key --
-- Operator actions on one key, newest first (the key page's history), bulk ones included through their per-key rows.
SELECT audit_id, at, actor, action, scope, key, from_status, to_status, reason, evidence, detail, parent_id,
       0 AS children
FROM idemdash.audit_log
WHERE scope = %(scope)s AND key = %(key)s
ORDER BY at DESC, audit_id DESC
LIMIT %(limit)s

-- list_audit --
-- Operator actions, newest first, one line per decision (a bulk action's keys are under it: parent); filters by scope, key, actor, kind of action, time range, or the keys of one bulk action; keyset pages on (at, audit_id).
SELECT a.audit_id, a.at, a.actor, a.action, a.scope, a.key, a.from_status, a.to_status, a.reason, a.evidence,
       a.detail, a.parent_id,
       (SELECT count(*) FROM idemdash.audit_log c WHERE c.parent_id = a.audit_id)::int AS children
FROM idemdash.audit_log a
WHERE (%(parent)s::bigint IS NOT NULL AND a.parent_id = %(parent)s::bigint
       -- a key's history shows the bulk actions' per-key rows; otherwise one line per decision
       OR %(parent)s::bigint IS NULL AND (a.parent_id IS NULL OR %(key)s::text IS NOT NULL))
  AND (%(scope)s::text IS NULL OR a.scope = %(scope)s::text
       OR (a.key IS NULL AND EXISTS (SELECT 1 FROM idemdash.audit_log c
                                     WHERE c.parent_id = a.audit_id AND c.scope = %(scope)s::text)))
  AND (%(key)s::text IS NULL OR a.key = %(key)s::text)
  AND (%(actor)s::text IS NULL OR a.actor = %(actor)s::text)
  -- the kind of action: what comes before the ':' (reclassify, reclassify-bulk, purge, purge-dry-run, note)
  AND (%(action)s::text IS NULL OR split_part(a.action, ':', 1) = %(action)s::text)
  AND (%(since)s::timestamptz IS NULL OR a.at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR a.at <= %(until)s::timestamptz)
  AND (NOT %(has_cursor)s OR (a.at, a.audit_id) < (%(c_at)s::timestamptz, %(c_id)s::bigint))
ORDER BY a.at DESC, a.audit_id DESC
LIMIT %(limit)s
