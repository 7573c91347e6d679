-- A purge paces itself by what the application's own backends say: instead of timing a commit of its
-- own (which, on a database nobody else used, read the purge's own WAL as the application's pain), a run looks at
-- pg_stat_activity. It records the most application statements it saw running at once (0: nobody there, so it
-- never slowed down) and how many of its backoffs were for an application statement waiting on the purge's lock.
-- probe_baseline_ms, probe_p99_ms and probes now hold the application's waits between and during batches and the
-- looks taken; the probe's table goes.
ALTER TABLE idemdash.purge_run
    ADD COLUMN app_backends integer,
    ADD COLUMN lock_backoffs integer;
DROP TABLE idemdash.purge_probe;
