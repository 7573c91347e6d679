-- What /metrics serves for the reference tables, recorded by the snapshot job so that a scrape reads one row instead of
-- counting the tables (at 100M keys a scrape's live counts took 330-735 ms): the keys held for review, every failed key
-- (the profile's failed state), the likely poison outbox rows and the age of their oldest, and the stuck keys per
-- scope. NULL in snapshots taken before this migration: /metrics counts live until the job has recorded one.
ALTER TABLE idemdash.metric_snapshot
    ADD COLUMN needs_review_keys bigint,
    ADD COLUMN failed_keys bigint,
    ADD COLUMN outbox_poison bigint,
    ADD COLUMN outbox_poison_oldest_seconds double precision,
    ADD COLUMN stuck_by_scope jsonb;
