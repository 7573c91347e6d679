-- database_exists --
-- Whether a database of this name exists on the server (demo bootstrap).
SELECT 1 FROM pg_database WHERE datname = %(name)s

-- create_database --
-- Create a database; the name is an Identifier filled in by the caller.
CREATE DATABASE {database}

-- has_any_key --
-- Whether the idempotency-key table has any row (the demo backfills only an empty one).
SELECT EXISTS (SELECT 1 FROM {keys}) AS has_any
