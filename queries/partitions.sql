-- list_table_partitions --
-- The direct partitions of the named application tables (none: not partitioned), with the parent's partition key and each partition's range on it as timestamptz when the key is one timestamptz column.
SELECT pn.nspname AS parent_schema, p.relname AS parent_name,
       cn.nspname AS partition_schema, c.relname AS partition_name,
       pt.partstrat = 'r' AND pt.partnatts = 1 AND a.attname IS NOT NULL AS single_column_range,
       a.attname AS key_column,
       format_type(a.atttypid, a.atttypmod) AS key_type,
       pg_get_expr(c.relpartbound, c.oid) AS bound,
       -- PostgreSQL 14+ only; to_jsonb keeps this statement valid on older servers (false there)
       coalesce((to_jsonb(i) ->> 'inhdetachpending')::boolean, false) AS detach_pending,
       c.relkind = 'p' AS subpartitioned,
       -- detaching needs the parent's owner, dropping the partition's: the role or a role it inherits from
       pg_catalog.pg_has_role(p.relowner, 'USAGE') AND pg_catalog.pg_has_role(c.relowner, 'USAGE') AS owned,
       -- purge batches address each partition directly: grants on the parent do not reach it
       pg_catalog.has_table_privilege(c.oid, 'SELECT') AND pg_catalog.has_table_privilege(c.oid, 'UPDATE')
           AND pg_catalog.has_table_privilege(c.oid, 'DELETE') AS writable,
       CASE WHEN format_type(a.atttypid, a.atttypmod) = 'timestamp with time zone' THEN
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \(''([^'']*)''\)')::timestamptz END AS bound_from,
       CASE WHEN format_type(a.atttypid, a.atttypmod) = 'timestamp with time zone' THEN
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']*)''\)')::timestamptz END AS bound_to
FROM pg_catalog.pg_class p
JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace
JOIN pg_catalog.pg_partitioned_table pt ON pt.partrelid = p.oid
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = p.oid AND a.attnum = pt.partattrs[0] AND pt.partattrs[0] <> 0
JOIN pg_catalog.pg_inherits i ON i.inhparent = p.oid
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
JOIN pg_catalog.pg_namespace cn ON cn.oid = c.relnamespace
WHERE pn.nspname = %(schema)s AND p.relname = ANY(%(names)s::text[])
ORDER BY p.relname, bound_to NULLS LAST, cn.nspname, c.relname

-- list_leaf_partitions --
-- Every leaf partition under one partitioned table (sub-partitions included), the tables purge batches run on.
SELECT n.nspname AS partition_schema, c.relname AS partition_name
FROM pg_catalog.pg_partition_tree(to_regclass(%(parent)s)) t
JOIN pg_catalog.pg_class c ON c.oid = t.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE t.isleaf
ORDER BY n.nspname, c.relname

-- get_purge_cutoffs --
-- The database's clock and each table's cutoff: keys are due before now(), inbox and outbox rows before now() minus their retention.
SELECT now() AS now,
       now() AS keys,
       now() - make_interval(days => %(inbox_days)s) AS inbox,
       now() - make_interval(days => %(outbox_days)s) AS outbox

