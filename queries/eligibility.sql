-- terminal_keys --
-- Fragment: a key in a terminal status, the only ones a purge may delete; also the predicate of the index of due keys (index_keys_due), so a batch's WHERE must carry it word for word for PostgreSQL to read that index.
status IN ('succeeded', 'failed_final')

-- expired_keys --
-- Fragment: what a key's own row says of its purge: terminal and expired (a batch checks this again as it deletes).
{terminal_keys}
AND expires_at < now()

-- purgeable_keys --
-- Fragment: a key a purge may delete: terminal, expired, and no operator decision on it within the replay horizon (a client's retry may still need it). Never processing or failed_retryable.
{expired_keys}
AND NOT EXISTS (
    SELECT 1 FROM idemdash.audit_log a
    WHERE a.scope = {keys}.idempotency_scope AND a.key = {keys}.idempotency_key
      AND a.action LIKE 'reclassify%%'
      AND a.at > now() - make_interval(secs => %(replay_horizon_seconds)s))

-- purgeable_inbox --
-- Fragment: an inbox row a purge may delete: processed more than the retention ago.
processed_at < now() - make_interval(days => %(retention_days)s)

-- purgeable_outbox --
-- Fragment: an outbox row a purge may delete: published, more than the retention ago (never pending or any other status, nor without published_at).
status = 'published'
AND published_at < now() - make_interval(days => %(retention_days)s)
