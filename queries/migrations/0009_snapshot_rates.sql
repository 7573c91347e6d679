-- Rates beside the levels: each snapshot records what the keys table says happened since the previous snapshot
-- (keys claimed, completed and failed in that interval, operators' decisions left out) and how long that interval
-- was, so a chart can draw claims, completions and failures per minute. NULL in snapshots taken before this
-- migration: those intervals were not counted, and the charts leave them out instead of drawing zero.
ALTER TABLE idemdash.metric_snapshot
    ADD COLUMN interval_seconds double precision,
    ADD COLUMN claims bigint,
    ADD COLUMN completions bigint,
    ADD COLUMN failures bigint;
