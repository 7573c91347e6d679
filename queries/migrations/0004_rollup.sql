-- Precomputed aggregates: what a page shows when computing it live takes longer than a page may (suppression
-- over 7 days, the attempt histogram, hotspots by scope and worker, inbox volume per consumer at 10M rows).
-- The scheduler's rollup job rewrites one row per aggregate and variant; a page uses the row only while it is
-- fresh and only when computing live was measured to be slow, and says when it was computed.
CREATE TABLE idemdash.rollup (
    name text NOT NULL,                  -- which aggregate, e.g. 'suppression'
    variant text NOT NULL DEFAULT '',    -- its parameter, e.g. '24h' or a hotspot threshold
    computed_at timestamptz NOT NULL,    -- the database clock when the computation started
    duration_ms double precision NOT NULL,  -- how long computing it took (live computation would take as long)
    payload jsonb NOT NULL,
    PRIMARY KEY (name, variant)
);
