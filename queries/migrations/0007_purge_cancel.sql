-- A running purge can be cancelled from the dashboard, the API or Ctrl-C: who asked and when. The run reads the
-- request between batches, stops after the batch in flight and is recorded as 'cancelled'.
ALTER TABLE idemdash.purge_run
    ADD COLUMN cancel_requested_by text,
    ADD COLUMN cancel_requested_at timestamptz,
    DROP CONSTRAINT purge_run_outcome_check,
    ADD CONSTRAINT purge_run_outcome_check
        CHECK (outcome IN ('running', 'succeeded', 'failed', 'skipped', 'budget_exhausted', 'cancelled'));
