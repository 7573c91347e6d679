-- list_server_databases --
-- Every database of the server one can connect to (not a template), by name: what a fleet's pattern is matched against.
SELECT datname
FROM pg_catalog.pg_database
WHERE datallowconn AND NOT datistemplate
ORDER BY datname
