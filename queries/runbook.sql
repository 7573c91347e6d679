-- runbook_inspect_key --
-- Shown on the runbook page (not run by idemdash): the key's row, locked or not.
SELECT *, now() - locked_until AS overdue_by
FROM {keys}
WHERE idempotency_scope = {scope} AND idempotency_key = {key};

-- runbook_inspect_outbox --
-- Shown on the runbook page: outbox rows written under the key (evidence the effect committed).
SELECT outbox_id, event_type, status, attempt_count, created_at, published_at
FROM {outbox}
WHERE idempotency_scope = {scope} AND idempotency_key = {key}
ORDER BY created_at;

-- runbook_inspect_locks --
-- Shown on the runbook page: who holds a lock on the key's row right now (pg_locks is not row-level, so this lists sessions waiting or holding on the table).
SELECT a.pid, a.usename, a.application_name, a.state, now() - a.xact_start AS xact_age, l.mode, l.granted, left(a.query, 200) AS query
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.relation = {keys_regclass}::regclass
ORDER BY a.xact_start;
