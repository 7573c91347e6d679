-- A bulk reclassification is one audit entry (the parent: filter, as_of, what the preview counted) that the
-- per-key rows point to, so the audit log reads as one decision that expands to its keys.
ALTER TABLE idemdash.audit_log ADD COLUMN parent_id bigint REFERENCES idemdash.audit_log (audit_id);
CREATE INDEX audit_log_parent_idx ON idemdash.audit_log (parent_id, audit_id) WHERE parent_id IS NOT NULL;

-- Every bulk preview, so that a confirmation can be checked against what its preview showed (same filter and
-- outcome, at the same as_of), whichever web worker served the preview. Kept for a day.
CREATE TABLE idemdash.bulk_preview (
    preview_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    as_of timestamptz NOT NULL,
    filter jsonb NOT NULL,
    to_status text NOT NULL,
    candidates integer NOT NULL,
    by_scope jsonb NOT NULL,
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX bulk_preview_as_of_idx ON idemdash.bulk_preview (as_of);
CREATE INDEX bulk_preview_created_idx ON idemdash.bulk_preview (created_at);
