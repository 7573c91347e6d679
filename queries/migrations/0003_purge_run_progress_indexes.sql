-- The snapshot job sums the rows of real runs by when they finished (count_rows_purged_between), and /purges
-- polls for runs still in progress (list_running_purge_runs): both stay index lookups as the history grows.
CREATE INDEX purge_run_finished_idx ON idemdash.purge_run (finished_at) WHERE NOT dry_run;
CREATE INDEX purge_run_running_idx ON idemdash.purge_run (started_at, run_id) WHERE outcome = 'running';
