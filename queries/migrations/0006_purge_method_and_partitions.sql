-- Purges that cost what is due (issue 13). Each run says how its batches found their rows ('due_index': an
-- index of due rows in the order they became due; 'primary_key': a walk of the whole primary key, when no such
-- index exists) and how many partitions it dropped whole. Every partition a run dropped, would drop (dry run),
-- detached or kept has a row of its own, so the history says "partition dropped" with its rows, and a run that
-- died between detaching a partition and dropping it is finished by the next one.
ALTER TABLE idemdash.purge_run ADD COLUMN method text;
ALTER TABLE idemdash.purge_run ADD COLUMN partitions_dropped integer NOT NULL DEFAULT 0;

CREATE TABLE idemdash.purge_partition (
    run_id bigint NOT NULL REFERENCES idemdash.purge_run (run_id) ON DELETE CASCADE,
    table_name text NOT NULL,            -- the purge's table: keys, inbox or outbox
    partition_schema text NOT NULL,
    partition_name text NOT NULL,
    parent_schema text NOT NULL,
    parent_name text NOT NULL,
    bound_from timestamptz,              -- NULL: MINVALUE
    bound_to timestamptz NOT NULL,
    rows bigint,                         -- rows it held when it was checked (dropped: the rows that went)
    action text NOT NULL CHECK (action IN ('would_drop', 'detached', 'dropped', 'kept', 'attached_again')),
    detail text,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, partition_schema, partition_name)
);
-- a detached partition whose run died before dropping it is found by the next run of its table
CREATE INDEX purge_partition_detached_idx ON idemdash.purge_partition (table_name) WHERE action = 'detached';
