-- index_keys_leases --
-- Stuck and processing key lists, counts and the reclassify statements: only processing rows, by lease end, carrying the columns the stuck filters and suggested outcomes test, so counting stuck keys reads no table row.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (locked_until NULLS FIRST, idempotency_scope, idempotency_key) INCLUDE (claimed_at, claimed_by, attempt_count, expires_at) WHERE status = 'processing'

-- index_keys_updated --
-- Key lists by status ordered by last change, and the 24-hour failed/succeeded counts.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (status, updated_at DESC, idempotency_scope DESC, idempotency_key DESC)

-- index_keys_failures --
-- Failed keys filtered by the worker that last claimed them (is one worker failing everything?): their list, newest first, and its count, without reading every failed key's row (at 100M keys, 3M failed: 3 s).
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (claimed_by, status, updated_at DESC, idempotency_scope DESC, idempotency_key DESC) WHERE status IN ('failed_retryable', 'failed_final')

-- index_keys_terminal_scope --
-- Keys in a terminal or failed status by scope, newest first, carrying the worker and the attempts: a list filtered by scope, its count and its breakdown by worker are index ranges read index-only (without it the count and the breakdown read table rows to test each key's scope: 6,500 pages each at 10M keys).
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (status, idempotency_scope, updated_at DESC, idempotency_key DESC) INCLUDE (claimed_by, attempt_count) WHERE status IN ('succeeded', 'failed_retryable', 'failed_final')

-- index_keys_hotspots --
-- Retry hotspots over a window: keys with many attempts, most first, and when each last changed (updated_at, read in the index), without scanning the table.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (attempt_count DESC, updated_at DESC) WHERE attempt_count >= 2

-- index_keys_created --
-- Suppression numbers per scope over a time window of creation.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (created_at, idempotency_scope)

-- index_outbox_pending --
-- Outbox backlog, lag and the pending list: only pending rows, oldest first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (created_at, outbox_id) WHERE status = 'pending'

-- index_outbox_key --
-- Related outbox rows on the key page (evidence that a business effect committed).
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (idempotency_scope, idempotency_key)

-- index_inbox_processed --
-- Inbox volume per consumer over time windows, and the inbox purge: it reads only the rows past the retention, oldest first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {inbox} (processed_at, consumer_name)

-- index_outbox_status_created --
-- Outbox rows in a status other than pending, newest first, and the status filter's choices.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (status, created_at DESC, outbox_id DESC)

-- index_outbox_published --
-- Outbox rows published in the last 24 hours, per event type, and the outbox purge: it reads only rows published before the retention, oldest first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (published_at, event_type) WHERE published_at IS NOT NULL

-- index_outbox_attempts --
-- Pending outbox rows with many delivery attempts (likely poison events), most attempts first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (attempt_count DESC, created_at, outbox_id) WHERE status = 'pending'

-- index_inbox_consumer --
-- Inbox numbers per consumer: each consumer's oldest and newest row and its recent window.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {inbox} (consumer_name, processed_at)

-- index_keys_unleased_filters --
-- Stuck keys without a lease (locked_until NULL: stuck once claimed_at is older than the default lease), oldest claim first, carrying the columns the stuck filters and suggested outcomes test, so counting and breaking them down reads no table row (it replaces index_keys_unleased, which carried none: 10,000 table reads a view at 100M keys).
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (claimed_at) INCLUDE (idempotency_scope, idempotency_key, claimed_by, attempt_count, expires_at) WHERE status = 'processing' AND locked_until IS NULL

-- index_keys_held --
-- Keys held for review (needs_review): their list and the overview's count, without reading every processing key.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (locked_until NULLS FIRST, idempotency_scope, idempotency_key) WHERE status = 'processing' AND claimed_by = {review_holder}

-- index_outbox_poison --
-- Likely poison outbox rows (pending, 3 or more delivery attempts), oldest first: the poison list, one page at a time.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (created_at, outbox_id) WHERE status = 'pending' AND attempt_count >= 3

-- index_keys_due --
-- The keys purge: terminal keys in the order they expire, so a run reads only the keys that are due (without it every run walks the whole primary key).
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {keys} (expires_at, idempotency_scope, idempotency_key) WHERE {terminal_keys}

-- index_outbox_aggregate --
-- Search by a pasted aggregate id (an order's or invoice's id): its outbox rows, without reading the whole outbox.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name} ON {outbox} (aggregate_id)
