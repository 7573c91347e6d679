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

-- library_bench_dbos_rows --
-- DBOS workflows for the library benchmark: %(n)s workflows started over the last 60 days by executors vm-1 and vm-2 of version v2 (the latest), 98.5 % SUCCESS a second later, 0.4 % ERROR, 0.2 % CANCELLED, 0.1 % MAX_RECOVERY_ATTEMPTS_EXCEEDED, 0.3 % PENDING (half of version v1, which no launch of v2 recovers, half of executor vm-gone), 0.3 % ENQUEUED, 0.2 % DELAYED; the two versions in application_versions.
WITH versions AS (
    INSERT INTO {versions} (version_id, version_name, version_timestamp, created_at)
    VALUES ('ver-1', 'v1', ((extract(epoch FROM now()) - 90 * 86400) * 1000)::bigint,
            ((extract(epoch FROM now()) - 90 * 86400) * 1000)::bigint),
           ('ver-2', 'v2', ((extract(epoch FROM now()) - 61 * 86400) * 1000)::bigint,
            ((extract(epoch FROM now()) - 61 * 86400) * 1000)::bigint)
    ON CONFLICT DO NOTHING
)
INSERT INTO {table} (workflow_uuid, status, name, executor_id, application_version, queue_name, recovery_attempts,
                     created_at, updated_at, started_at_epoch_ms, completed_at, error)
SELECT 'wf-' || i, s.status, (ARRAY['checkout', 'refund', 'send_invoice'])[1 + i %% 3],
       CASE WHEN s.status IN ('ENQUEUED', 'DELAYED') THEN NULL WHEN s.status = 'PENDING' AND i %% 2 = 0 THEN 'vm-gone'
            ELSE 'vm-' || (1 + i %% 2) END,
       CASE WHEN s.status = 'PENDING' AND i %% 2 = 1 THEN 'v1' ELSE 'v2' END,
       CASE WHEN s.status IN ('ENQUEUED', 'DELAYED') THEN 'reports' END,
       CASE WHEN s.status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' THEN 100 ELSE 0 END,
       s.at, s.at + 1000, s.at,
       CASE WHEN s.status IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED') THEN s.at + 1000 END,
       CASE WHEN s.status = 'ERROR' THEN 'PaymentDeclined: card expired' END
FROM generate_series(%(first)s, %(first)s + %(n)s - 1) AS i,
     LATERAL (SELECT CASE WHEN i %% 1000 < 985 THEN 'SUCCESS' WHEN i %% 1000 < 989 THEN 'ERROR'
                          WHEN i %% 1000 < 991 THEN 'CANCELLED' WHEN i %% 1000 < 992 THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'
                          WHEN i %% 1000 < 995 THEN 'PENDING' WHEN i %% 1000 < 998 THEN 'ENQUEUED' ELSE 'DELAYED' END
                     AS status,
                     ((extract(epoch FROM now()) - ((i::bigint * 7919) %% 5184000)) * 1000)::bigint AS at) s
