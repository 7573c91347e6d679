-- fix_add_column --
-- The statement that adds a missing column to an application table (shown, never run by idemdash).
ALTER TABLE {table} ADD COLUMN {column} {data_type}

-- fix_extend_key_retention --
-- The statement that keeps one scope's existing keys at least the replay horizon (shown, never run by idemdash).
UPDATE {keys}
SET expires_at = created_at + interval {horizon}
WHERE idempotency_scope = {scope}
  AND expires_at < created_at + interval {horizon}

-- fix_drop_index --
-- The statement that removes an invalid index left by a failed CREATE INDEX CONCURRENTLY (shown, never run).
DROP INDEX CONCURRENTLY IF EXISTS {index}

-- fix_set_not_null --
-- The statement that makes a column of a unique key NOT NULL (shown, never run by idemdash).
ALTER TABLE {table} ALTER COLUMN {column} SET NOT NULL

-- fix_count_nulls --
-- The query that counts the rows a SET NOT NULL would refuse (shown, never run by idemdash).
SELECT count(*) FROM {table} WHERE {column} IS NULL

-- fix_vacuum --
-- The statement that removes a table's dead tuples and refreshes its statistics now (shown, never run by idemdash).
VACUUM (ANALYZE, VERBOSE) {table}

-- fix_autovacuum_scale_factor --
-- The per-table setting that has autovacuum visit a hot table after a smaller share of dead rows (shown, never run).
ALTER TABLE {table} SET (autovacuum_vacuum_scale_factor = {scale_factor})

-- fix_cancel_backend --
-- The call that cancels a session's running query; the session stays (shown, never run by idemdash).
SELECT pg_cancel_backend({pid})

-- fix_terminate_backend --
-- The call that ends a session, rolling back its transaction and releasing its locks (shown, never run by idemdash).
SELECT pg_terminate_backend({pid})

-- fix_idle_in_transaction_timeout --
-- The role setting that has PostgreSQL end sessions left idle in a transaction (shown, never run by idemdash).
ALTER ROLE {role} SET idle_in_transaction_session_timeout = {timeout}

-- fix_grant_read_all_stats --
-- The grant that lets idemdash's role see other roles' sessions in pg_stat_activity (shown, never run by idemdash).
GRANT pg_read_all_stats TO {role}
