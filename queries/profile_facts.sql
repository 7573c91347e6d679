-- fact_dbos_keys_why_stuck --
-- DBOS Transact: why a PENDING workflow is stuck, told only when state_dbos_keys_stuck (composed here, the one rule) holds: its application version is not the latest its application registered in application_versions (the one a launch now recovers), or else its executor has been silent past DEFAULT_LEASE_SECONDS, told with the last update of any of its workflows (the advised executor index finds it); NULL when it is not stuck.
CASE
WHEN NOT ({state_dbos_keys_stuck}) THEN NULL
WHEN (coalesce(t.{application_name}, ''), t.{application_version}) NOT IN (
        SELECT DISTINCT ON (coalesce({application_name}, '')) coalesce({application_name}, ''), {version_name}
        FROM {application_versions}
        ORDER BY coalesce({application_name}, ''), {version_timestamp} DESC)
THEN 'application version ' || coalesce(quote_literal(t.{application_version}), 'NULL')
     || ' is no longer the latest (' || coalesce((
        SELECT quote_literal(v.{version_name}) FROM {application_versions} v
        WHERE coalesce(v.{application_name}, '') = coalesce(t.{application_name}, '')
        ORDER BY v.{version_timestamp} DESC LIMIT 1), 'none registered')
     || '): a launch recovers only its own version''s PENDING workflows'
ELSE 'executor ' || quote_literal(t.{executor_id}) || ' silent since ' || to_char(to_timestamp(greatest(
        (SELECT max(w.{updated_at}) FROM {keys} w WHERE w.{executor_id} = t.{executor_id}), t.{updated_at},
        (SELECT max(o.{completed_at_epoch_ms}) FROM {operation_outputs} o WHERE o.{workflow_uuid} = t.{workflow_uuid}))
        / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC (the last update of any of its workflows or step'
     || ' of this one; no workflow of it started or finished since DEFAULT_LEASE_SECONDS ago, and the tables keep no'
     || ' heartbeat, so that silence counts as gone)'
END

-- fact_dbos_keys_last_step --
-- DBOS Transact: a workflow's last completed step in operation_outputs (its function name and id), when, and how long ago; NULL when it completed none.
(SELECT o.{function_name} || ' (step ' || o.{function_id} || '), completed '
        || to_char(to_timestamp(o.{completed_at_epoch_ms} / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
        || ' UTC, ' || justify_interval(date_trunc('second', now() - to_timestamp(o.{completed_at_epoch_ms} / 1000.0)))
        || ' ago'
 FROM {operation_outputs} o
 WHERE o.{workflow_uuid} = t.{workflow_uuid} AND o.{completed_at_epoch_ms} IS NOT NULL
 ORDER BY o.{function_id} DESC LIMIT 1)
