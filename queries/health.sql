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

-- list_nullable_unique_columns --
-- Nullable plain columns in a primary key, unique constraint or unique index (partial ones too) of the configured tables.
SELECT t.relname AS table_name,
       ic.relname AS index_name,
       con.conname AS constraint_name,
       a.attname AS column_name,
       -- PostgreSQL 15+ only; to_jsonb keeps this statement valid on older servers (NULL there)
       coalesce((to_jsonb(i) ->> 'indnullsnotdistinct')::boolean, false) AS nulls_not_distinct,
       i.indpred IS NOT NULL AS partial
FROM pg_catalog.pg_class t
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
JOIN pg_catalog.pg_index i ON i.indrelid = t.oid AND i.indisunique
JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
LEFT JOIN pg_catalog.pg_constraint con ON con.conindid = i.indexrelid AND con.contype IN ('p', 'u')
-- key columns only (INCLUDE columns take no part in uniqueness); an expression has attnum 0 and matches nothing
JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid
 AND a.attnum = ANY((i.indkey::smallint[])[0:i.indnkeyatts - 1])
 AND NOT a.attisdropped
 AND NOT a.attnotnull
WHERE n.nspname = %(schema)s
  AND t.relname = ANY(%(names)s::text[])
ORDER BY t.relname, ic.relname, array_position(i.indkey::smallint[], a.attnum)

-- list_table_vacuum_stats --
-- Live and dead tuples, changes and the last (auto)vacuum and (auto)analyze of the configured tables.
SELECT s.relname AS table_name,
       s.n_live_tup AS live_tuples,
       s.n_dead_tup AS dead_tuples,
       (s.n_tup_ins + s.n_tup_upd + s.n_tup_del) AS changes,
       s.n_mod_since_analyze AS changes_since_analyze,
       s.last_vacuum,
       s.last_autovacuum,
       s.last_analyze,
       s.last_autoanalyze,
       coalesce(array_to_string(c.reloptions, ', '), '') AS options
FROM pg_catalog.pg_stat_user_tables s
JOIN pg_catalog.pg_class c ON c.oid = s.relid
WHERE s.schemaname = %(schema)s
  AND s.relname = ANY(%(names)s::text[])
ORDER BY s.relname

