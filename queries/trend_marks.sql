-- list_trend_actions --
-- Operators' actions of the last hours, for the markers on the trend charts: one per decision (a bulk action once,
-- with how many keys or rows it moved), newest first, capped; notes (they change nothing) and purges (marked by
-- their runs) left out. A range of audit_log_at_idx.
SELECT a.audit_id, a.at, a.actor, a.action, a.scope, a.key, a.to_status,
       (SELECT count(*) FROM idemdash.audit_log c WHERE c.parent_id = a.audit_id)::int AS children
FROM idemdash.audit_log a
WHERE a.at >= now() - make_interval(hours => %(hours)s)
  AND a.parent_id IS NULL
  AND split_part(a.action, ':', 1) NOT IN ('note', 'purge', 'purge-dry-run')
ORDER BY a.at DESC, a.audit_id DESC
LIMIT %(limit)s

-- list_trend_purges --
-- Real purge runs of the last hours that deleted rows or partitions, or failed, for the markers on the trend charts,
-- newest first, capped: a run that found nothing due changed nothing. Marked when it finished (when the rows purged
-- chart counts it), or when it started while it runs. A range of purge_run_started_idx.
SELECT run_id, table_name, coalesce(finished_at, started_at) AS at, started_at, finished_at, rows_deleted,
       partitions_dropped, outcome, started_by
FROM idemdash.purge_run
WHERE started_at >= now() - make_interval(hours => %(hours)s)
  AND NOT dry_run
  AND (rows_deleted > 0 OR partitions_dropped > 0 OR outcome = 'failed')
ORDER BY started_at DESC, run_id DESC
LIMIT %(limit)s

-- get_trend_version --
-- What the overview's trend section is drawn from, in a few index reads (dashboard/trend_section.py keeps the drawn
-- section while this is unchanged): the snapshots of the range (how many, the newest), the newest audit entry (the
-- log is append-only), and the purge runs (the newest, the newest finish, and the rows the running ones deleted so
-- far, which their markers say). Index-only reads of the snapshots' primary key, audit_log's and purge_run's keys,
-- purge_run_finished_idx and purge_run_running_idx.
SELECT (SELECT count(*) FROM idemdash.metric_snapshot
        WHERE taken_at >= now() - make_interval(hours => %(hours)s))::bigint AS snapshots,
       (SELECT max(taken_at) FROM idemdash.metric_snapshot) AS newest_snapshot,
       (SELECT max(audit_id) FROM idemdash.audit_log) AS newest_audit_id,
       (SELECT max(run_id) FROM idemdash.purge_run) AS newest_run_id,
       (SELECT max(finished_at) FROM idemdash.purge_run WHERE NOT dry_run) AS newest_finish,
       (SELECT count(*) FROM idemdash.purge_run WHERE outcome = 'running')::bigint AS running,
       (SELECT coalesce(sum(rows_deleted + partitions_dropped), 0) FROM idemdash.purge_run
        WHERE outcome = 'running')::bigint AS running_progress
