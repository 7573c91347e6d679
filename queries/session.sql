-- set_read_only --
-- Make the current transaction READ ONLY (page and API reads).
SET TRANSACTION READ ONLY

-- set_serial --
-- No parallel workers for the rest of the current transaction: a background job's counts (the rollups, the snapshot) run on one core, so that on a small server they never take every core from the pages and the application.
SELECT set_config('max_parallel_workers_per_gather', '0', true)

-- set_statement_timeout --
-- Statement timeout for the rest of the current transaction only.
SELECT set_config('statement_timeout', %(ms)s, true)

-- get_statement_timeout --
-- The statement timeout in force now, as set_statement_timeout takes it back.
SELECT current_setting('statement_timeout') AS ms

-- set_lock_timeout --
-- Lock timeout for the rest of the current transaction only.
SELECT set_config('lock_timeout', %(ms)s, true)

-- get_database_now --
-- The database's clock (transaction start time).
SELECT now() AS now
