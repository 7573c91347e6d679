-- start_purge_probe --
-- The probe's own row for one run (and rows of runs that died probing, gone: nothing reads them).
WITH stale AS (
    DELETE FROM idemdash.purge_probe WHERE probed_at < now() - interval '1 hour'
)
INSERT INTO idemdash.purge_probe (run_id) VALUES (%(run_id)s) ON CONFLICT (run_id) DO NOTHING

-- purge_probe --
-- One probe: a tiny write and its commit (autocommit), what an application's commit costs while a purge runs.
UPDATE idemdash.purge_probe SET probes = probes + 1, probed_at = clock_timestamp() WHERE run_id = %(run_id)s

-- end_purge_probe --
-- The run is over: its probe row goes.
DELETE FROM idemdash.purge_probe WHERE run_id = %(run_id)s

-- record_purge_pacing --
-- What the run's pacer measured, kept on the run (/purges shows it).
UPDATE idemdash.purge_run
SET latency_budget = %(latency_budget)s, probe_baseline_ms = %(baseline_ms)s, probe_p99_ms = %(p99_ms)s,
    probes = %(probes)s, backoffs = %(backoffs)s, final_batch_size = %(batch_size)s,
    final_duty_cycle = %(duty_cycle)s
WHERE run_id = %(run_id)s