-- get_partition_rows --
-- Rows of one partition, and how many of them a purge may not delete (live: the table's eligibility, the purgeable_<table> fragment, is not true of them).
SELECT count(*) AS rows,
       count(*) FILTER (WHERE ({purgeable}) IS NOT TRUE) AS live
FROM {partition}

-- set_partition_timeouts --
-- SET LOCAL statement_timeout and lock_timeout for one partition's detach-and-drop transaction.
SELECT set_config('statement_timeout', %(statement_ms)s, true), set_config('lock_timeout', %(lock_ms)s, true)

-- set_detach_timeouts --
-- Session statement_timeout and lock_timeout for DETACH ... CONCURRENTLY (it cannot run in a transaction block); waiting for older transactions blocks no one.
SELECT set_config('statement_timeout', %(statement_ms)s, false), set_config('lock_timeout', %(lock_ms)s, false)

-- detach_partition --
-- Detach one partition inside the transaction that checks and drops it (ACCESS EXCLUSIVE on the parent until commit).
ALTER TABLE {parent} DETACH PARTITION {partition}

-- detach_partition_concurrently --
-- Detach one partition without blocking the application's reads and writes (PostgreSQL 14+, no default partition; not in a transaction block).
ALTER TABLE {parent} DETACH PARTITION {partition} CONCURRENTLY

-- finalize_detach_partition --
-- Finish a DETACH ... CONCURRENTLY that was cancelled or interrupted (the partition is "detach pending").
ALTER TABLE {parent} DETACH PARTITION {partition} FINALIZE

-- lock_detached_partition --
-- Take a detached partition for ourselves before its last check and the drop: nothing can change it in between.
LOCK TABLE {partition} IN ACCESS EXCLUSIVE MODE

-- attach_partition --
-- Put back a detached partition that turned out to hold a live row (its CHECK constraint from the detach spares the scan).
ALTER TABLE {parent} ATTACH PARTITION {partition} FOR VALUES FROM ({bound_from}) TO ({bound_to})

-- drop_partition --
-- Drop a detached partition whose every row was eligible, in the transaction that checked it.
DROP TABLE {partition}

-- get_relation_state --
-- Whether a table exists, and whether it is (still or again) a partition: what a detached partition left by a dead run is now.
SELECT c.oid IS NOT NULL AS present, coalesce(c.relispartition, false) AS is_partition,
       coalesce((SELECT (to_jsonb(i) ->> 'inhdetachpending')::boolean FROM pg_catalog.pg_inherits i
                 WHERE i.inhrelid = c.oid), false) AS detach_pending
FROM (SELECT to_regclass(%(relation)s) AS oid) r
LEFT JOIN pg_catalog.pg_class c ON c.oid = r.oid

-- insert_purge_partition --
-- Record what a run did with one partition (dropped, would_drop, detached, kept); a drop also counts into the run's totals.
WITH part AS (
    INSERT INTO idemdash.purge_partition (run_id, table_name, partition_schema, partition_name, parent_schema,
                                          parent_name, bound_from, bound_to, rows, action, detail)
    VALUES (%(run_id)s, %(table)s, %(partition_schema)s, %(partition_name)s, %(parent_schema)s, %(parent_name)s,
            %(bound_from)s, %(bound_to)s, %(rows)s, %(action)s, %(detail)s)
    ON CONFLICT (run_id, partition_schema, partition_name)
    DO UPDATE SET rows = EXCLUDED.rows, action = EXCLUDED.action, detail = EXCLUDED.detail, at = clock_timestamp()
    RETURNING action, rows
)
UPDATE idemdash.purge_run r
SET partitions_dropped = r.partitions_dropped + (SELECT count(*) FROM part WHERE action IN ('dropped', 'would_drop')),
    rows_deleted = r.rows_deleted + coalesce((SELECT sum(rows) FROM part WHERE action IN ('dropped', 'would_drop')), 0)
WHERE r.run_id = %(run_id)s

-- settle_detached_partition --
-- Close the 'detached' record of a partition a dead run left: it was dropped, attached again, or found gone.
UPDATE idemdash.purge_partition
SET action = %(action)s, detail = %(detail)s, at = clock_timestamp()
WHERE run_id = %(run_id)s AND partition_schema = %(partition_schema)s AND partition_name = %(partition_name)s
  AND action = 'detached'

-- list_detached_partitions --
-- Partitions of one table that a run detached and did not drop or attach again (it died in between).
SELECT run_id, table_name, partition_schema, partition_name, parent_schema, parent_name, bound_from, bound_to,
       rows, action, detail
FROM idemdash.purge_partition
WHERE table_name = %(table)s AND action = 'detached'
ORDER BY run_id, partition_name

-- list_run_partitions --
-- What the given runs did with partitions (for the history on /purges), in the order they happened.
SELECT run_id, table_name, partition_schema, partition_name, parent_schema, parent_name, bound_from, bound_to,
       rows, action, detail
FROM idemdash.purge_partition
WHERE run_id = ANY(%(run_ids)s::bigint[])
ORDER BY run_id, at, partition_name
