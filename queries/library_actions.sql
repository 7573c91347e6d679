-- library_action_row --
-- A library's own documented write on one row of its table: the row by its identity ({identity_columns} equal to {identity_values}), locked without waiting behind the library (NOWAIT), changed by the library's assignments ({sets}) only while it still meets the library's condition ({condition}) and still holds every value the operator saw (%(expected)s: column -> value as text); the audit row commits with it, holding the changed columns (%(changes)s) before and after.
WITH target AS (
    SELECT t.ctid AS row_ctid, to_jsonb(t) AS before FROM {table} t
    WHERE ({identity_columns}) = ({identity_values})
    FOR UPDATE NOWAIT
), changed AS (
    UPDATE {table} t SET {sets}
    FROM target
    WHERE t.ctid = target.row_ctid
      AND ({condition})
      AND NOT EXISTS (SELECT 1 FROM jsonb_each_text(%(expected)s::jsonb) e
                      WHERE (to_jsonb(t) ->> e.key) IS DISTINCT FROM e.value)
    RETURNING target.before, to_jsonb(t) AS after
), audit AS (
    INSERT INTO idemdash.audit_log (actor, action, scope, key, from_status, to_status, reason, evidence, detail)
    SELECT %(actor)s, %(action)s, %(scope)s, %(identity)s,
           (SELECT jsonb_object_agg(k, c.before -> k) FROM unnest(%(changes)s::text[]) k)::text,
           (SELECT jsonb_object_agg(k, c.after -> k) FROM unnest(%(changes)s::text[]) k)::text,
           %(reason)s, '[]'::jsonb,
           %(detail)s::jsonb || jsonb_build_object('expected', %(expected)s::jsonb)
    FROM changed c
    RETURNING audit_id
)
SELECT (SELECT audit_id FROM audit) AS audit_id, (SELECT count(*) FROM changed)::int AS changed
