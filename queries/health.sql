-- get_migration_table --
-- Whether idemdash's migration bookkeeping table exists (it does once `idemdash migrate` has run).
SELECT to_regclass('idemdash.schema_migration') IS NOT NULL AS present

-- list_table_columns --
-- The configured application tables that exist and their columns (a table without columns has one NULL row).
SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS data_type
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = %(schema)s
  AND c.relname = ANY(%(names)s::text[])
  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
ORDER BY c.relname, a.attnum

-- list_table_indexes --
-- Every index on the configured application tables, with whether it is valid (a failed CONCURRENTLY build is not).
SELECT t.relname AS table_name, ic.relname AS index_name, i.indisvalid AS valid
FROM pg_catalog.pg_class t
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
JOIN pg_catalog.pg_index i ON i.indrelid = t.oid
JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
WHERE n.nspname = %(schema)s
  AND t.relname = ANY(%(names)s::text[])
ORDER BY t.relname, ic.relname

-- list_key_retention_by_scope --
-- Shortest key retention (expires_at - created_at) per scope over the most recently created keys (a bounded sample).
SELECT idempotency_scope AS scope,
       extract(epoch FROM min(expires_at - created_at))::double precision AS min_retention_seconds,
       count(*)::integer AS sampled
FROM (
    SELECT idempotency_scope, created_at, expires_at
    FROM {keys}
    ORDER BY created_at DESC
    LIMIT %(sample)s
) recent
WHERE expires_at IS NOT NULL AND created_at IS NOT NULL
GROUP BY idempotency_scope
ORDER BY min_retention_seconds, idempotency_scope
LIMIT %(limit)s

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
