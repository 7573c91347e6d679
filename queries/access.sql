-- list_table_access --
-- The three configured application tables and idemdash's own: whether each exists and what the current role may do.
-- can_lock: SELECT ... FOR UPDATE (the purges' and the reclassifications' row locks) needs UPDATE on some column.
SELECT t.role, t.schema_name, t.table_name, current_user AS role_name,
       n.oid IS NOT NULL AS schema_present,
       coalesce(has_schema_privilege(n.oid, 'USAGE'), false) AS schema_usage,
       c.oid IS NOT NULL AS present,
       coalesce(has_table_privilege(c.oid, 'SELECT'), false) AS can_select,
       coalesce(has_table_privilege(c.oid, 'INSERT'), false) AS can_insert,
       coalesce(has_table_privilege(c.oid, 'UPDATE'), false) AS can_update,
       coalesce(has_table_privilege(c.oid, 'DELETE'), false) AS can_delete,
       coalesce(has_any_column_privilege(c.oid, 'UPDATE'), false) AS can_lock
FROM (VALUES (1, 'keys', %(schema)s::text, %(keys)s::text),
             (2, 'inbox', %(schema)s::text, %(inbox)s::text),
             (3, 'outbox', %(schema)s::text, %(outbox)s::text)) AS t(n, role, schema_name, table_name)
LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = t.schema_name
LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.table_name
                                AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
UNION ALL
SELECT 'idemdash', n.nspname, c.relname, current_user, true,
       has_schema_privilege(n.oid, 'USAGE'), true,
       has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'),
       has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE'),
       has_any_column_privilege(c.oid, 'UPDATE')
FROM pg_catalog.pg_namespace n
JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relkind IN ('r', 'p')
WHERE n.nspname = 'idemdash'

-- get_database_access --
-- The current role, whether idemdash's schema exists, and whether this role may use it or create it (`idemdash migrate`).
SELECT current_user AS role_name, current_database() AS database_name,
       n.oid IS NOT NULL AS idemdash_schema_present,
       coalesce(has_schema_privilege(n.oid, 'USAGE'), false) AS idemdash_schema_usage,
       coalesce(pg_catalog.pg_get_userbyid(n.nspowner) = current_user, false) AS owns_idemdash_schema,
       has_database_privilege(current_database(), 'CREATE') AS can_create_schema
FROM (SELECT 1) AS one
LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'idemdash'

-- fix_grant_schema_usage --
-- The grant that lets a role use a schema's objects (shown, never run by idemdash).
GRANT USAGE ON SCHEMA {schema} TO {role}

-- fix_grant_on_table --
-- The grant of the privileges idemdash lacks on one table (shown, never run by idemdash).
GRANT {privileges} ON {table} TO {role}

-- fix_grant_idemdash_tables --
-- The grants that let a role use idemdash's own schema: read and write its tables (shown, never run by idemdash).
GRANT USAGE ON SCHEMA idemdash TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA idemdash TO {role}
