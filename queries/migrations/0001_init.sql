-- idemdash's own tables. The application's tables are never touched here.

CREATE TABLE idemdash.audit_log (
    audit_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor text NOT NULL,
    action text NOT NULL,
    scope text,
    key text,
    from_status text,
    to_status text,
    reason text,
    evidence jsonb NOT NULL DEFAULT '{}'::jsonb,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_at_idx ON idemdash.audit_log (at DESC, audit_id DESC);
CREATE INDEX audit_log_key_idx ON idemdash.audit_log (scope, key, at DESC);

-- Append-only: the audit log is evidence, so rows can be added, never changed.
CREATE FUNCTION idemdash.audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'idemdash.audit_log is append-only (% refused)', TG_OP;
END;
$$;
CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON idemdash.audit_log
    FOR EACH ROW EXECUTE FUNCTION idemdash.audit_log_append_only();

CREATE TABLE idemdash.purge_run (
    run_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_name text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    batches integer NOT NULL DEFAULT 0,
    rows_deleted bigint NOT NULL DEFAULT 0,
    dry_run boolean NOT NULL,
    outcome text NOT NULL DEFAULT 'running',
    error text,
    started_by text NOT NULL,
    CHECK (outcome IN ('running', 'succeeded', 'failed', 'skipped', 'budget_exhausted'))
);
CREATE INDEX purge_run_table_idx ON idemdash.purge_run (table_name, started_at DESC);
CREATE INDEX purge_run_started_idx ON idemdash.purge_run (started_at DESC, run_id DESC);

CREATE TABLE idemdash.metric_snapshot (
    taken_at timestamptz PRIMARY KEY DEFAULT clock_timestamp(),
    stuck_keys bigint NOT NULL,
    processing_keys bigint NOT NULL,
    failed_retryable_keys bigint NOT NULL,
    failed_final_keys_24h bigint NOT NULL,
    outbox_pending bigint NOT NULL,
    outbox_lag_seconds double precision,
    inbox_rows_24h bigint NOT NULL,
    rows_purged bigint NOT NULL DEFAULT 0
);

CREATE TABLE idemdash.triage_note (
    note_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope text NOT NULL,
    key text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    author text NOT NULL,
    note text NOT NULL CHECK (note <> '')
);
CREATE INDEX triage_note_key_idx ON idemdash.triage_note (scope, key, at DESC);
