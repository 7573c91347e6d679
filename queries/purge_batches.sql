-- purge_batch --
-- One purge batch: the next rows of {relation} that {purgeable} allows, after the cursor in the batch's order ({columns}: due order or the primary key), locked rows skipped, deleted; records progress.
-- The cursor (after_1 ...) is the last row of the previous batch, one value per column of the order: the scan starts
-- there and, in due order, stops where the due rows end. The last row taken comes back as the columns of the order.
WITH doomed AS (
    SELECT ctid AS row_id, {columns}
    FROM {relation}
    WHERE ({purgeable})
      AND (NOT %(has_cursor)s OR ({columns}) > ({cursor}))
    ORDER BY {columns}
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
{delete_doomed}
SELECT (SELECT count(*) FROM gone)::int AS rows, (SELECT count(*) FROM doomed)::int AS taken, last.*
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (SELECT {columns} FROM doomed ORDER BY ({columns}) DESC LIMIT 1) last ON true

-- count_purge_batch --
-- Dry-run chunk: how many rows the purge batch in the same order would delete, counted after the cursor without locking; records progress.
WITH chunk AS (
    SELECT {columns}
    FROM {relation}
    WHERE ({purgeable})
      AND (NOT %(has_cursor)s OR ({columns}) > ({cursor}))
    ORDER BY {columns}
    LIMIT %(limit)s
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken, last.*
FROM (SELECT count(*) FROM progress) p
LEFT JOIN LATERAL (SELECT {columns} FROM chunk ORDER BY ({columns}) DESC LIMIT 1) last ON true

-- explain_purge_batch --
-- The plan PostgreSQL would choose for one purge statement (does an index deliver the due rows in order?).
EXPLAIN (FORMAT JSON) {batch}

-- purge_batch_heap --
-- One purge batch in heap order: the rows {purgeable} allows on heap pages first_page up to (not including) next_page of {relation}, read by a TID Range Scan (each page once, in the order it lies on disk), locked rows skipped, deleted; records progress. For a table whose rows are mostly due.
-- after_1 is the next batch's first page, NULL past the run's last page (end_page, the table's size when the run began).
WITH doomed AS (
    SELECT ctid AS row_id
    FROM {relation}
    WHERE ctid >= %(first_tid)s::tid AND ctid < %(next_tid)s::tid
      AND ({purgeable})
    FOR UPDATE SKIP LOCKED
),
{delete_doomed}
SELECT (SELECT count(*) FROM gone)::int AS rows, (SELECT count(*) FROM doomed)::int AS taken,
       CASE WHEN %(next_page)s::bigint < %(end_page)s::bigint THEN %(next_page)s::bigint END AS after_1
FROM (SELECT count(*) FROM progress) p

-- count_purge_batch_heap --
-- Dry-run chunk in heap order: how many rows the heap-order batch over the same pages would delete, counted without locking; records progress.
WITH chunk AS (
    SELECT 1
    FROM {relation}
    WHERE ctid >= %(first_tid)s::tid AND ctid < %(next_tid)s::tid
      AND ({purgeable})
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM chunk)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
SELECT (SELECT count(*) FROM chunk)::int AS rows, (SELECT count(*) FROM chunk)::int AS taken,
       CASE WHEN %(next_page)s::bigint < %(end_page)s::bigint THEN %(next_page)s::bigint END AS after_1
FROM (SELECT count(*) FROM progress) p

-- heap_shape --
-- The heap pages of a table now and the rows a page holds on average (from the last ANALYZE or VACUUM; NULL when never counted).
SELECT (pg_relation_size(c.oid) / current_setting('block_size')::int)::bigint AS pages,
       CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages END::float8 AS rows_per_page,
       greatest(c.reltuples, 0)::float8 AS rows
FROM pg_class c
WHERE c.oid = %(relation)s::regclass

-- purgeable_rows --
-- The rows of {relation} a purge may delete; asked only through EXPLAIN, for the planner's estimate of their number.
SELECT 1 FROM {relation} WHERE ({purgeable})

-- delete_doomed --
-- Fragment: a batch's delete of the rows its doomed CTE locked, and its progress on the run's row (the CTEs gone and progress).
gone AS (
    -- by ctid, a Tid Scan of exactly the rows locked above (a join on the key may be planned as a hash join
    -- over the whole table); the row's own part of the predicate again (recheck), so nothing that stopped
    -- qualifying can go (an operator decides only on a stuck key, never on one a batch holds)
    DELETE FROM {relation}
    WHERE ctid = ANY (ARRAY(SELECT row_id FROM doomed))
      AND ({recheck})
    RETURNING 1
),
progress AS (
    UPDATE idemdash.purge_run
    SET batches = batches + 1, rows_deleted = rows_deleted + (SELECT count(*) FROM gone)
    WHERE run_id = %(run_id)s
    RETURNING run_id
)
