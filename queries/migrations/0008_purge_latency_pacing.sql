-- A purge that paces itself by what the application feels (issue 23): between and during its batches a run times
-- a tiny write and commit of its own (what an application commit costs) on its row of idemdash.purge_probe, and
-- records what it measured on the run: the probe's idle p99 (the baseline), its p99 while the run worked, how
-- many probes, how often it backed off, and the batch size and duty cycle it ended at.
CREATE TABLE idemdash.purge_probe (
    run_id bigint PRIMARY KEY,
    probes bigint NOT NULL DEFAULT 0,
    probed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE idemdash.purge_run
    ADD COLUMN latency_budget double precision,      -- the allowed probe p99 as a multiple of the baseline
    ADD COLUMN probe_baseline_ms double precision,
    ADD COLUMN probe_p99_ms double precision,
    ADD COLUMN probes integer,
    ADD COLUMN backoffs integer,
    ADD COLUMN final_batch_size integer,
    ADD COLUMN final_duty_cycle double precision;   -- percent
