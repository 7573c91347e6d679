-- runbook_inspect_key --
-- The key's row, and how long ago its lease ran out.
SELECT *, now() - locked_until AS overdue_by
FROM {keys}
WHERE idempotency_scope = {scope} AND idempotency_key = {key};

-- runbook_inspect_outbox --
-- Outbox rows written under the key: if any exist, the business effect committed.
SELECT outbox_id, event_type, status, attempt_count, created_at, published_at
FROM {outbox}
WHERE idempotency_scope = {scope} AND idempotency_key = {key}
ORDER BY created_at;

-- runbook_inspect_locks --
-- Sessions holding or waiting for locks on the key table, oldest transaction first (an open one may still finish the key).
SELECT a.pid, a.usename, a.application_name, a.state, now() - a.xact_start AS xact_age, l.mode, l.granted, left(a.query, 200) AS query
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.relation = {keys_regclass}::regclass
ORDER BY a.xact_start;
