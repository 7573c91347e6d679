-- list_catalog_columns --
-- Every column of every table in the database's own schemas (schema, table, column, type without its modifier), what `idemdash detect` matches against the table-shape profiles.
SELECT n.nspname AS schema_name, c.relname AS table_name, a.attname AS column_name,
       CASE WHEN t.typtype = 'e' THEN 'USER-DEFINED' ELSE format_type(a.atttypid, NULL) END AS data_type
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
WHERE c.relkind IN ('r', 'p')
  AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'idemdash')
  AND n.nspname NOT LIKE 'pg\_toast%%' AND n.nspname NOT LIKE 'pg\_temp\_%%'
ORDER BY n.nspname, c.relname, a.attnum

-- sample_newest_number --
-- The largest value of a numeric column ({column} of {table}) among the first 1,000 rows read, as float8 (NULL when none has one): what a custom shape's epoch time column holds (milliseconds or seconds), at a bounded cost whatever the table's size and indexes.
SELECT max(sampled)::float8 AS newest FROM (SELECT {column} AS sampled FROM {table} LIMIT 1000) AS sample
