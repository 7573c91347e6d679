-- library_bench_spring_rows --
-- Spring Modulith v2 publications for the library benchmark: %(n)s rows published over the last 60 days, 98.5 % completed a second after publication, the rest published (0.5 %), processing (0.3 %), failed (0.3 %) or left from v1 (0.4 %: NULL status, half of them completed).
INSERT INTO {table} (id, listener_id, event_type, serialized_event, publication_date, completion_date, status,
                     completion_attempts)
SELECT gen_random_uuid(), 'com.example.Listener' || (i %% 20), 'com.example.Event' || (i %% 50),
       '{{"order":' || i || ',"lines":[1,2,3]}}', p,
       CASE WHEN k < 985 OR (k >= 996 AND k %% 2 = 0) THEN p + interval '1 second' END,
       CASE WHEN k < 985 THEN 'COMPLETED' WHEN k < 990 THEN 'PUBLISHED' WHEN k < 993 THEN 'PROCESSING'
            WHEN k < 996 THEN 'FAILED' END,
       CASE WHEN k < 996 THEN 1 END
FROM generate_series(%(first)s, %(first)s + %(n)s - 1) AS i,
     LATERAL (SELECT i %% 1000 AS k, now() - make_interval(secs => ((i::bigint * 7919) %% 5184000)::float8) AS p) s

-- library_bench_masstransit_rows --
-- MassTransit inbox states for the library benchmark: %(n)s messages received over the last 60 days, 99 % consumed and delivered a second later, 0.5 % consumed but not yet delivered, 0.5 % neither (a faulted consumer).
INSERT INTO {table} ("MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount", "Consumed", "Delivered",
                     "LastSequenceNumber")
SELECT gen_random_uuid(), ('00000000-0000-0000-0000-0000000000' || lpad((i %% 20)::text, 2, '0'))::uuid,
       gen_random_uuid(), r, 1 + (i %% 3), CASE WHEN k < 995 THEN r + interval '1 second' END,
       CASE WHEN k < 990 THEN r + interval '1 second' END, NULL
FROM generate_series(%(first)s, %(first)s + %(n)s - 1) AS i,
     LATERAL (SELECT i %% 1000 AS k, now() - make_interval(secs => ((i::bigint * 7919) %% 5184000)::float8) AS r) s

-- library_bench_analyze --
-- Fresh statistics for a library table after it was loaded or purged.
ANALYZE {table}

-- library_bench_count --
-- How many rows a library table holds (the benchmark's data check).
SELECT count(*) FROM {table}

-- library_bench_create_schema --
-- The library benchmark's schema for one library's tables.
CREATE SCHEMA IF NOT EXISTS {schema}

-- library_bench_drop_schema --
-- The library benchmark's schema, dropped to load its table again with another number of rows.
DROP SCHEMA {schema} CASCADE

-- library_bench_table_exists --
-- Whether the library benchmark's table is there already.
SELECT to_regclass(%(table)s) IS NOT NULL

-- library_bench_drop_index --
-- An index idemdash advises, dropped so the first phase measures the pages without it.
DROP INDEX IF EXISTS {index}

-- library_bench_forget_rollups --
-- The stored rollups, forgotten so the first phase counts every state live.
DELETE FROM idemdash.rollup