-- list_long_sessions --
-- Client sessions of this database (but the caller's) running one query, or idle in a transaction, longer than given.
SELECT pid,
       usename AS user_name,
       application_name,
       host(client_addr) AS client_addr,
       state,
       extract(epoch FROM now() - query_start)::double precision AS query_seconds,
       extract(epoch FROM now() - state_change)::double precision AS state_seconds,
       extract(epoch FROM now() - xact_start)::double precision AS transaction_seconds,
       left(query, %(query_chars)s) AS query
FROM pg_catalog.pg_stat_activity
WHERE datname = current_database()
  AND pid <> pg_backend_pid()
  AND backend_type = 'client backend'
  AND ((state = 'active' AND query_start < now() - make_interval(secs => %(active_seconds)s))
       OR (state IN ('idle in transaction', 'idle in transaction (aborted)')
           AND state_change < now() - make_interval(secs => %(idle_seconds)s)))
ORDER BY coalesce(xact_start, query_start), pid
LIMIT %(limit)s

-- count_sessions --
-- Client sessions of this database (but the caller's), how many of them this role may not inspect, and the role.
SELECT count(*) FILTER (WHERE backend_type = 'client backend')::integer AS sessions,
       -- another role's session shows neither its state nor its backend type without pg_read_all_stats
       count(*) FILTER (WHERE query = '<insufficient privilege>')::integer AS hidden,
       current_user::text AS role
FROM pg_catalog.pg_stat_activity
WHERE datname = current_database()
  AND pid <> pg_backend_pid()

-- list_advisory_locks --
-- Advisory locks in this database, waiting first, with their session and idemdash's own lock names recognised.
WITH own AS (
    SELECT name, label, hashtextextended(name, 0) AS lock_key
    FROM unnest(%(own_names)s::text[], %(own_labels)s::text[]) AS o(name, label)
), locks AS (
    SELECT l.pid, l.granted, l.mode,
           l.objsubid = 2 AS two_keys,
           -- objsubid 1: pg_advisory_lock(bigint), the key's high and low halves; 2: pg_advisory_lock(int4, int4)
           (l.classid::bigint << 32) | l.objid::bigint AS lock_key,
           ((l.classid::bigint << 32) >> 32)::integer AS key1,
           ((l.objid::bigint << 32) >> 32)::integer AS key2
    FROM pg_catalog.pg_locks l
    WHERE l.locktype = 'advisory'
      AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
)
SELECT locks.pid, locks.granted, locks.mode, locks.two_keys, locks.lock_key, locks.key1, locks.key2,
       own.label AS idemdash_lock,
       a.usename AS user_name,
       a.application_name,
       host(a.client_addr) AS client_addr,
       a.state,
       coalesce(a.query = '<insufficient privilege>', false) AS hidden,
       extract(epoch FROM now() - a.backend_start)::double precision AS session_seconds,
       extract(epoch FROM now() - a.xact_start)::double precision AS transaction_seconds,
       extract(epoch FROM now() - a.state_change)::double precision AS state_seconds,
       CASE WHEN NOT locks.granted THEN pg_catalog.pg_blocking_pids(locks.pid) END AS blocked_by,
       count(*) OVER ()::integer AS total
FROM locks
LEFT JOIN own ON NOT locks.two_keys AND own.lock_key = locks.lock_key
LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = locks.pid
ORDER BY locks.granted, a.xact_start NULLS LAST, locks.pid, locks.lock_key
LIMIT %(limit)s

-- list_advisory_lock_keys --
-- Processing keys whose common lock-key derivations equal a given advisory lock, else claimed by its holder's application_name.
WITH locks AS (
    SELECT * FROM unnest(%(lock_keys)s::bigint[], %(two_keys)s::boolean[], %(holders)s::text[])
        AS l(lock_key, two_keys, holder)
), candidates AS (
    -- bounded, through the partial index on processing keys (the most recently leased first)
    SELECT idempotency_scope, idempotency_key, claimed_by
    FROM {keys}
    WHERE status = 'processing'
    ORDER BY locked_until DESC NULLS LAST
    LIMIT %(candidates)s
), derived AS (
    SELECT c.idempotency_scope, c.idempotency_key, c.claimed_by, d.derivation, d.two_keys, d.lock_key
    FROM candidates c
    CROSS JOIN LATERAL (VALUES
        ('hashtextextended(idempotency_scope || '':'' || idempotency_key, 0)', false,
         hashtextextended(c.idempotency_scope || ':' || c.idempotency_key, 0)),
        ('hashtextextended(idempotency_key, 0)', false, hashtextextended(c.idempotency_key, 0)),
        ('hashtext(idempotency_scope || '':'' || idempotency_key)', false,
         hashtext(c.idempotency_scope || ':' || c.idempotency_key)::bigint),
        ('hashtext(idempotency_key)', false, hashtext(c.idempotency_key)::bigint),
        ('hashtext(idempotency_scope), hashtext(idempotency_key)', true,
         (hashtext(c.idempotency_scope)::bigint << 32) | (hashtext(c.idempotency_key)::bigint & 4294967295))
    ) AS d(derivation, two_keys, lock_key)
), matched AS (
    SELECT l.lock_key, l.two_keys, d.idempotency_scope, d.idempotency_key, d.claimed_by, d.derivation,
           d.claimed_by IS NOT DISTINCT FROM l.holder AS same_holder
    FROM locks l
    JOIN derived d ON d.lock_key = l.lock_key AND d.two_keys = l.two_keys
), by_holder AS (
    SELECT l.lock_key, l.two_keys, c.idempotency_scope, c.idempotency_key, c.claimed_by,
           %(by_holder)s::text AS derivation, true AS same_holder
    FROM locks l
    JOIN candidates c ON c.claimed_by = l.holder
    WHERE l.holder <> ''
      AND NOT EXISTS (SELECT 1 FROM matched m WHERE m.lock_key = l.lock_key AND m.two_keys = l.two_keys)
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY lock_key, two_keys ORDER BY idempotency_scope, idempotency_key) AS n
    FROM (SELECT * FROM matched UNION ALL SELECT * FROM by_holder) found
)
SELECT lock_key, two_keys, idempotency_scope AS scope, idempotency_key AS key, claimed_by, derivation, same_holder
FROM ranked
WHERE n <= %(per_lock)s
ORDER BY lock_key, two_keys, n
