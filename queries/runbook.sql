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

-- runbook_outbox_backlog --
-- The backlog per event type: how many rows are pending, since when, and the most attempts among them.
SELECT event_type, count(*) AS pending, min(created_at) AS oldest, now() - min(created_at) AS lag,
       max(attempt_count) AS max_attempts
FROM {outbox}
WHERE status = 'pending'
GROUP BY event_type
ORDER BY pending DESC;

-- runbook_outbox_poison --
-- Pending rows that failed delivery 3 or more times, oldest first: likely poison events the publisher keeps retrying.
SELECT outbox_id, event_type, aggregate_type, aggregate_id, attempt_count, created_at, left(payload::text, 200) AS payload
FROM {outbox}
WHERE status = 'pending' AND attempt_count >= 3
ORDER BY created_at
LIMIT 50;

-- runbook_outbox_recent_publishes --
-- Rows published in the last 10 minutes, per minute: zero means the publisher is stopped or cannot reach the broker.
SELECT date_trunc('minute', published_at) AS minute, count(*) AS published
FROM {outbox}
WHERE published_at >= now() - interval '10 minutes'
GROUP BY 1
ORDER BY 1;

-- runbook_outbox_sessions --
-- Sessions holding or waiting for locks on the outbox table, oldest transaction first (a publisher stuck in a transaction holds its batch).
SELECT a.pid, a.usename, a.application_name, a.state, now() - a.xact_start AS xact_age, l.mode, l.granted, left(a.query, 200) AS query
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.relation = {outbox_regclass}::regclass
ORDER BY a.xact_start;
