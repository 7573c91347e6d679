-- migration_lock --
-- Serialise migrators across processes; released when the transaction ends (docs/concepts.md, Migrations serialised under an advisory lock).
SELECT pg_advisory_xact_lock(hashtextextended('idemdash.migrate', 0))

-- create_migration_table --
-- Bookkeeping for idemdash's own schema; created before any migration runs. The schema only when it is missing:
-- CREATE SCHEMA IF NOT EXISTS asks for CREATE on the database even when the schema exists.
DO $$ BEGIN
    IF to_regnamespace('idemdash') IS NULL THEN
        CREATE SCHEMA idemdash;
    END IF;
END $$;
CREATE TABLE IF NOT EXISTS idemdash.schema_migration (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- list_applied_migrations --
-- Migrations already applied, oldest first.
SELECT version, name, checksum, applied_at FROM idemdash.schema_migration ORDER BY version

-- record_migration --
-- Mark one migration applied, in the same transaction as its statements.
INSERT INTO idemdash.schema_migration (version, name, checksum) VALUES (%(version)s, %(name)s, %(checksum)s)
