-- list_rollups --
-- Stored rollups by name and variant (one page's panels at once), with their age by the database clock.
SELECT r.name, r.variant, r.computed_at, r.duration_ms, r.payload,
       extract(epoch FROM now() - r.computed_at)::double precision AS age_seconds
FROM idemdash.rollup r
JOIN unnest(%(names)s::text[], %(variants)s::text[]) AS wanted (name, variant)
  ON wanted.name = r.name AND wanted.variant = r.variant

-- list_rollup_ages --
-- When each stored rollup was computed (the job recomputes those older than their interval).
SELECT name, variant, computed_at, duration_ms,
       extract(epoch FROM now() - computed_at)::double precision AS age_seconds
FROM idemdash.rollup

-- try_rollup_lock --
-- One rollup writer at a time across scheduler replicas (session lock, released by release_rollup_lock).
SELECT pg_try_advisory_lock(hashtextextended('idemdash.rollup', 0)) AS locked

-- release_rollup_lock --
-- Give the rollup writer's lock back.
SELECT pg_advisory_unlock(hashtextextended('idemdash.rollup', 0)) AS released

-- get_clock --
-- The database clock at the start of a rollup's computation (stored as its computed_at).
SELECT now() AS now

-- upsert_rollup --
-- Store one rollup, replacing the previous value of the same name and variant.
INSERT INTO idemdash.rollup (name, variant, computed_at, duration_ms, payload)
VALUES (%(name)s, %(variant)s, %(computed_at)s, %(duration_ms)s, %(payload)s)
ON CONFLICT (name, variant) DO UPDATE
SET computed_at = EXCLUDED.computed_at, duration_ms = EXCLUDED.duration_ms, payload = EXCLUDED.payload
