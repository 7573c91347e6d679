-- list_app_indexes --
-- Every index on the configured application tables, valid or not (a failed CREATE INDEX CONCURRENTLY leaves one invalid).
SELECT t.relname AS table_name, ic.relname AS index_name, i.indisvalid AS valid
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class t ON t.oid = i.indrelid
JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = %(schema)s AND t.relname = ANY(%(names)s::text[])
ORDER BY t.relname, ic.relname

-- set_index_build_session --
-- An index build may take minutes on a big table: no statement timeout for this session (the CLI's own).
SET statement_timeout = 0

-- drop_index_concurrently --
-- Remove one index without blocking writes (an invalid one before it is built again).
DROP INDEX CONCURRENTLY IF EXISTS {index}

-- get_table_exists --
-- Whether a (schema-qualified, quoted) table name exists.
SELECT to_regclass(%(table)s) IS NOT NULL AS present
