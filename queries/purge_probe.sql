-- look_at_application --
-- What the application's backends are doing now, for a purge run's governor (jobs/latency.py): of the server's client backends (every database's: they share one WAL) other than idemdash's own (and other than the purge's, whose pids are given), how many run a statement, how many of those wait for the WAL (their commits: written, flushed, or confirmed by a synchronous standby), how many wait for a lock one of the purge's backends holds, and how long the longest-waiting of those has been running its statement (ms). Another role's backends are counted only with pg_read_all_stats.
WITH purge AS (
    -- the purge's backends: the run's own, and any session idemdash named for a purge
    SELECT array_agg(pid) AS pids FROM pg_stat_activity
    WHERE pid = ANY (%(purge_pids)s::int[]) OR application_name LIKE 'idemdash-purge%%'
)
SELECT count(*) FILTER (WHERE a.state = 'active')::int AS active,
       count(*) FILTER (WHERE a.on_wal)::int AS wal_waits,
       count(*) FILTER (WHERE a.on_purge)::int AS lock_waits,
       coalesce(max(a.running_ms) FILTER (WHERE a.on_wal OR a.on_purge), 0)::float8 AS longest_ms
FROM (
    SELECT state,
           state = 'active' AND wait_event IN ('WalSync', 'WalWrite', 'WALWrite', 'WALInsert', 'SyncRep') AS on_wal,
           CASE WHEN state = 'active' AND wait_event_type = 'Lock'
                THEN pg_blocking_pids(pid) && (SELECT pids FROM purge) ELSE false END AS on_purge,
           extract(epoch FROM clock_timestamp() - query_start)::float8 * 1000 AS running_ms
    FROM pg_stat_activity
    WHERE backend_type = 'client backend'
      AND pid <> pg_backend_pid() AND pid <> ALL (%(purge_pids)s::int[])
      AND coalesce(application_name, '') NOT LIKE 'idemdash%%'
) a

-- record_purge_pacing --
-- What the run's pacer saw and did, kept on the run (/purges says it in words).
UPDATE idemdash.purge_run
SET latency_budget = %(latency_budget)s, probe_baseline_ms = %(baseline_ms)s, probe_p99_ms = %(p99_ms)s,
    probes = %(probes)s, backoffs = %(backoffs)s, final_batch_size = %(batch_size)s,
    final_duty_cycle = %(duty_cycle)s, app_backends = %(app_backends)s, lock_backoffs = %(lock_backoffs)s
WHERE run_id = %(run_id)s
